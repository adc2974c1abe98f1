/**
 * Failover, pauses and quiet hours together (DESIGN §5, §15, §16), as a model-based property: the
 * real sender (its relays wired as test/sender/breakerHarness.ts wires them) on DynamoDB Local and the
 * SQS emulator, three real smtp-servers in order, each behind the pass-through that plays an outage
 * (connection refused, 421 at the greeting), and the sender's and the gates' clock the test's. A run
 * generates 1–4 messages (1–3 recipients, `retry` or `hold`, some with a `tags.kind`, some with quiet
 * hours in a zone and a `not_after`) and what each relay answers them (451 or 550 at RCPT for a
 * recipient, 554 or a dropped connection after the dot), then a list of actions: deliver the copies,
 * move the clock (past a probe interval, a backoff, a window's edge), take a relay down or bring it
 * back, disable or enable a relay, pause or resume everything or one kind. Then every relay is up,
 * enabled and resumed, the clock out of every window, and the copies delivered until nothing moves.
 *
 * The verdict is read from what each relay received (its RCPT commands, the bodies and how it
 * answered them) beside the script, never from the sender's own records, except the two counts
 * DESIGN §5 puts on the record (an outage counts no attempt, and dead-letters nothing):
 * - a recipient a relay accepted (or rejected, 550 or 554) is never sent again, by any relay, unless
 *   an ambiguity was injected and the policy is `retry`; a `hold` message after an ambiguity is never
 *   sent again at all (§5, §15);
 * - a message goes to a relay only when no relay before it in the order was up, enabled and known to
 *   have a closed breaker (never failed since, or answered since it came back: a probe or a send);
 * - nothing is sent inside its quiet window, past its `not_after`, while its kind (or everything) is
 *   paused, or through a disabled relay (§5, §15, §16);
 * - a message's attempts are the transactions the relays saw for it, so an outage counts none, and
 *   it is `dead` only after the attempts allowed;
 * - once all is well again, every recipient is delivered or rejected, unless its message stopped for
 *   a reason the script gave (held after an ambiguity, past `not_after`, out of attempts).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { type PauseCommand, pauseAfter, pauseChanges } from '../../lambdas/core/relayBreaker.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import {
  type SmtpBehaviour,
  startSmtpServer,
  type TestSmtpServer,
} from '../../local/smtp/controllableSmtpServer.js';
import { type RelayMode, type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import {
  BREAKER_TIMEOUT_SECONDS,
  type BreakerWorld,
  createBreakerRig,
  namedRelay,
  startBreakerWorld,
} from './breakerHarness.js';
import { TEST_SETTINGS } from './senderHarness.js';

/** 20:58 UTC on 3 December 2026: no zone below changes its offset for weeks around it. */
const BASE = Date.UTC(2026, 11, 3, 20, 58, 0);
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'] as const;
const KINDS = ['alerts', 'digest'] as const;
const RELAY_COUNT = 3;
const MAX_ATTEMPTS = 5;
/** Backoffs of 3 s and more on the sender's clock (random 0.75 of 4 s · 2^attempts, at most 8 s): the test moves past them. */
const SETTINGS = { ...TEST_SETTINGS, maxAttempts: MAX_ATTEMPTS, retryBaseSeconds: 4, retryCapSeconds: 8 };
const NO_LOGIN = environmentSmtpCredentials({ user: undefined, pass: undefined });

interface RecipientPlan {
  /** The first this many RCPT commands for the recipient (whichever relay) get 451. */
  readonly deferrals: number;
  /** Every RCPT for it gets 550. */
  readonly rejected: boolean;
}

type DotOutcome = 'accept' | 'reject' | 'drop';

interface MessagePlan {
  readonly recipients: readonly RecipientPlan[];
  readonly policy: 'retry' | 'hold';
  readonly kind: (typeof KINDS)[number] | undefined;
  /** Quiet hours around BASE: starting `startMin` minutes from BASE's local time, `lengthMin` long. */
  readonly quiet:
    | { readonly zone: (typeof ZONES)[number]; readonly startMin: number; readonly lengthMin: number }
    | undefined;
  /** `not_after`, minutes after BASE. */
  readonly notAfterMin: number | undefined;
  /** What the relays answer the final dot of the message's bodies, in order (whichever relay), then 250. */
  readonly dot: readonly DotOutcome[];
}

type Action =
  | { readonly type: 'deliver' }
  | { readonly type: 'advance'; readonly ms: number }
  /**
   * To the next start of a message's quiet window (`start`), or to its end when inside it (`end`); the
   * message by position, modulo their number.
   */
  | { readonly type: 'edge'; readonly message: number; readonly to: 'start' | 'end' }
  | { readonly type: 'relay'; readonly relay: number; readonly mode: RelayMode }
  | { readonly type: 'disable' | 'enable'; readonly relay: number }
  | { readonly type: 'pause' | 'resume'; readonly kind: (typeof KINDS)[number] | undefined };

const recipientPlan: fc.Arbitrary<RecipientPlan> = fc.record({
  deferrals: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 2 }) },
  ),
  rejected: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
});

const messagePlan: fc.Arbitrary<MessagePlan> = fc.record({
  recipients: fc.array(recipientPlan, { minLength: 1, maxLength: 3 }),
  policy: fc.constantFrom('retry' as const, 'hold' as const),
  kind: fc.constantFrom(...KINDS, undefined),
  quiet: fc.option(
    fc.record({
      zone: fc.constantFrom(...ZONES),
      startMin: fc.integer({ min: -3, max: 12 }),
      lengthMin: fc.integer({ min: 1, max: 12 }),
    }),
    { nil: undefined, freq: 2 },
  ),
  notAfterMin: fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.integer({ min: 2, max: 40 }) },
  ),
  dot: fc.array(fc.constantFrom<DotOutcome>('accept', 'reject', 'drop', 'drop'), { maxLength: 2 }),
});

/** The relays' state before the first step: most up and enabled, some down or drained from the start. */
const start = fc.record({
  // The first relay down as often as up; the later ones mostly up, to take its mail.
  modes: fc.tuple(
    fc.constantFrom<RelayMode>('up', 'down', 'refusing'),
    fc.constantFrom<RelayMode>('up', 'up', 'down', 'refusing'),
    fc.constantFrom<RelayMode>('up', 'up', 'up', 'down'),
  ),
  disabled: fc.array(
    fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
    { minLength: RELAY_COUNT, maxLength: RELAY_COUNT },
  ),
});

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ type: 'deliver' as const }) },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom(1_100, 1_100, 5_000, 9_000, 60_000, 180_000, 420_000)
      .map((ms) => ({ type: 'advance' as const, ms })),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('edge' as const),
      message: fc.integer({ min: 0, max: 3 }),
      to: fc.constantFrom('start' as const, 'start' as const, 'end' as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('relay' as const),
      // The first relays fail most: the later ones then take the mail.
      relay: fc.constantFrom(0, 0, 0, 1, 1, 2),
      mode: fc.constantFrom<RelayMode>('up', 'up', 'down', 'refusing'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constantFrom('disable' as const, 'enable' as const),
      relay: fc.integer({ min: 0, max: RELAY_COUNT - 1 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constantFrom('pause' as const, 'resume' as const),
      kind: fc.constantFrom(...KINDS, undefined),
    }),
  },
);

const ALL_UP = { modes: ['up', 'up', 'up'] as RelayMode[], disabled: [false, false, false] };
const ONE = (overrides: Partial<RecipientPlan> = {}): RecipientPlan => ({
  deferrals: 0,
  rejected: false,
  ...overrides,
});
const PLAIN: MessagePlan = {
  recipients: [ONE()],
  policy: 'retry',
  kind: undefined,
  quiet: undefined,
  notAfterMin: undefined,
  dot: [],
};

/**
 * Runs every property run starts with: the situations each rule is about, met for sure before the
 * generated ones.
 */
const SCENARIOS: [MessagePlan[], typeof ALL_UP, Action[]][] = [
  // A retry whose backoff ends inside the window (DESIGN §16 "after a retry").
  [
    [
      {
        ...PLAIN,
        recipients: [ONE(), ONE({ deferrals: 1 })],
        quiet: { zone: 'Europe/Berlin', startMin: 5, lengthMin: 5 },
      },
    ],
    ALL_UP,
    [
      { type: 'deliver' },
      { type: 'edge', message: 0, to: 'start' },
      { type: 'deliver' },
      { type: 'advance', ms: 60_000 },
      { type: 'deliver' },
    ],
  ],
  // The first relay fails, comes back; its probe closes its breaker: the mail returns to it (§15).
  // (The second message is paused meanwhile, so that one is left to go once the breaker closed.)
  [
    [PLAIN, { ...PLAIN, kind: 'digest' }],
    { ...ALL_UP, modes: ['down', 'up', 'up'] },
    [
      { type: 'pause', kind: 'digest' },
      { type: 'deliver' },
      { type: 'relay', relay: 0, mode: 'up' },
      { type: 'advance', ms: 1_100 },
      { type: 'resume', kind: 'digest' },
      { type: 'deliver' },
      { type: 'deliver' },
    ],
  ],
  // The first relay drained by the operator: its mail leaves through the second; enabled, it returns.
  [
    [PLAIN, PLAIN],
    { ...ALL_UP, disabled: [true, false, false] },
    [{ type: 'deliver' }, { type: 'enable', relay: 0 }],
  ],
  // An ambiguous send under `hold`, the first relay down after it: nothing crosses (§15).
  [
    [
      { ...PLAIN, policy: 'hold', dot: ['drop'] },
      { ...PLAIN, dot: ['drop'] },
    ],
    ALL_UP,
    [
      { type: 'deliver' },
      { type: 'relay', relay: 0, mode: 'refusing' },
      { type: 'deliver' },
      { type: 'advance', ms: 9_000 },
      { type: 'deliver' },
    ],
  ],
];

/** What the operator and the outages had set while a step ran (they change only between steps). */
interface Setting {
  readonly modes: readonly RelayMode[];
  readonly disabled: readonly boolean[];
  readonly pausedAll: boolean;
  /** Kinds resumed one by one since everything was paused. */
  readonly except: readonly string[];
  readonly pausedKinds: readonly string[];
}

/** One RCPT command a relay received, with the sender's clock then and the setting of the step. */
interface RcptEvent {
  readonly relay: number;
  /** The relay's transaction (1-based: its MAIL FROM count) the command belongs to. */
  readonly transaction: number;
  readonly message: number;
  readonly recipient: number;
  readonly code: 250 | 451 | 550;
  readonly clockMs: number;
  readonly realMs: number;
  readonly setting: Setting;
}

/** One transaction of a message as a relay saw it. */
interface Transaction {
  readonly relay: number;
  readonly number: number;
  readonly message: number;
  readonly realMs: number;
  readonly clockMs: number;
  readonly setting: Setting;
  readonly rcpts: readonly RcptEvent[];
  /** How the relay answered the body; undefined when no body came (every RCPT refused). */
  readonly outcome: 'accepted' | 'refused' | 'dropped' | undefined;
}

interface Message {
  readonly plan: MessagePlan;
  readonly id: string;
  readonly rev: number;
  readonly addresses: readonly string[];
  readonly quietHours: { readonly start: string; readonly end: string } | undefined;
  readonly notAfterMs: number | undefined;
}

/** One run's world as the relays see it. */
interface Run {
  readonly messages: Message[];
  readonly byAddress: Map<string, { message: number; recipient: number }>;
  readonly events: RcptEvent[];
  setting: Setting;
  clockMs: () => number;
  /** Per relay: since when (real ms) its breaker may be open (it was down while copies were delivered). */
  readonly suspectSince: (number | undefined)[];
  /** Per relay: it was down during a delivery in the current outage. */
  readonly hitWhileDown: boolean[];
}

let current: Run | undefined;

const formats = new Map<string, Intl.DateTimeFormat>();

/** Minutes of the day at `ms` in `zone`, with the seconds and milliseconds as a fraction. */
function localMinutes(ms: number, zone: string): number {
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(zone, format);
  }
  const parts = format.formatToParts(new Date(ms));
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return (
    part('hour') * 60 + part('minute') + (part('second') * 1000 + (((ms % 1000) + 1000) % 1000)) / 60_000
  );
}

const hhmm = (minutes: number) => {
  const m = ((minutes % 1440) + 1440) % 1440;
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
};

/** DESIGN §16: inside [start, end) in the zone, the window crossing midnight when end < start. */
function insideQuietHours(message: Message, ms: number): boolean {
  const quiet = message.plan.quiet;
  if (quiet === undefined || message.quietHours === undefined) return false;
  const toMinutes = (text: string) => Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5));
  const start = toMinutes(message.quietHours.start);
  const end = toMinutes(message.quietHours.end);
  const now = localMinutes(ms, quiet.zone);
  return start < end ? now >= start && now < end : now >= start || now < end;
}

/**
 * The next whole minute after `ms` where the message's window starts (`start`) or, inside it, ends
 * (`end`); undefined without a window, or for an end outside it.
 */
function nextEdge(message: Message, ms: number, to: 'start' | 'end'): number | undefined {
  if (message.quietHours === undefined) return undefined;
  const inside = insideQuietHours(message, ms);
  if (to === 'end' && !inside) return undefined;
  let was = inside;
  for (let at = Math.floor(ms / 60_000) * 60_000 + 60_000; at < ms + 2 * 86_400_000; at += 60_000) {
    const now = insideQuietHours(message, at);
    if (now !== was && now === (to === 'start')) return at;
    was = now;
  }
  return undefined;
}

function isPaused(setting: Setting, kind: string | undefined): boolean {
  if (kind !== undefined && setting.pausedKinds.includes(kind)) return true;
  return setting.pausedAll && (kind === undefined || !setting.except.includes(kind));
}

/** What a relay answers RCPT TO for `address` now (the script), recorded with the moment. */
function rcptReply(relay: number, server: () => TestSmtpServer, address: string) {
  const run = current;
  const known = run?.byAddress.get(address);
  if (run === undefined || known === undefined) return undefined;
  const plan = run.messages[known.message]?.plan.recipients[known.recipient];
  const before = run.events.filter(
    (event) => event.message === known.message && event.recipient === known.recipient,
  ).length;
  const code = plan?.rejected ? 550 : before < (plan?.deferrals ?? 0) ? 451 : 250;
  run.events.push({
    relay,
    transaction: server().transactions,
    ...known,
    code,
    clockMs: run.clockMs(),
    realMs: Date.now(),
    setting: run.setting,
  });
  if (code === 550) return { code, message: '5.1.1 User unknown' };
  if (code === 451) return { code, message: '4.2.1 Try again later' };
  return undefined;
}

describe('failover, pauses and quiet hours together, judged from the relays', () => {
  let world: BreakerWorld;
  const servers: TestSmtpServer[] = [];
  const outages: RelayOutage[] = [];
  let runs = 0;

  beforeAll(async () => {
    world = await startBreakerWorld();
    servers.push(world.smtp);
    outages.push(world.outage);
    for (let index = 1; index < RELAY_COUNT; index++) {
      const server = await startSmtpServer();
      servers.push(server);
      outages.push(await startRelayOutage({ targetHost: server.host, targetPort: server.port }));
    }
  });
  afterAll(async () => {
    for (const outage of outages.slice(1)) await outage.close();
    for (const server of servers.slice(1)) await server.close();
    await world?.close();
  });

  /** Each relay's transactions of this run's messages, from its RCPT commands and what it received. */
  function transactionsOf(run: Run): Transaction[] {
    const byKey = new Map<string, RcptEvent[]>();
    for (const event of run.events) {
      const key = `${event.relay}:${event.transaction}`;
      byKey.set(key, [...(byKey.get(key) ?? []), event]);
    }
    return [...byKey.values()]
      .map((rcpts) => {
        const first = rcpts[0] as RcptEvent;
        const logged = servers[first.relay]?.transactionLog[first.transaction - 1];
        const outcome = logged?.received?.outcome;
        return {
          relay: first.relay,
          number: first.transaction,
          message: first.message,
          realMs: first.realMs,
          clockMs: first.clockMs,
          setting: first.setting,
          rcpts,
          outcome: outcome === 'stalled' ? undefined : outcome,
        };
      })
      .sort((a, b) => a.realMs - b.realMs);
  }

  /**
   * Relay `index` was up and enabled at `realMs` and its breaker is known closed: it never failed a
   * delivery since the run began, or a session with it went through after it came back (a probe that
   * ended with QUIT, or a send that reached MAIL FROM). A session that only opened is not enough: on a
   * loaded machine a probe may run out of time after connecting, and its breaker stays open.
   */
  function knownClosed(run: Run, index: number, setting: Setting, realMs: number): boolean {
    if (setting.modes[index] !== 'up' || setting.disabled[index]) return false;
    const since = run.suspectSince[index];
    if (since === undefined) return true;
    return (servers[index]?.sessions ?? []).some(
      (session) =>
        session.openedAtMs >= since &&
        session.openedAtMs < realMs &&
        (session.quit || session.transactions > 0),
    );
  }

  /** Every rule broken, each as one line naming the message, the relay and why. */
  function violations(run: Run): string[] {
    const found: string[] = [];
    const transactions = transactionsOf(run);
    for (const [position, transaction] of transactions.entries()) {
      const message = run.messages[transaction.message] as Message;
      const name = `message ${transaction.message} (${message.plan.policy}, kind ${message.plan.kind ?? 'none'})`;
      const where = `relay ${transaction.relay} at +${Math.round((transaction.clockMs - BASE) / 1000)} s`;
      const earlier = transactions.slice(0, position).filter((t) => t.message === transaction.message);
      const dropped = earlier.find((t) => t.outcome === 'dropped');
      if (dropped !== undefined && message.plan.policy === 'hold') {
        found.push(
          `${name}: sent again through ${where} after an ambiguous send through relay ${dropped.relay}`,
        );
      }
      for (const rcpt of transaction.rcpts) {
        for (const before of earlier) {
          const was = before.rcpts.find((r) => r.recipient === rcpt.recipient);
          if (was === undefined) continue;
          const settled =
            was.code === 550
              ? 'rejected at RCPT'
              : was.code === 250 && before.outcome === 'accepted'
                ? 'accepted'
                : was.code === 250 && before.outcome === 'refused'
                  ? 'rejected after the dot'
                  : undefined;
          if (settled !== undefined) {
            found.push(
              `${name}: recipient ${rcpt.recipient} ${settled} by relay ${before.relay} was sent again through ${where}`,
            );
          }
        }
      }
      if (insideQuietHours(message, transaction.clockMs)) {
        found.push(
          `${name}: sent through ${where}, inside its quiet hours ${JSON.stringify(message.quietHours)} in ${message.plan.quiet?.zone}`,
        );
      }
      if (message.notAfterMs !== undefined && transaction.clockMs > message.notAfterMs) {
        found.push(`${name}: sent through ${where}, past its not_after`);
      }
      if (isPaused(transaction.setting, message.plan.kind)) {
        found.push(`${name}: sent through ${where} while paused (${JSON.stringify(transaction.setting)})`);
      }
      if (transaction.setting.disabled[transaction.relay]) {
        found.push(`${name}: sent through ${where}, a disabled relay`);
      }
      for (let index = 0; index < transaction.relay; index++) {
        if (knownClosed(run, index, transaction.setting, transaction.realMs)) {
          found.push(
            `${name}: sent through ${where} while relay ${index}, earlier in the order, was up, enabled and closed`,
          );
        }
      }
    }
    return found;
  }

  /** After quiescence: attempts are the relays' transactions; what could be delivered was. */
  async function finalViolations(
    run: Run,
    state: (id: string) => Promise<{ status: string; attempts: number }>,
  ): Promise<string[]> {
    const found: string[] = [];
    const transactions = transactionsOf(run);
    for (const [index, message] of run.messages.entries()) {
      const own = transactions.filter((t) => t.message === index);
      const record = await state(message.id);
      const name = `message ${index} (${message.plan.policy})`;
      if (record.attempts !== own.length) {
        found.push(
          `${name}: the relays saw ${own.length} transactions, the record counts ${record.attempts} attempts (${record.status})`,
        );
      }
      if (record.status === 'dead' && own.length < MAX_ATTEMPTS) {
        found.push(`${name}: dead after ${own.length} transactions the relays saw`);
      }
      const stopped =
        (message.plan.policy === 'hold' && own.some((t) => t.outcome === 'dropped')) ||
        own.length >= MAX_ATTEMPTS ||
        (message.notAfterMs !== undefined && run.clockMs() > message.notAfterMs);
      if (stopped) continue;
      for (const recipient of message.plan.recipients.keys()) {
        const settled = own.some((t) =>
          t.rcpts.some(
            (r) =>
              r.recipient === recipient &&
              (r.code === 550 || (r.code === 250 && (t.outcome === 'accepted' || t.outcome === 'refused'))),
          ),
        );
        if (!settled)
          found.push(
            `${name}: recipient ${recipient} left undelivered (${record.status}, ${record.attempts} attempts)`,
          );
      }
    }
    return found;
  }

  it('no recipient twice, no message past the first available relay, none in its quiet hours or while paused or disabled; outages count nothing', async () => {
    let lastMailers: NodemailerMailer[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.array(messagePlan, { minLength: 1, maxLength: 4 }),
        start,
        fc.array(action, { minLength: 4, maxLength: 14 }),
        async (plans, initial, actions) => {
          runs += 1;
          for (const mailer of lastMailers) await mailer.close();
          for (const outage of outages) await outage.set('up');
          const names = servers.map((_, index) => `r${index}-run${runs}`);
          const gates = names.map((name) => new DynamoSendingGate(world.documents, world.tableName, name));
          const resumeAll: PauseCommand = { action: 'resume' };
          const before = (await gates[0]?.read())?.pause;
          if (before !== undefined && pauseChanges(before, resumeAll)) {
            await gates[0]?.writePause(before, pauseAfter(before, resumeAll, new Date(BASE)));
          }

          const rig = await createBreakerRig(world, { maxAttempts: MAX_ATTEMPTS });
          rig.clock.ms = BASE;
          const mailersBefore = world.senderMailers.length;
          const relays = names.map((name, index) =>
            namedRelay(world, rig, name, outages[index] as RelayOutage, NO_LOGIN, rig.clock.now),
          );
          lastMailers = world.senderMailers.slice(mailersBefore);
          const [first, ...rest] = relays;
          if (first === undefined) throw new Error('no relay');
          const sender = rig.newHandler({
            mailer: first.mailer,
            relayGate: first.gate,
            relayName: first.name,
            failover: rest,
            settings: SETTINGS,
            random: () => 0.75,
            timeoutSeconds: BREAKER_TIMEOUT_SECONDS,
          });

          const run: Run = {
            messages: [],
            byAddress: new Map(),
            events: [],
            setting: {
              modes: names.map(() => 'up' as const),
              disabled: names.map(() => false),
              pausedAll: false,
              except: [],
              pausedKinds: [],
            },
            clockMs: () => rig.clock.ms,
            suspectSince: names.map(() => undefined),
            hitWhileDown: names.map(() => false),
          };
          current = run;
          for (const [index, plan] of plans.entries()) {
            const addresses = plan.recipients.map((_, r) => `run${runs}-m${index}-r${r}@example.org`);
            const quietHours =
              plan.quiet === undefined
                ? undefined
                : {
                    start: hhmm(Math.floor(localMinutes(BASE, plan.quiet.zone)) + plan.quiet.startMin),
                    end: hhmm(
                      Math.floor(localMinutes(BASE, plan.quiet.zone)) +
                        plan.quiet.startMin +
                        plan.quiet.lengthMin,
                    ),
                  };
            const notAfterMs = plan.notAfterMin === undefined ? undefined : BASE + plan.notAfterMin * 60_000;
            const record = await rig.putMessage({
              to: addresses,
              onAmbiguous: plan.policy,
              tags: plan.kind === undefined ? {} : { kind: plan.kind },
              sendAt: new Date(BASE - 1000),
              ...(notAfterMs === undefined ? {} : { notAfter: new Date(notAfterMs) }),
              ...(plan.quiet === undefined || quietHours === undefined
                ? {}
                : { timeZone: plan.quiet.zone, quietHours }),
            });
            run.messages.push({ plan, id: record.id, rev: record.rev, addresses, quietHours, notAfterMs });
            for (const [r, address] of addresses.entries())
              run.byAddress.set(address, { message: index, recipient: r });
          }
          const indexOf = new Map(run.messages.map((message, index) => [message.id, index]));

          /** Each relay's script for the copy about to run: its message's next answer to the dot. */
          const scriptFor = (body: string) => {
            const parsed = parseDispatchPayload(body);
            const index = parsed.ok ? indexOf.get(parsed.payload.id) : undefined;
            const message = index === undefined ? undefined : run.messages[index];
            const bodies =
              message === undefined
                ? 0
                : servers.flatMap((s) => s.received).filter((r) => r.postdateId === message.id).length;
            const dot = message?.plan.dot[bodies] ?? 'accept';
            for (const [relay, server] of servers.entries()) {
              const behaviour: SmtpBehaviour = {
                rcptTo: (address) => rcptReply(relay, () => server, address),
                afterData:
                  dot === 'drop'
                    ? 'drop'
                    : dot === 'reject'
                      ? { code: 554, message: '5.6.0 Content rejected' }
                      : 'accept',
              };
              server.script(behaviour);
            }
          };

          /** A copy of every message (as the sweeper dispatches), then every copy on the queue, one at a time. */
          const deliver = async () => {
            for (const [index, mode] of run.setting.modes.entries())
              if (mode !== 'up') run.hitWhileDown[index] = true;
            for (const message of run.messages) await rig.dispatch({ id: message.id, rev: message.rev });
            for (let copies = 0; copies < 60; copies++) {
              const records = await rig.receive({ max: 1, waitSeconds: 0 });
              const [record] = records;
              if (record === undefined) break;
              scriptFor(record.body);
              await rig.run(records, sender);
            }
          };

          const setRelay = async (index: number, mode: RelayMode) => {
            const was = run.setting.modes[index];
            if (was === mode) return;
            await outages[index]?.set(mode);
            if (mode === 'up' && run.hitWhileDown[index]) run.suspectSince[index] = Date.now();
            if (mode === 'up') run.hitWhileDown[index] = false;
            run.setting = {
              ...run.setting,
              modes: run.setting.modes.map((m, i) => (i === index ? mode : m)),
            };
          };
          const setDisabled = async (index: number, disabled: boolean) => {
            await gates[index]?.setDisabled(
              disabled ? { reason: 'drain', at: new Date(rig.clock.ms).toISOString() } : undefined,
            );
            run.setting = {
              ...run.setting,
              disabled: run.setting.disabled.map((d, i) => (i === index ? disabled : d)),
            };
          };
          const operate = async (command: PauseCommand) => {
            const gate = gates[0] as DynamoSendingGate;
            const { pause } = await gate.read();
            if (pauseChanges(pause, command))
              await gate.writePause(pause, pauseAfter(pause, command, rig.clock.now()));
            const { kind } = command;
            const s = run.setting;
            run.setting =
              command.action === 'pause'
                ? kind === undefined
                  ? { ...s, pausedAll: true, except: [] }
                  : {
                      ...s,
                      pausedKinds: [...new Set([...s.pausedKinds, kind])],
                      except: s.except.filter((k) => k !== kind),
                    }
                : kind === undefined
                  ? { ...s, pausedAll: false, except: [], pausedKinds: [] }
                  : {
                      ...s,
                      pausedKinds: s.pausedKinds.filter((k) => k !== kind),
                      except: s.pausedAll ? [...new Set([...s.except, kind])] : s.except,
                    };
          };

          for (const [index, mode] of initial.modes.entries()) await setRelay(index, mode);
          for (const [index, disabled] of initial.disabled.entries())
            if (disabled) await setDisabled(index, true);
          for (const step of actions) {
            switch (step.type) {
              case 'deliver':
                await deliver();
                break;
              case 'advance':
                rig.clock.advance(step.ms);
                break;
              case 'edge': {
                const message = run.messages[step.message % run.messages.length] as Message;
                rig.clock.ms = nextEdge(message, rig.clock.ms, step.to) ?? rig.clock.ms + 1_100;
                break;
              }
              case 'relay':
                await setRelay(step.relay, step.mode);
                break;
              case 'disable':
              case 'enable':
                await setDisabled(step.relay, step.type === 'disable');
                break;
              case 'pause':
                await operate({ action: 'pause', kind: step.kind, reason: 'roll-out' });
                break;
              case 'resume':
                await operate({ action: 'resume', kind: step.kind });
                break;
            }
          }

          // Quiescence: every relay up and enabled, nothing paused, the clock out of every window.
          for (const index of names.keys()) {
            await setRelay(index, 'up');
            await setDisabled(index, false);
          }
          await operate({ action: 'resume' });
          const outOfEveryWindow = (from: number) => {
            let ms = from;
            while (run.messages.some((message) => insideQuietHours(message, ms))) ms += 60_000;
            return ms;
          };
          for (let round = 0; round < 8; round++) {
            rig.clock.ms = outOfEveryWindow(rig.clock.ms + 9_000);
            await deliver();
            const pending = await finalViolations(run, rig.state);
            if (pending.length === 0) break;
          }
          const broken = [...violations(run), ...(await finalViolations(run, rig.state))];
          current = undefined;
          expect(broken, JSON.stringify({ plans, initial, actions })).toEqual([]);
        },
      ),
      { numRuns: 10, endOnFailure: true, examples: SCENARIOS },
    );
  }, 120_000);
});
