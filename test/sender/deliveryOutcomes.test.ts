import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { SmtpTimeouts } from '../../lambdas/adapters/NodemailerMailer.js';
import type { SmtpBehaviour } from '../../local/smtp/controllableSmtpServer.js';
import {
  createSenderRig,
  type SenderWorld,
  SHORT_GREETING_SMTP_TIMEOUTS,
  smtpMailer,
  startSenderWorld,
} from './senderHarness.js';

/**
 * One queue copy, one real SMTP answer: for every behaviour of the relay, the record's final status,
 * its history entry, what became of the SQS copy and how many bodies the relay received.
 */

interface Case {
  readonly name: string;
  readonly behaviour: SmtpBehaviour;
  readonly onAmbiguous?: 'retry' | 'hold';
  readonly status: 'sent' | 'retrying' | 'failed' | 'unknown';
  readonly outcome: 'sent' | 'transient' | 'permanent' | 'ambiguous';
  readonly code: string;
  readonly enhancedCode?: string;
  /** Message bodies the relay received in full (a refusal at RCPT TO means none). */
  readonly bodies: number;
  /**
   * SMTP attempts counted (DESIGN §2: transactions in which the relay saw the message); 0 when
   * the failure provably came before MAIL FROM. @default 1
   */
  readonly attempts?: number;
  /** The mailer's limits when one of them is the case's subject (the world's mailer otherwise). */
  readonly timeouts?: SmtpTimeouts;
}

const cases: readonly Case[] = [
  { name: 'accepted (250)', behaviour: {}, status: 'sent', outcome: 'sent', code: '250', bodies: 1 },
  {
    name: '421 at MAIL FROM',
    behaviour: { mailFrom: { code: 421, message: '4.3.2 Service not available' } },
    status: 'retrying',
    outcome: 'transient',
    code: '421',
    bodies: 0,
  },
  {
    name: '450 at RCPT TO',
    behaviour: { rcptTo: { code: 450, message: '4.2.1 Mailbox busy' } },
    status: 'retrying',
    outcome: 'transient',
    code: '450',
    enhancedCode: '4.2.1',
    bodies: 0,
  },
  {
    name: '451 after DATA',
    behaviour: { afterData: { code: 451, message: '4.3.0 Local error in processing' } },
    status: 'retrying',
    outcome: 'transient',
    code: '451',
    bodies: 1,
  },
  {
    name: '452 4.2.2 at RCPT TO',
    behaviour: { rcptTo: { code: 452, message: '4.2.2 Mailbox full' } },
    status: 'retrying',
    outcome: 'transient',
    code: '452',
    enhancedCode: '4.2.2',
    bodies: 0,
  },
  {
    name: '550 5.1.1 at RCPT TO',
    behaviour: { rcptTo: { code: 550, message: '5.1.1 <ada@example.org>: user unknown' } },
    status: 'failed',
    outcome: 'permanent',
    code: '550',
    enhancedCode: '5.1.1',
    bodies: 0,
  },
  {
    name: '552 after DATA',
    behaviour: { afterData: { code: 552, message: '5.3.4 Message too big' } },
    status: 'failed',
    outcome: 'permanent',
    code: '552',
    enhancedCode: '5.3.4',
    bodies: 1,
  },
  {
    name: '554 5.7.1 after DATA',
    behaviour: { afterData: { code: 554, message: '5.7.1 Rejected by policy' } },
    status: 'failed',
    outcome: 'permanent',
    code: '554',
    enhancedCode: '5.7.1',
    bodies: 1,
  },
  {
    name: '554 5.7.1 at RCPT TO',
    behaviour: { rcptTo: { code: 554, message: '5.7.1 Relaying denied' } },
    status: 'failed',
    outcome: 'permanent',
    code: '554',
    enhancedCode: '5.7.1',
    bodies: 0,
  },
  {
    name: 'a stall at RCPT TO past the limit of the phase before the dot',
    behaviour: { rcptTo: 'stall' },
    status: 'retrying',
    outcome: 'transient',
    code: 'ETIMEDOUT',
    bodies: 0,
  },
  {
    name: 'a greeting that never comes (no attempt: the relay never saw the message)',
    behaviour: { stallGreeting: true },
    status: 'retrying',
    outcome: 'transient',
    code: 'ETIMEDOUT',
    bodies: 0,
    attempts: 0,
    timeouts: SHORT_GREETING_SMTP_TIMEOUTS,
  },
  {
    name: 'a drop after the final dot, on_ambiguous = retry',
    behaviour: { afterData: 'drop' },
    status: 'retrying',
    outcome: 'ambiguous',
    code: 'ECONNECTION',
    bodies: 1,
  },
  {
    name: 'no reply after the final dot, on_ambiguous = retry',
    behaviour: { afterData: 'stall' },
    status: 'retrying',
    outcome: 'ambiguous',
    code: 'ETIMEDOUT',
    bodies: 1,
  },
  {
    name: 'a drop after the final dot, on_ambiguous = hold',
    behaviour: { afterData: 'drop' },
    onAmbiguous: 'hold',
    status: 'unknown',
    outcome: 'ambiguous',
    code: 'ECONNECTION',
    bodies: 1,
  },
];

describe('the sender, one copy against each relay behaviour', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  it.each(cases)('$name → $status', async (testCase) => {
    const mailer = testCase.timeouts ? smtpMailer(world.smtp, { timeouts: testCase.timeouts }) : undefined;
    if (mailer) onTestFinished(() => mailer.close());
    const rig = await createSenderRig(world, mailer ? { mailer } : {});
    world.smtp.script(testCase.behaviour);
    // Each case its own recipient: a 5.1.1 puts its address on the tenant's suppression list
    // (DESIGN §12), and the next message to it would not be sent at all.
    const message = await rig.putMessage({
      onAmbiguous: testCase.onAmbiguous ?? 'retry',
      to: [`case-${cases.indexOf(testCase)}@example.org`],
    });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    const state = await rig.state(message.id);
    expect(state.status).toBe(testCase.status);
    expect(state.attempts).toBe(testCase.attempts ?? 1);
    // An outcome that is no attempt and leaves the message retrying is its last error only (decision 0175).
    const entries = state.attempts > 0 || testCase.status !== 'retrying' ? 1 : 0;
    expect(state.history).toHaveLength(entries);
    if (entries > 0)
      expect(state.history[0]).toMatchObject({
        outcome: testCase.outcome,
        code: testCase.code,
        ...(testCase.enhancedCode ? { enhanced_code: testCase.enhancedCode } : {}),
      });
    expect(JSON.stringify(state.history)).not.toContain('@');
    expect(state.lease_owner).toBeUndefined();
    expect(rig.received(message.id)).toHaveLength(testCase.bodies);

    if (testCase.status === 'retrying') {
      // Reported failed with visibility = the backoff (0 here): the copy is back for its next receive.
      expect(response.batchItemFailures).toHaveLength(1);
      expect(state.last_error).toMatchObject({ class: testCase.outcome, code: testCase.code });
      expect(state.due_at).toBeDefined();
      const [again] = await rig.receive({ waitSeconds: 3, max: 1 });
      expect(again?.body).toBe(JSON.stringify({ v: 1, id: message.id, rev: 1 }));
      expect(again?.attributes.ApproximateReceiveCount).toBe('2');
    } else {
      // Terminal: acknowledged, out of the sweeper's overdue index; a TTL only once final (failed
      // and unknown wait for an operator, with none, counted in the waiting partition of the gauge).
      expect(response.batchItemFailures).toEqual([]);
      expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
      if (testCase.status === 'failed' || testCase.status === 'unknown') {
        expect(state.due_pk).toMatch(new RegExp(`^wait#${testCase.status}#\\d+$`));
        expect(state.expires_at).toBeUndefined();
      } else {
        expect(state.due_pk).toBeUndefined();
        expect(state.expires_at).toBeGreaterThan(Date.now() / 1000);
      }
      expect(state.lst_pk).toContain(`#${testCase.status}#`);
    }
    expect(rig.log.text()).not.toContain('@example.org');
  });

  it('records a partial recipient rejection on a sent message, as domains', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'gone@example.net' ? { code: 550, message: '5.1.1 User unknown' } : undefined,
    });
    const message = await rig.putMessage({ to: ['ada@example.org', 'gone@example.net'] });
    await rig.dispatch(message);

    const { response } = await rig.deliverNext();

    expect(response.batchItemFailures).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('sent');
    expect(state.sent_at).toBeDefined();
    expect(state.history[0]).toMatchObject({ outcome: 'sent', rejected_domains: ['example.net'] });
    expect(state.history[0]?.recipients).toEqual([
      {
        position: 1,
        domain: 'example.net',
        outcome: 'rejected',
        code: '550',
        enhanced_code: '5.1.1',
        reply: '550 5.1.1 User unknown',
      },
    ]);
    expect(rig.received(message.id)).toHaveLength(1);
    expect(rig.received(message.id)[0]?.to).toEqual(['ada@example.org']);
    expect(rig.metrics.of('Sent')).toBe(1);
    expect(rig.log.text()).not.toContain('gone@');
  });

  it('records each refused recipient with its own reply: a 451 deferral pending, a 550 rejected, the accepted one the 250', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'full@example.net'
          ? { code: 451, message: '4.2.2 Mailbox full' }
          : address === 'gone@example.com'
            ? { code: 550, message: '5.1.1 User unknown' }
            : undefined,
    });
    const message = await rig.putMessage({ to: ['ada@example.org', 'full@example.net', 'gone@example.com'] });
    await rig.dispatch(message);

    await rig.deliverNext();

    const state = await rig.state(message.id);
    expect(state.status).toBe('retrying');
    expect(state.history[0]).toMatchObject({
      outcome: 'sent',
      code: '250',
      rejected_domains: ['example.com'],
    });
    expect(state.history[0]?.recipients).toEqual([
      {
        position: 1,
        domain: 'example.net',
        outcome: 'deferred',
        code: '451',
        enhanced_code: '4.2.2',
        reply: '451 4.2.2 Mailbox full',
      },
      {
        position: 2,
        domain: 'example.com',
        outcome: 'rejected',
        code: '550',
        enhanced_code: '5.1.1',
        reply: '550 5.1.1 User unknown',
      },
    ]);
    expect(rig.log.text()).not.toContain('full@');
  });

  it('sends Message-ID <id@domain>, X-Postdate-Id and the caller headers, and measures duration and lateness', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const message = await rig.putMessage({ sendAt: new Date(rig.clock.ms - 5000) });
    await rig.dispatch(message);

    await rig.deliverNext();

    const [received] = rig.received(message.id);
    expect(received?.messageId).toBe(`<${message.id}@mail.test>`);
    expect(received?.raw).toMatch(/^X-Campaign: 42$/m);
    expect(rig.metrics.timings.map((timing) => timing.name).sort()).toEqual(['Lateness', 'SmtpDuration']);
    // The sender's clock stands still here: sent_at − send_at is exactly the 5 s the message waited.
    expect(rig.metrics.timings.find((timing) => timing.name === 'Lateness')?.value).toBe(5000);
  });
});

describe('the sender with a relay that refuses its login', () => {
  it('files 535 under config: retrying with the long backoff, and the ConfigErrors metric', async () => {
    const world = await startSenderWorld({
      credentials: { username: 'postdate', password: 'right' },
      mailerCredentials: {
        get: async () => ({ username: 'postdate', password: 'wrong' }),
        invalidate: () => {},
      },
    });
    try {
      // The config backoff's floor is min(15 min, cap): a cap of 2 s makes it 2 s here.
      const rig = await createSenderRig(world, { settings: { retryBaseSeconds: 1, retryCapSeconds: 2 } });
      const message = await rig.putMessage();
      await rig.dispatch(message);

      const { response } = await rig.deliverNext();

      expect(response.batchItemFailures).toHaveLength(1);
      const state = await rig.state(message.id);
      expect(state.status).toBe('retrying');
      expect(state.last_error).toMatchObject({ class: 'config', code: '535', enhanced_code: '5.7.8' });
      // A refused login comes before MAIL FROM: the relay never saw the message, no attempt counted,
      // and no history entry (decision 0175).
      expect(state.attempts).toBe(0);
      expect(state.history).toEqual([]);
      expect(rig.metrics.of('ConfigErrors')).toBe(1);
      expect(rig.metrics.of('Retried')).toBe(1);
      expect(world.smtp.authAttempts.map((attempt) => attempt.ok)).toEqual([false]);
      expect(rig.received(message.id)).toHaveLength(0);
      // Hidden for the config backoff (2 s), not back at once.
      expect(await rig.receive({ waitSeconds: 0 })).toEqual([]);
      expect(await rig.depth()).toMatchObject({ inFlight: 1 });
    } finally {
      await world.close();
    }
  });
});
