import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainCopy } from '../../chaos/checker.js';
import { checkerInput } from '../../chaos/checkerInput.js';
import { type SmtpTap, startSmtpTap } from '../../chaos/smtpTap.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { eventually } from '../support/eventually.js';

/**
 * The chaos run's relay path: a client → the outage proxy → the SMTP tap → the relay. When the
 * outage begins it cuts every open session, including a transaction already past its final dot
 * whose 250 is still to come; the proxy records that cut, and the checker explains the copy by it
 * (issue 35: the harness must report every fault it injects).
 */
describe('a relay outage that cuts a session past its final dot', () => {
  let smtp: TestSmtpServer;
  let tap: SmtpTap;
  let outage: RelayOutage;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    tap = await startSmtpTap({ targetHost: smtp.host, targetPort: smtp.port, onMoment: () => undefined });
    outage = await startRelayOutage({ targetHost: tap.host, targetPort: tap.port });
  });
  afterAll(async () => {
    await outage.close();
    await tap.close();
    await smtp.close();
  });

  it('records the cut, and the checker explains the copy by it', async () => {
    smtp.script({ label: 'data-slow', afterData: { acceptAfterMs: 3_000 } });
    const sending = createTransport({
      host: outage.host,
      port: outage.port,
      secure: false,
      ignoreTLS: true,
      socketTimeout: 20_000,
    }).sendMail({
      from: 'a@example.com',
      to: 'r-A@chaos.test',
      subject: 'A',
      text: 'body of A',
      messageId: '<A@postdate.local>',
      headers: { 'X-Postdate-Id': 'A' },
    });
    const settled = sending.then(
      () => 'delivered',
      () => 'cut',
    );
    await eventually('the final dot through the tap', () => tap.transactions()[0]?.finalDotAtMs != null, {
      withinMs: 20_000,
    });
    await eventually('the relay to read the body', () => smtp.transactionLog[0]?.received !== undefined, {
      withinMs: 20_000,
    });
    await outage.set('down');
    expect(await settled).toBe('cut');
    await eventually('the tap to see the close', () => tap.transactions()[0]?.closedAtMs != null, {
      withinMs: 20_000,
    });

    expect(outage.outages).toEqual([{ startedAtMs: expect.any(Number), endedAtMs: null }]);
    expect(outage.cuts).toHaveLength(1);
    expect(outage.cuts[0]?.upstreamPort).toBe(tap.transactions()[0]?.clientPort);

    const input = checkerInput({
      tracked: [],
      views: {},
      tapped: tap.transactions(),
      relayed: smtp.transactionLog,
      dealtKills: [],
      timeoutKills: [],
      outageCuts: outage.cuts,
    });
    const [transaction] = input.transactions;
    expect(transaction).toMatchObject({ postdateId: 'A', fault: 'data-slow', outcome: 'accepted' });
    if (transaction === undefined) throw new Error('no transaction');
    expect(explainCopy(transaction, [], input.cuts ?? [], false)).toMatchObject({ by: 'relay-outage' });
    expect(explainCopy(transaction, [], [], false)).toBeNull();
    await outage.set('up');
    expect(outage.outages[0]?.endedAtMs).toEqual(expect.any(Number));
  }, 30_000);
});
