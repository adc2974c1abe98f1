import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { pendingPositions, type RecipientProgress, screenRecipients } from '../../lambdas/core/recipients.js';
import { decideOutcome, type OutcomeStatus } from '../../lambdas/core/sendDecision.js';
import { suppressionKey } from '../../lambdas/core/suppressions.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';
import { attemptResultOf } from '../../lambdas/sender/sendClaimed.js';
import {
  type SmtpBehaviour,
  type SmtpReply,
  startSmtpServer,
  type TestSmtpServer,
} from '../../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { type Fate, fateOf } from '../support/recipientFates.js';

/**
 * The seam between the relay and the promise: the real mailer (NodemailerMailer, on nodemailer's
 * SMTPConnection) against a real smtp-server that answers from a generated script, its outcome
 * handed to the real `decideOutcome` as the sender hands it (sender/sendClaimed.ts), for one to three
 * chained attempts. The pure rule can be right for what it is handed while the adapter hands it
 * nothing (decisions 0313, 0314): only the two together, on a wire, show what a recipient's reply
 * becomes.
 *
 * The expected result is computed from the SCRIPT (what the relay was told to answer), never from
 * what the mailer reported, by rules written from DESIGN §2, §5, §12 and docs/sending.md's table:
 * - an outage (the connection refused, a 421 greeting) is before MAIL FROM: no attempt, nothing changes;
 * - MAIL FROM sent counts one attempt, unless what ended the transaction was a throttle (SES's 454 to
 *   MAIL FROM, the final dot, or every RCPT TO);
 * - each recipient's own reply at RCPT TO stands whatever ends the transaction: a 5xx about the
 *   recipient (5.1.1, 5.7.1) rejects it, a 4xx or a throttle leaves it pending, our sender refused
 *   (5.1.8) leaves it pending; a 5.1.x about the recipient puts it on the suppression list (§12);
 * - a recipient taken at RCPT TO is accepted by a 250 to the final dot, rejected by a 5xx to it
 *   (or a 5xx to MAIL FROM about the message), and pending after anything else; a drop or a silence
 *   after the dot is ambiguous: `unknown` under `hold`;
 * - `sent` when nobody is pending and someone was accepted, `failed` when all were rejected;
 * - the next attempt's envelope is the pending recipients not on the suppression list, each mailbox
 *   once: an accepted one is never asked again; the relay gets `Message-ID: <id@domain>`.
 */

const MESSAGE_ID_DOMAIN = 'mail.test';
const SETTINGS = { maxAttempts: 8, retryBaseSeconds: 30, retryCapSeconds: 3600 };
// The relay runs in this process; see nodemailerMailer.test.ts for why the greeting gets 5 s. The
// phase before the dot gets 2 s: hundreds of sends on a loaded machine must not meet it by chance.
const FAST_TIMEOUTS = { connectionMs: 1000, greetingMs: 5000, dnsMs: 1000, preDotMs: 2000, replyMs: 1000 };
/** When an attempt's outcome must be known, from its start (the sender's `endsBy`): a silence costs this. */
const OUTCOME_BY_MS = 2500;

const MAILBOXES = ['ada@example.org', 'bob@example.net', 'cy@example.com', 'dee@example.org'] as const;
/** Spellings of one mailbox (decisions 0234, 0237): the relay is asked once, its reply counts for each. */
const SPELLINGS: readonly ((mailbox: string) => string)[] = [
  (mailbox) => mailbox,
  (mailbox) => mailbox.charAt(0).toUpperCase() + mailbox.slice(1),
  (mailbox) => mailbox.replace(/@(.*)$/, (_at, domain: string) => `@${domain.toUpperCase()}`),
  (mailbox) => `Someone <${mailbox}>`,
];

const THROTTLE: SmtpReply = { code: 454, message: 'Throttling failure: Maximum sending rate exceeded.' };

/** A recipient's own reply to RCPT TO, and what DESIGN makes of it (docs/smtp-classification.md's rows). */
const RCPT = {
  ok: { reply: undefined, taken: true, rejects: false, bounce: false, throttle: false },
  'busy-450-4.2.1': {
    reply: { code: 450, message: '4.2.1 Mailbox busy' },
    taken: false,
    rejects: false,
    bounce: false,
    throttle: false,
  },
  'later-451-4.3.0': {
    reply: { code: 451, message: '4.3.0 Try again later' },
    taken: false,
    rejects: false,
    bounce: false,
    throttle: false,
  },
  'full-452-4.2.2': {
    reply: { code: 452, message: '4.2.2 Mailbox full' },
    taken: false,
    rejects: false,
    bounce: false,
    throttle: false,
  },
  'unknown-550-5.1.1': {
    reply: { code: 550, message: '5.1.1 User unknown' },
    taken: false,
    rejects: true,
    bounce: true,
    throttle: false,
  },
  'policy-550-5.7.1': {
    reply: { code: 550, message: '5.7.1 Relaying denied' },
    taken: false,
    rejects: true,
    bounce: false,
    throttle: false,
  },
  // Our sender, not the recipient (RFC 3463 X.1.8): config, the recipient stays pending, nobody suppressed.
  'our-sender-553-5.1.8': {
    reply: { code: 553, message: '5.1.8 <ops@example.com>: Sender address rejected: Domain not found' },
    taken: false,
    rejects: false,
    bounce: false,
    throttle: false,
  },
  'ses-throttle-454': { reply: THROTTLE, taken: false, rejects: false, bounce: false, throttle: true },
} as const satisfies Record<
  string,
  {
    reply: SmtpReply | undefined;
    taken: boolean;
    rejects: boolean;
    bounce: boolean;
    throttle: boolean;
  }
>;
type RcptKind = keyof typeof RCPT;

/** The reply to MAIL FROM. */
const MAIL = {
  ok: { reply: undefined, rejectsAll: false, throttle: false },
  'later-451': { reply: { code: 451, message: '4.3.0 Try again later' }, rejectsAll: false, throttle: false },
  'closing-421': { reply: { code: 421, message: '4.7.0 Closing' }, rejectsAll: false, throttle: false },
  'ses-throttle-454': { reply: THROTTLE, rejectsAll: false, throttle: true },
  // Our account may not send as this address: config, nobody settled.
  'sender-550-5.7.1': {
    reply: { code: 550, message: '5.7.1 Sender address not allowed' },
    rejectsAll: false,
    throttle: false,
  },
  // The message itself, for good: a 5xx to the message's own command rejects everyone in the envelope.
  'size-552-5.3.4': {
    reply: { code: 552, message: '5.3.4 Message size exceeds fixed limit' },
    rejectsAll: true,
    throttle: false,
  },
} as const;
type MailKind = keyof typeof MAIL;

/** What follows the final dot. */
const DOT = {
  ok: { after: 'accept', accepts: true, rejects: false, ambiguous: false, throttle: false },
  'later-451': {
    after: { code: 451, message: '4.3.0 Local error in processing' },
    accepts: false,
    rejects: false,
    ambiguous: false,
    throttle: false,
  },
  'closing-421': {
    after: { code: 421, message: '4.4.2 Closing' },
    accepts: false,
    rejects: false,
    ambiguous: false,
    throttle: false,
  },
  'content-554-5.6.0': {
    after: { code: 554, message: '5.6.0 Content rejected' },
    accepts: false,
    rejects: true,
    ambiguous: false,
    throttle: false,
  },
  'ses-throttle-454': { after: THROTTLE, accepts: false, rejects: false, ambiguous: false, throttle: true },
  drop: { after: 'drop', accepts: false, rejects: false, ambiguous: true, throttle: false },
  stall: { after: 'stall', accepts: false, rejects: false, ambiguous: true, throttle: false },
} as const satisfies Record<
  string,
  {
    after: SmtpBehaviour['afterData'];
    accepts: boolean;
    rejects: boolean;
    ambiguous: boolean;
    throttle: boolean;
  }
>;
type DotKind = keyof typeof DOT;

interface AttemptScript {
  /** `up`, or the relay's outage before MAIL FROM: nothing listens, or a 421 greeting. */
  readonly relay: 'up' | 'refusing' | 'down';
  readonly mail: MailKind;
  /** Each mailbox's reply at RCPT TO (by its index in MAILBOXES). */
  readonly rcpt: readonly RcptKind[];
  readonly dot: DotKind;
}

interface SeamCase {
  readonly recipients: readonly { readonly mailbox: number; readonly spelling: number }[];
  readonly onAmbiguous: 'retry' | 'hold';
  readonly attempts: readonly AttemptScript[];
}

function weighted<T>(...choices: readonly (readonly [number, T])[]): fc.Arbitrary<T> {
  return fc.oneof(...choices.map(([weight, value]) => ({ weight, arbitrary: fc.constant(value) })));
}

const attemptScript: fc.Arbitrary<AttemptScript> = fc.record({
  relay: weighted<AttemptScript['relay']>([10, 'up'], [1, 'refusing'], [1, 'down']),
  mail: weighted<MailKind>(
    [14, 'ok'],
    [1, 'later-451'],
    [1, 'closing-421'],
    [1, 'ses-throttle-454'],
    [1, 'sender-550-5.7.1'],
    [1, 'size-552-5.3.4'],
  ),
  rcpt: fc.array(
    weighted<RcptKind>(
      [6, 'ok'],
      [1, 'busy-450-4.2.1'],
      [1, 'later-451-4.3.0'],
      [1, 'full-452-4.2.2'],
      [1, 'unknown-550-5.1.1'],
      [1, 'policy-550-5.7.1'],
      [1, 'our-sender-553-5.1.8'],
      [1, 'ses-throttle-454'],
    ),
    { minLength: MAILBOXES.length, maxLength: MAILBOXES.length },
  ),
  // A silence costs the whole wait for the reply (OUTCOME_BY_MS): rare, a drop is the common ambiguous end.
  dot: weighted<DotKind>(
    [32, 'ok'],
    [4, 'later-451'],
    [4, 'closing-421'],
    [4, 'content-554-5.6.0'],
    [4, 'ses-throttle-454'],
    [4, 'drop'],
    [1, 'stall'],
  ),
});

const seamCase: fc.Arbitrary<SeamCase> = fc.record({
  recipients: fc.array(
    fc.record({
      mailbox: fc.integer({ min: 0, max: MAILBOXES.length - 1 }),
      spelling: fc.integer({ min: 0, max: SPELLINGS.length - 1 }),
    }),
    { minLength: 1, maxLength: 5 },
  ),
  onAmbiguous: fc.constantFrom('retry', 'hold'),
  attempts: fc.array(attemptScript, { minLength: 1, maxLength: 3 }),
});

/** What one attempt should give, from the script alone. */
interface Expected {
  readonly fates: readonly Fate[];
  readonly status: OutcomeStatus;
  readonly attempts: number;
  /** Mailboxes (by index) on the suppression list after it. */
  readonly listed: readonly number[];
  /** Mailboxes asked at RCPT TO, in order, each once. */
  readonly asked: readonly string[];
  /** The recipients of the body the relay received (those it took at RCPT TO), or null: no body. */
  readonly body: readonly string[] | null;
  readonly mailFromSent: boolean;
}

/** The oracle: one attempt of the script on the model's state (DESIGN §2, §5, §12; docs/sending.md). */
function expectedAttempt(
  fates: readonly Fate[],
  attempts: number,
  listed: readonly number[],
  mailboxOf: readonly number[],
  script: AttemptScript,
  onAmbiguous: 'retry' | 'hold',
): Expected {
  const envelope = fates.flatMap((fate, position) => (fate === 'pending' ? [position] : []));
  const mailboxes = [...new Set(envelope.map((position) => mailboxOf[position] ?? -1))];
  const next = [...fates];
  const nextListed = new Set(listed);
  const statusOf = (ambiguous: boolean): OutcomeStatus => {
    if (ambiguous && onAmbiguous === 'hold') return 'unknown';
    if (next.includes('pending')) return 'retrying';
    return next.includes('accepted') ? 'sent' : 'failed';
  };
  const unchanged = { fates, status: 'retrying' as const, attempts, listed, asked: [], body: null };
  if (script.relay !== 'up') return { ...unchanged, mailFromSent: false };
  const mail = MAIL[script.mail];
  if (mail.reply !== undefined) {
    if (mail.rejectsAll) for (const position of envelope) next[position] = 'rejected';
    return {
      fates: next,
      status: statusOf(false),
      attempts: attempts + (mail.throttle ? 0 : 1),
      listed,
      asked: [],
      body: null,
      mailFromSent: true,
    };
  }
  const replyOf = (mailbox: number) => RCPT[script.rcpt[mailbox] ?? 'ok'];
  const taken = mailboxes.filter((mailbox) => replyOf(mailbox).taken);
  for (const mailbox of mailboxes) if (replyOf(mailbox).bounce) nextListed.add(mailbox);
  for (const position of envelope) {
    const mailbox = mailboxOf[position] ?? -1;
    if (replyOf(mailbox).rejects) next[position] = 'rejected';
  }
  const asked = mailboxes.map((mailbox) => MAILBOXES[mailbox] ?? '');
  const listedAfter = [...nextListed].sort();
  if (taken.length === 0) {
    // Every recipient refused at RCPT TO: no DATA. One deferred by a 4xx that is no throttle makes
    // it the message's own failure, one attempt; else a throttle makes it the fleet's pressure, no
    // attempt (DESIGN §5, docs/sending.md); whatever the recipients' order (decision 0323).
    const deferred = mailboxes.some((mailbox) => {
      const reply = replyOf(mailbox);
      return !reply.rejects && !reply.throttle;
    });
    const throttled = mailboxes.some((mailbox) => replyOf(mailbox).throttle);
    return {
      fates: next,
      status: statusOf(false),
      attempts: attempts + (throttled && !deferred ? 0 : 1),
      listed: listedAfter,
      asked,
      body: null,
      mailFromSent: true,
    };
  }
  const dot = DOT[script.dot];
  for (const position of envelope) {
    if (!taken.includes(mailboxOf[position] ?? -1)) continue;
    if (dot.accepts) next[position] = 'accepted';
    else if (dot.rejects) next[position] = 'rejected';
  }
  return {
    fates: next,
    status: statusOf(dot.ambiguous),
    attempts: attempts + (dot.throttle ? 0 : 1),
    listed: listedAfter,
    asked,
    body: taken.map((mailbox) => MAILBOXES[mailbox] ?? ''),
    mailFromSent: true,
  };
}

function fatesOf(total: number, progress: RecipientProgress): Fate[] {
  return Array.from({ length: total }, (_, position) => fateOf(progress, position));
}

interface Relay {
  readonly server: TestSmtpServer;
  readonly front: RelayOutage;
  /** The addresses asked at RCPT TO since the last `script`, lower-cased. */
  readonly asked: string[];
  script(attempt: AttemptScript): Promise<void>;
}

async function startRelay(): Promise<Relay & { close(): Promise<void> }> {
  const server = await startSmtpServer();
  const front = await startRelayOutage({ targetHost: server.host, targetPort: server.port });
  const asked: string[] = [];
  return {
    server,
    front,
    asked,
    async script(attempt) {
      asked.length = 0;
      await front.set(attempt.relay);
      const mail = MAIL[attempt.mail].reply;
      server.script({
        ...(mail === undefined ? {} : { mailFrom: mail }),
        rcptTo: (address) => {
          asked.push(address.toLowerCase());
          const mailbox = (MAILBOXES as readonly string[]).indexOf(address.toLowerCase());
          return RCPT[attempt.rcpt[mailbox] ?? 'ok'].reply;
        },
        afterData: DOT[attempt.dot].after,
      });
    },
    async close() {
      await front.close();
      await server.close();
    },
  };
}

function mailerFor(relay: Relay): NodemailerMailer {
  return new NodemailerMailer({
    host: relay.front.host,
    port: relay.front.port,
    secure: false,
    requireTls: false,
    messageIdDomain: MESSAGE_ID_DOMAIN,
    credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
    timeouts: FAST_TIMEOUTS,
  });
}

let cases = 0;

/** Runs one case's attempts through the mailer and the decision, checking each against the oracle. */
async function runCase(seam: SeamCase, relay: Relay, mailer: NodemailerMailer): Promise<void> {
  cases += 1;
  const id = `01SEAM${String(cases).padStart(20, '0')}`;
  const addresses = seam.recipients.map(({ mailbox, spelling }) =>
    (SPELLINGS[spelling] ?? String)(MAILBOXES[mailbox] ?? ''),
  );
  const mailboxOf = seam.recipients.map(({ mailbox }) => mailbox);
  const total = addresses.length;
  // The sender's state: the record's progress and attempts, and the tenant's suppression list.
  let progress: RecipientProgress = { accepted: [], rejected: [] };
  let attempts = 0;
  const list = new Set<string>();
  // The oracle's own state, from the script alone.
  let fates: Fate[] = addresses.map(() => 'pending');
  let modelAttempts = 0;
  let listed: number[] = [];

  for (const [n, script] of seam.attempts.entries()) {
    // The suppression list at send time (DESIGN §12), as the sender screens it.
    const suppressedNow = pendingPositions(total, progress).filter((position) =>
      list.has(suppressionKey(addresses[position] ?? '') ?? ''),
    );
    const screening = screenRecipients(total, progress, suppressedNow);
    fates = fates.map((fate, position) =>
      fate === 'pending' && listed.includes(mailboxOf[position] ?? -1) ? 'suppressed' : fate,
    );
    expect(fatesOf(total, screening.progress), `screened before attempt ${n + 1}`).toEqual(fates);
    if (screening.kind === 'settle' || !fates.includes('pending')) {
      expect(screening.kind, `nobody left before attempt ${n + 1}`).toBe(
        fates.includes('pending') ? 'send' : 'settle',
      );
      return;
    }
    const positions = screening.envelope;
    await relay.script(script);
    const before = { received: relay.server.received.length, transactions: relay.server.transactions };
    const email: OutgoingEmail = {
      id,
      from: 'Ops <ops@example.com>',
      to: addresses,
      cc: [],
      bcc: [],
      replyTo: null,
      subject: 'Campaign approved',
      text: 'hello',
      html: null,
      headers: {},
      envelope: positions.map((position) => addresses[position] ?? ''),
    };
    const outcome = await mailer.send(email, { endsBy: Date.now() + OUTCOME_BY_MS });
    const decision = decideOutcome(
      attemptResultOf(outcome, positions),
      {
        attempts,
        on_ambiguous: seam.onAmbiguous,
        recipients: screening.progress,
        recipientTotal: total,
      },
      SETTINGS,
      () => 0.5,
    );
    // The hard bounces join the list as the sender adds them (outcomeWrite.ts `suppressHardBounces`).
    for (const refusal of outcome.refused) {
      if (!refusal.hardBounce) continue;
      const key = suppressionKey(email.envelope[refusal.index] ?? '');
      if (key !== undefined) list.add(key);
    }

    const expected = expectedAttempt(fates, modelAttempts, listed, mailboxOf, script, seam.onAmbiguous);
    const received = relay.server.received.slice(before.received);
    const actual: Expected = {
      fates: fatesOf(total, decision.recipients),
      status: decision.to,
      attempts: decision.attempts,
      listed: MAILBOXES.flatMap((mailbox, index) => (list.has(mailbox) ? [index] : [])),
      asked: [...relay.asked],
      body: received.length === 0 ? null : (received[0]?.to ?? []).map((address) => address.toLowerCase()),
      mailFromSent: relay.server.transactions > before.transactions,
    };
    const said = outcome.delivered ? 'delivered' : `${outcome.failure.class}/${outcome.failure.origin}`;
    expect(actual, `attempt ${n + 1} (the mailer said ${said})`).toEqual(expected);
    // At most one body an attempt, and it names the message as DESIGN §5 does, every attempt alike.
    expect(received.map((message) => message.messageId)).toEqual(
      expected.body === null ? [] : [`<${id}@${MESSAGE_ID_DOMAIN}>`],
    );

    progress = decision.recipients;
    attempts = decision.attempts;
    fates = [...expected.fates];
    // The assertion held: the decision's count is the expected one, or one DESIGN leaves open.
    modelAttempts = decision.attempts;
    listed = [...expected.listed];
    if (decision.to !== 'retrying') return;
  }
}

describe('the SMTP seam: the real mailer on a scripted relay, judged by DESIGN', () => {
  let relay: Awaited<ReturnType<typeof startRelay>>;
  beforeAll(async () => {
    relay = await startRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  it('settles every recipient by its own reply, case by case on a fresh mailer', async () => {
    await fc.assert(
      fc.asyncProperty(seamCase, async (seam) => {
        const mailer = mailerFor(relay);
        try {
          await runCase(seam, relay, mailer);
        } finally {
          await mailer.close();
        }
      }),
      { numRuns: Number(process.env.SEAM_RUNS ?? 60) },
    );
  }, 120_000);

  it('settles every recipient by its own reply on one pooled mailer across cases', async () => {
    const mailer = mailerFor(relay);
    try {
      await fc.assert(
        fc.asyncProperty(seamCase, (seam) => runCase(seam, relay, mailer)),
        { numRuns: Number(process.env.SEAM_RUNS ?? 40) },
      );
    } finally {
      await mailer.close();
    }
  }, 120_000);
});
