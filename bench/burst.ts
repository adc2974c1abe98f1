import { randomUUID } from 'node:crypto';
import { createTransport } from 'nodemailer';
import { type SmtpTap, startSmtpTap } from '../chaos/smtpTap.js';
import { freePort } from '../local/freePort.js';
import type { LocalStack } from '../local/localStack.js';
import { type SmtpSink, startSmtpSink } from '../local/smtp/smtpSink.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { budgetRow } from './benchResult.js';
import { enqueue, inParallel, startBenchStack, waitForMail } from './benchStack.js';
import { type PostfixRelay, postfixUnavailable, startPostfixRelay } from './postfixRelay.js';
import { round, type Spread, sleep, spread } from './stats.js';

/**
 * A burst (issue 32): 30 immediate messages enqueued at once, and beside them, during the burst,
 * messages due in 3 s (the direct SQS-delay path) and in 8 s (through the Scheduler: the direct
 * path is compressed to 5 s, the lead to 3 s, so that both paths run in seconds), measured
 * twice on one local stack: cold, right after it said ready, and warm, after a warm-up.
 *
 * The relay is a real Postfix (bench/postfixRelay.ts, no TLS) relaying to an SMTP sink, when
 * Postfix can run here; otherwise the sink itself. A message has reached the relay when the relay
 * answered 250 to its final dot (DESIGN §2: `sent` is "the SMTP relay accepted it"), seen by a
 * pass-through tap in front of the relay (chaos/smtpTap.ts) that both the stack and the baseline
 * go through; when the sink behind Postfix has it (Postfix's own forwarding included) is reported
 * beside it (decision 0122).
 *
 * Baselines from the same run, beside each phase: the same burst of 30 sent straight to the same
 * relay by pooled nodemailer (as many connections as the sender's pool) — what the relay alone
 * takes; and for the delayed messages, a bare `setTimeout` armed for each one's due time in this
 * process — what the event loop alone adds.
 */
const BURST = 30;
const BODY_BYTES = 1024;
/** Issue 32: enqueue → relay p50 of the burst, and the 3 s messages' lateness. */
const GOAL_BURST_P50_S = 0.5;
const GOAL_DUE_SOON_LATE_S = 0.5;
const DUE_SOON_S = 3;
const DUE_LATER_S = 8;
const DIRECT_MAX_S = 5;
const LEAD_S = 3;
/** The sender's SMTP pool (lambdas/adapters/NodemailerMailer.ts, maxSessions 4). */
const POOL = 4;
const DELIVERY_TIMEOUT_MS = 120_000;

interface Phase {
  /** enqueue start → the relay's 250, ms, per immediate message. */
  readonly immediate: readonly number[];
  /** enqueue start → at the sink behind the relay, ms, per immediate message. */
  readonly immediateAtSink: readonly number[];
  /** enqueue start → the API's 202, ms, per immediate message: how much of `immediate` is the front end's. */
  readonly accepted: readonly number[];
  /** the relay's 250 − send_at, ms, per message due in 3 s / 8 s; and at the sink − send_at for those due in 3 s. */
  readonly dueSoon: readonly number[];
  readonly dueLater: readonly number[];
  readonly dueSoonAtSink: readonly number[];
  /** A bare setTimeout's lateness at each delayed message's send_at, ms. */
  readonly timer: readonly number[];
  /** The same burst straight to the relay: send start → the relay's 250, and → at the sink, ms. */
  readonly direct: readonly number[];
  readonly directAtSink: readonly number[];
  /** Postfix's own delays of each message it relayed during the phase (its maillog); none without Postfix. */
  readonly postfixHop: readonly PostfixDelay[];
  /** Per delayed message, for tracing it in the stack's logs. */
  readonly delayed: readonly { id: string; dueInS: number; sendAt: string; lateMs: number }[];
}

export async function burst(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const dueSoonCount = options.quick ? 3 : 5;
  const sink = await startSmtpSink({ port: await freePort() });
  const unavailable = postfixUnavailable();
  let postfix: PostfixRelay | undefined;
  let stack: LocalStack | undefined;
  let tap: SmtpTap | undefined;
  try {
    if (!unavailable) {
      postfix = await startPostfixRelay({
        port: await freePort(),
        relayHost: '127.0.0.1',
        relayPort: sink.port,
      });
      await postfix.start();
    }
    const target = postfix
      ? { host: postfix.host, port: postfix.port }
      : { host: sink.host, port: sink.port };
    tap = await startSmtpTap({ targetHost: target.host, targetPort: target.port, onMoment: () => undefined });
    const relay = { host: tap.host, port: tap.port };
    const accepted = relayAcceptance(tap);
    const relayName = postfix
      ? 'a real Postfix relay (no TLS) in front of the SMTP sink'
      : `the SMTP sink (Postfix unavailable: ${unavailable})`;
    options.log(`  relay: ${relayName}`);
    // BURST_VERBOSE=1: the functions' logs on stdout, to trace a message through the stack.
    stack = await startBenchStack(
      {
        SMTP_HOST: relay.host,
        SMTP_PORT: String(relay.port),
        POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(DIRECT_MAX_S),
        POSTDATE_SCHEDULE_LEAD_SECONDS: String(LEAD_S),
      },
      { quiet: process.env.BURST_VERBOSE !== '1' },
    );
    const hop = postfixHop(postfix);
    const cold = await hop.during(() => runPhase(stack as LocalStack, sink, accepted, dueSoonCount));
    const coldDirect = await directBurst(relay, sink, accepted);
    report('cold', { ...cold, ...coldDirect }, options.log);
    await stack.idle();
    await warmUp(stack, sink);
    const warmDirect = await directBurst(relay, sink, accepted);
    const warm = await hop.during(() => runPhase(stack as LocalStack, sink, accepted, dueSoonCount));
    report('warm', { ...warm, ...warmDirect }, options.log);

    const phases = { cold: { ...cold, ...coldDirect }, warm: { ...warm, ...warmDirect } };
    const rows: BenchRow[] = Object.entries(phases).flatMap(([name, phase]) => {
      const immediate = spread(phase.immediate);
      const atSink = spread(phase.immediateAtSink);
      const direct = spread(phase.direct);
      const soon = spread(phase.dueSoon);
      const soonAtSink = spread(phase.dueSoonAtSink);
      const timer = spread(phase.timer);
      return [
        budgetRow({
          metric: `${name}: burst of ${BURST} immediate, enqueue → relay's 250 p50 (max ${round(immediate.max / 1000, 2)} s; at the sink behind it p50 ${round(atSink.p50 / 1000, 2)} s)`,
          value: round(immediate.p50 / 1000, 3),
          unit: 's',
          baselineLabel: `the same burst by nodemailer → relay's 250, p50`,
          baseline: round(direct.p50 / 1000, 3),
          max: GOAL_BURST_P50_S,
        }),
        budgetRow({
          metric: `${name}: due in ${DUE_SOON_S} s, enqueued during the burst, relay's 250, latest (p50 ${round(soon.p50 / 1000, 2)} s; ${soon.n} messages; at the sink, latest ${round(soonAtSink.max / 1000, 2)} s)`,
          value: round(soon.max / 1000, 3),
          unit: 's',
          baselineLabel: 'setTimeout, latest',
          baseline: round(timer.max / 1000, 3),
          max: GOAL_DUE_SOON_LATE_S,
        }),
      ];
    });
    return {
      name: 'burst',
      title: `A burst: ${BURST} immediate messages at once, with messages due in ${DUE_SOON_S} s and ${DUE_LATER_S} s enqueued during it, cold and warm; relay: ${relayName}`,
      rows,
      details: {
        relay: relayName,
        burst: BURST,
        dueSoonCount,
        compression: {
          POSTDATE_DIRECT_DELAY_MAX_SECONDS: DIRECT_MAX_S,
          POSTDATE_SCHEDULE_LEAD_SECONDS: LEAD_S,
        },
        phases: Object.fromEntries(
          Object.entries(phases).map(([name, phase]) => [
            name,
            {
              immediate: spread(phase.immediate),
              immediateAtSink: spread(phase.immediateAtSink),
              accepted: spread(phase.accepted),
              direct: spread(phase.direct),
              directAtSink: spread(phase.directAtSink),
              dueSoon: spread(phase.dueSoon),
              dueSoonAtSink: spread(phase.dueSoonAtSink),
              dueLater: spread(phase.dueLater),
              timer: spread(phase.timer),
              postfixHop: postfixSpreads(phase.postfixHop),
              delayed: phase.delayed,
            },
          ]),
        ),
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack?.stop();
    await tap?.close();
    await postfix?.close();
    await sink.stop();
  }
}

/**
 * When the relay answered 250 to a message's final dot, by its `X-Postdate-Id` or its Message-ID
 * (angle brackets dropped); the first 250 when a message went twice.
 */
type RelayAcceptance = (id: string) => number;

export function relayAcceptance(tap: Pick<SmtpTap, 'transactions'>): RelayAcceptance {
  return (id) => {
    const bare = (value: string | null) => value?.replace(/^<|>$/g, '');
    const transaction = tap
      .transactions()
      .find((t) => t.reply?.code === 250 && (t.postdateId === id || bare(t.messageId) === bare(id)));
    return transaction?.reply?.atMs ?? Number.NaN;
  };
}

/**
 * The 30 immediate enqueues fired at once; the delayed ones interleaved among them, so they are
 * accepted while the burst is. Each is timed from just before its request to the relay's 250, and to
 * the sink's receipt behind it.
 */
async function runPhase(
  stack: LocalStack,
  sink: SmtpSink,
  acceptedAt: RelayAcceptance,
  dueSoonCount: number,
): Promise<Omit<Phase, 'direct' | 'directAtSink' | 'postfixHop'>> {
  const timer: number[] = [];
  const timers: NodeJS.Timeout[] = [];
  const plan = [
    ...Array.from({ length: BURST }, () => 0),
    ...Array.from({ length: dueSoonCount }, () => DUE_SOON_S),
    ...Array.from({ length: dueSoonCount }, () => DUE_LATER_S),
  ];
  // Spread the delayed ones through the burst: every few immediate requests, one delayed.
  const order = interleave(plan);
  const submitted = await Promise.all(
    order.map(async (dueInS) => {
      const startedAt = Date.now();
      const message = await enqueue(stack, {
        bodyBytes: BODY_BYTES,
        key: randomUUID(),
        ...(dueInS > 0 ? { delaySeconds: dueInS } : {}),
      });
      const acceptedAt = Date.now();
      const dueAt = message.sendAt.getTime();
      if (dueInS > 0) {
        timers.push(setTimeout(() => timer.push(Date.now() - dueAt), Math.max(0, dueAt - Date.now())));
      }
      return { id: message.id, dueInS, startedAt, acceptedAt, dueAt, sendAt: message.sendAt.toISOString() };
    }),
  );
  const received = await waitForMail(
    sink,
    submitted.map((m) => m.id),
    DELIVERY_TIMEOUT_MS,
    (mail) => mail.postdateId,
  );
  for (const pending of timers) clearTimeout(pending);
  const atSink = (id: string) => received.get(id)?.getTime() ?? Number.NaN;
  const at = acceptedAt;
  const of = (dueInS: number) => submitted.filter((m) => m.dueInS === dueInS);
  return {
    immediate: of(0).map((m) => at(m.id) - m.startedAt),
    immediateAtSink: of(0).map((m) => atSink(m.id) - m.startedAt),
    accepted: of(0).map((m) => m.acceptedAt - m.startedAt),
    dueSoon: of(DUE_SOON_S).map((m) => at(m.id) - m.dueAt),
    dueSoonAtSink: of(DUE_SOON_S).map((m) => atSink(m.id) - m.dueAt),
    dueLater: of(DUE_LATER_S).map((m) => at(m.id) - m.dueAt),
    timer,
    delayed: submitted
      .filter((m) => m.dueInS > 0)
      .map((m) => ({ id: m.id, dueInS: m.dueInS, sendAt: m.sendAt, lateMs: at(m.id) - m.dueAt })),
  };
}

/**
 * Postfix's own part of each message's way (its maillog's `delay=`: from the connection's arrival
 * to the sink's 250), for the messages relayed while `task` ran; postlogd writes asynchronously,
 * so the maillog is read again until it stops growing.
 */
function postfixHop(postfix: PostfixRelay | undefined) {
  return {
    async during<T>(task: () => Promise<T>): Promise<T & { postfixHop: PostfixDelay[] }> {
      const before = postfix?.maillog().length ?? 0;
      const result = await task();
      let log = postfix?.maillog() ?? '';
      for (let i = 0; postfix && i < 20; i++) {
        await sleep(100);
        const again = postfix.maillog();
        if (again.length === log.length) break;
        log = again;
      }
      return { ...result, postfixHop: postfixDelays(log.slice(before)) };
    },
  };
}

/**
 * Postfix's `delay=` of a relayed message and its `delays=a/b/c/d`, in ms: a = from MAIL FROM until
 * the queue manager has it (the client's transmission included), b = in the queue manager,
 * c = connecting to the next hop, d = transmitting to it.
 */
export interface PostfixDelay {
  readonly totalMs: number;
  readonly beforeQueueManagerMs: number;
  readonly inQueueManagerMs: number;
  readonly connectMs: number;
  readonly transmitMs: number;
}

/** Every `status=sent` line of a Postfix maillog, as its delays. */
export function postfixDelays(maillog: string): PostfixDelay[] {
  return [
    ...maillog.matchAll(/ delay=([\d.]+), delays=([\d.]+)\/([\d.]+)\/([\d.]+)\/([\d.]+),.* status=sent /g),
  ].map((match) => {
    const [total, a, b, c, d] = match.slice(1, 6).map((seconds) => Number(seconds) * 1000);
    return {
      totalMs: total ?? Number.NaN,
      beforeQueueManagerMs: a ?? Number.NaN,
      inQueueManagerMs: b ?? Number.NaN,
      connectMs: c ?? Number.NaN,
      transmitMs: d ?? Number.NaN,
    };
  });
}

function postfixSpreads(delays: readonly PostfixDelay[]): Record<keyof PostfixDelay, Spread> {
  const of = (key: keyof PostfixDelay) => spread(delays.map((delay) => delay[key]));
  return {
    totalMs: of('totalMs'),
    beforeQueueManagerMs: of('beforeQueueManagerMs'),
    inQueueManagerMs: of('inQueueManagerMs'),
    connectMs: of('connectMs'),
    transmitMs: of('transmitMs'),
  };
}

/** Twenty immediate messages through every part (imports, pools, the relay's connections), not recorded. */
async function warmUp(stack: LocalStack, sink: SmtpSink): Promise<void> {
  const warm = await inParallel(Array.from({ length: 20 }), 8, () =>
    enqueue(stack, { bodyBytes: 10, key: randomUUID() }),
  );
  await waitForMail(
    sink,
    warm.map((m) => m.id),
    DELIVERY_TIMEOUT_MS,
    (mail) => mail.postdateId,
  );
  await stack.idle();
}

/** Immediate and delayed in one order: the delayed ones spaced evenly among the immediate. */
function interleave(plan: readonly number[]): number[] {
  const immediate = plan.filter((d) => d === 0);
  const delayed = plan.filter((d) => d > 0);
  const every = Math.max(1, Math.floor(immediate.length / Math.max(1, delayed.length)));
  const out: number[] = [];
  immediate.forEach((d, i) => {
    out.push(d);
    if ((i + 1) % every === 0 && delayed.length > 0) out.push(delayed.shift() as number);
  });
  return [...out, ...delayed];
}

/** The same burst of 30 straight to the relay through pooled nodemailer; send start → the relay's 250, and → at the sink. */
async function directBurst(
  relay: { host: string; port: number },
  sink: SmtpSink,
  acceptedAt: RelayAcceptance,
): Promise<Pick<Phase, 'direct' | 'directAtSink'>> {
  const transport = createTransport({
    pool: true,
    maxConnections: POOL,
    host: relay.host,
    port: relay.port,
    secure: false,
    ignoreTLS: true,
  });
  try {
    const text = 'x'.repeat(BODY_BYTES);
    const sends = Array.from({ length: BURST }, () => ({
      messageId: `<${randomUUID()}@burst.bench>`,
      at: 0,
    }));
    await Promise.all(
      sends.map((send) => {
        send.at = Date.now();
        return transport.sendMail({
          from: 'bench@example.com',
          to: 'bench@example.com',
          subject: 'burst baseline',
          text,
          messageId: send.messageId,
        });
      }),
    );
    const received = await waitForMail(
      sink,
      sends.map((s) => s.messageId),
      DELIVERY_TIMEOUT_MS,
      (mail) => mail.messageId,
    );
    return {
      direct: sends.map((s) => acceptedAt(s.messageId) - s.at),
      directAtSink: sends.map((s) => (received.get(s.messageId)?.getTime() ?? Number.NaN) - s.at),
    };
  } finally {
    transport.close();
  }
}

function report(name: string, phase: Phase, log: (line: string) => void): void {
  // With BURST_VERBOSE=1 the functions' logs are on stdout: these ids find a delayed message in them.
  if (process.env.BURST_VERBOSE === '1') {
    for (const m of phase.delayed)
      log(`  ${name}: delayed ${m.id} due in ${m.dueInS} s at ${m.sendAt}, ${round(m.lateMs, 0)} ms late`);
  }
  const line = (label: string, s: Spread) =>
    `${label} p50 ${round(s.p50, 0)} ms  max ${round(s.max, 0)} ms (${s.n})`;
  log(`  ${name}: ${line(`burst of ${BURST} enqueue → relay's 250`, spread(phase.immediate))}`);
  log(`  ${name}: ${line('of which request → 202', spread(phase.accepted))}`);
  log(
    `  ${name}: ${line(`burst of ${BURST} enqueue → at the sink behind the relay`, spread(phase.immediateAtSink))}`,
  );
  log(`  ${name}: ${line("nodemailer → relay's 250, same burst", spread(phase.direct))}`);
  log(`  ${name}: ${line('nodemailer → at the sink, same burst', spread(phase.directAtSink))}`);
  log(`  ${name}: ${line(`due in ${DUE_SOON_S} s, late at the relay's 250`, spread(phase.dueSoon))}`);
  log(`  ${name}: ${line(`due in ${DUE_SOON_S} s, late at the sink`, spread(phase.dueSoonAtSink))}`);
  log(`  ${name}: ${line(`due in ${DUE_LATER_S} s (Scheduler), late`, spread(phase.dueLater))}`);
  log(`  ${name}: ${line('setTimeout at those due times, late', spread(phase.timer))}`);
  if (phase.postfixHop.length > 0) {
    const hop = postfixSpreads(phase.postfixHop);
    log(
      `  ${name}: ${line("Postfix's own delay= (maillog)", hop.totalMs)}; p50 of delays=a/b/c/d ${[hop.beforeQueueManagerMs, hop.inQueueManagerMs, hop.connectMs, hop.transmitMs].map((s) => round(s.p50, 0)).join('/')} ms`,
    );
  }
}
