import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmtpTap, startSmtpTap } from '../../chaos/smtpTap.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { eventually } from '../support/eventually.js';

/**
 * The tap records what the checker explains duplicates from: per transaction the message id, when
 * the final dot went, what the relay answered and when, what the client did next, and the close.
 */
describe('the SMTP tap', () => {
  let smtp: TestSmtpServer;
  let tap: SmtpTap;
  const moments: string[] = [];

  beforeAll(async () => {
    smtp = await startSmtpServer();
    tap = await startSmtpTap({
      targetHost: smtp.host,
      targetPort: smtp.port,
      onMoment: (moment) => moments.push(moment),
    });
  });
  afterAll(async () => {
    await tap.close();
    await smtp.close();
  });

  const send = (id: string, socketTimeout = 5_000) =>
    createTransport({
      host: tap.host,
      port: tap.port,
      secure: false,
      ignoreTLS: true,
      socketTimeout,
    }).sendMail({
      from: 'a@example.com',
      to: 'b@example.com',
      subject: id,
      text: `body of ${id}\r\n.\r\nnot the end`,
      messageId: `<${id}@postdate.local>`,
      headers: { 'X-Postdate-Id': id },
    });

  it('records a 250 the client heard, a slow 250, a drop after the dot and a refusal at RCPT, each with the relay’s label', async () => {
    smtp.script(
      { label: 'accept' },
      { label: 'slow', afterData: { acceptAfterMs: 300 } },
      { label: 'data-drop', afterData: 'drop' },
      { label: 'rcpt-550', rcptTo: { code: 550, message: '5.1.1 User unknown' } },
    );
    await send('T1');
    await send('T2');
    await expect(send('T3')).rejects.toThrow();
    await expect(send('T4')).rejects.toThrow();
    // Each client closes its connection after its answer (QUIT, or at once after a failure): the tap
    // records the close when it reads it, later on a busy machine (a fixed 200 ms lost to a stall).
    await eventually(
      'every connection closed at the tap',
      () =>
        tap.transactions().length === 4 &&
        tap.transactions().every((transaction) => transaction.closedAtMs !== null),
      { withinMs: 10_000 },
    );

    const seen = tap.transactions();
    expect(seen.map((transaction) => transaction.postdateId)).toEqual(['T1', 'T2', 'T3', null]);
    const [accepted, slow, dropped, refused] = seen;
    expect(accepted?.reply).toMatchObject({ code: 250, delivered: true });
    expect(accepted?.messageId).toBe('<T1@postdate.local>');
    const slowReply = (slow?.reply?.atMs ?? 0) - (slow?.finalDotAtMs ?? 0);
    expect(slowReply).toBeGreaterThanOrEqual(290);
    expect(dropped?.reply).toBeNull();
    expect(dropped?.closedBy).toBe('server');
    expect(dropped?.clientCommandAfterDotAtMs).toBeNull();
    expect(refused?.finalDotAtMs).toBeNull();
    // RCPT TO replies per transaction: a refusal at RCPT carries no body, only the address.
    expect(accepted?.recipients).toEqual([{ address: 'b@example.com', code: 250, atMs: expect.any(Number) }]);
    expect(refused?.recipients).toEqual([{ address: 'b@example.com', code: 550, atMs: expect.any(Number) }]);
    expect(new Set(seen.map((transaction) => transaction.clientPort)).size).toBe(4);
    for (const transaction of seen) expect(transaction.closedAtMs).not.toBeNull();
    expect(moments.filter((moment) => moment === 'end-of-data')).toHaveLength(3);

    // The relay's side of the same transactions: joined by the tap's upstream port.
    const labels = smtp.transactionLog.map((record) => [record.label, record.received?.outcome ?? null]);
    expect(labels).toEqual([
      ['accept', 'accepted'],
      ['slow', 'accepted'],
      ['data-drop', 'dropped'],
      ['rcpt-550', null],
    ]);
    expect(smtp.transactionLog.map((record) => record.remotePort)).toEqual(
      seen.map((transaction) => transaction.upstreamPort),
    );
  });
});
