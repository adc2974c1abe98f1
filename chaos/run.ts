import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Command } from 'commander';
import { attemptBudgetMs, sendTimingProblems } from '../lambdas/core/sendTiming.js';
import { messagePk } from '../lambdas/store/messageRecord.js';
import { KEY } from '../lambdas/store/tableLayout.js';
import {
  type SmtpBehaviour,
  type SmtpReply,
  startSmtpServer,
  type TestSmtpServer,
  type TransactionRecord,
} from '../local/smtp/controllableSmtpServer.js';
import { emitReport } from './check.js';
import {
  type AcceptedMessage,
  type CheckResult,
  checkRun,
  type ExpectedFate,
  type FinalView,
  type KillRecord,
  type SmtpTransaction,
  TERMINAL_STATUSES,
} from './checker.js';
import { type SmtpMoment, startSmtpTap, type TapTransaction } from './smtpTap.js';
import {
  type SenderChild,
  type SenderStats,
  type StackChild,
  type StackStats,
  startSenderChild,
  startStackChild,
  type TimeoutKill,
} from './stackChild.js';
import type { FaultLine } from './throttleMiddleware.js';

/**
 * The chaos run (issue 8): N messages through the real local stack — run in a child process that
 * is SIGKILLed and restarted on its data dir — while faults are injected, then the checker.
 *
 * Faults: SMTP 4xx/5xx at RCPT and after DATA, drops after the final dot, stalls, a slow relay
 * (the 250 comes 20–35 s after the dot, so that batches meet their function timeout), AUTH refused
 * (535) while the first stack process runs; duplicate and stale SQS copies; stream batches handed to
 * the relay twice; DynamoDB throttling on a fraction of calls (SDK middleware), the first outcome
 * write of a fraction of messages and a fraction of body and group-head reads failing whole (above
 * the SDK's retry); schedules fired twice or late by the Scheduler emulator; the send rate limit
 * on; SIGKILL of the sender process alone at an SMTP moment (after DATA, or after the final dot
 * before the reply) and its restart; SIGKILL of the whole stack and restart on the same data dir,
 * where the sweeper must recover what SQS (memory only) lost; and the local runner's own kill of a
 * sender invocation at its function timeout.
 *
 * The checker (chaos/checker.ts) reads only the harness's own record: the SMTP tap's transactions
 * joined with the relay's fault script, and the kill log (sender and stack SIGKILLs dealt here,
 * timeout kills reported by the stack and sender processes).
 */

export interface ChaosOptions {
  readonly messages: number;
  readonly seed: number;
  /**
   * Give up waiting for terminal states this long after the last enqueue (the checker then counts
   * the stragglers as lost).
   */
  readonly deadlineSeconds: number;
  /** SIGKILLs of the stack during the run (each followed by a restart on the data dir). */
  readonly kills: number;
  /** Run the first stack process with a wrong SMTP password for this long (0: none). */
  readonly authFailureSeconds: number;
  readonly smtpFaultRate: number;
  /** Stalls are costly (each ties a connection up for the reply timeout or longer): their own rate. */
  readonly stallRate: number;
  /** Fraction of transactions the relay answers 20–35 s (× time scale) after the dot. @default 0 */
  readonly slowRelayRate?: number;
  /** Fraction of messages whose first outcome write fails on every SDK attempt. @default 0 */
  readonly outcomeWriteFailureRate?: number;
  /** Fraction of the sender's BODY and group-head reads that fail whole. @default 0 */
  readonly readFailureRate?: number;
  /** POSTDATE_MAX_SEND_RATE of the stack (messages/second per sender); undefined: unlimited. */
  readonly maxSendRate?: number;
  readonly throttleRate: number;
  readonly replayRate: number;
  /** Extra copies of current payloads sent to the send queue, per accepted message. */
  readonly duplicateCopyRate: number;
  /** Fraction of schedule firings the Scheduler emulator delivers twice. @default 0 */
  readonly schedulerFireTwiceRate?: number;
  /** Fraction of schedules that fire late, by 0.5 s to `schedulerLateMs`. @default 0 */
  readonly schedulerLateRate?: number;
  /** @default 5000 (longer than the sweeper's 3 s grace: sometimes the sweeper wins, sometimes the schedule) */
  readonly schedulerLateMs?: number;
  /**
   * SIGKILLs of the sender process alone, each at an SMTP moment (the client just sent DATA, or
   * the final dot and awaits the reply), then a restart of the sender. With any, the sender runs in
   * its own process (`chaos/senderProcess.ts`). @default 0
   */
  readonly senderKills?: number;
  readonly concurrency: number;
  /** Multiplies the workload's delays (1: up to 40 s) and the sender's timing; the fast variant uses less. */
  readonly timeScale?: number;
  readonly reportPath: string;
  readonly log?: (line: string) => void;
}

export interface ChaosOutcome {
  readonly result: CheckResult;
  readonly figures: Record<string, unknown>;
  readonly exitCode: number;
}

/** A small deterministic PRNG (mulberry32), so a seed reproduces the workload and the fault script. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The largest delay that goes straight to SQS in a run of time scale `scale` (8 s at 1). */
export function directDelayMax(scale: number): number {
  return Math.max(2, Math.round(8 * scale));
}

/** The slow relay's delay between the final dot and its 250, in seconds at time scale 1. */
export const SLOW_RELAY_SECONDS = { min: 20, max: 35 } as const;

/**
 * The sender's timing in a chaos run of time scale `scale`, chosen so that the configuration's rule
 * holds (lease > sender timeout > 2 × SMTP timeout + reply timeout + the outcome-write reserve,
 * lambdas/core/sendTiming.ts) with the sender timeout close to that bound: a batch whose copies meet
 * the slow relay one after another outlives it unless the sender stops claiming in time. The reply
 * timeout outlasts the slowest 250, so the slow relay alone never makes an attempt ambiguous. The
 * reserve (one whole AWS SDK call at the clients' limits, 28 s) is not scaled: the run's clients
 * keep their real limits. At scale 1: SMTP 5 s, reply 45 s, sender timeout 86 s (one attempt is
 * 83 s), lease 106 s; at 0.4: 2 s, 18 s, 53 s (50 s), 63 s.
 */
export function chaosTiming(scale: number) {
  const smtpTimeoutSeconds = Math.max(2, Math.round(5 * scale));
  const smtpReplyTimeoutSeconds = Math.max(
    Math.ceil(SLOW_RELAY_SECONDS.max * scale) + 4,
    Math.round(45 * scale),
  );
  const attemptSeconds = Math.ceil(attemptBudgetMs({ smtpTimeoutSeconds, smtpReplyTimeoutSeconds }) / 1000);
  const senderTimeoutSeconds = Math.max(Math.round(70 * scale), attemptSeconds + 3);
  const leaseSeconds = senderTimeoutSeconds + Math.max(10, Math.round(20 * scale));
  const timing = { leaseSeconds, senderTimeoutSeconds, smtpTimeoutSeconds, smtpReplyTimeoutSeconds };
  const [problem] = sendTimingProblems(timing);
  if (problem !== undefined) throw new Error(`chaos timing at scale ${scale}: ${problem}`);
  return timing;
}

/**
 * Compressed time: what takes minutes in AWS plays out in seconds (the delays of the workload and
 * the sender's timing are multiplied by `scale` too).
 */
export const compressedTime = (scale: number) => {
  const timing = chaosTiming(scale);
  return {
    ...COMPRESSED_TIME,
    POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(directDelayMax(scale)),
    POSTDATE_LEASE_SECONDS: String(timing.leaseSeconds),
    POSTDATE_SENDER_TIMEOUT_SECONDS: String(timing.senderTimeoutSeconds),
    POSTDATE_SMTP_TIMEOUT_SECONDS: String(timing.smtpTimeoutSeconds),
    POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS: String(timing.smtpReplyTimeoutSeconds),
  };
};

export const COMPRESSED_TIME = {
  POSTDATE_DIRECT_DELAY_MAX_SECONDS: '8',
  POSTDATE_SCHEDULE_LEAD_SECONDS: '1',
  POSTDATE_RETRY_BASE_SECONDS: '1',
  POSTDATE_RETRY_CAP_SECONDS: '3',
  POSTDATE_SWEEP_GRACE_SECONDS: '3',
  POSTDATE_MAX_ATTEMPTS: '8',
  // Each sweep re-dispatches every overdue message, whether or not the copy of the previous sweep
  // was handled yet: every 2 s, the 1,000+ messages a stack kill leaves overdue snowballed into
  // 93,000 queued copies (10,000-message run, 2026-11-29). 10 s keeps that bounded.
  CHAOS_SWEEP_INTERVAL_MS: '10000',
} as const;

const SMTP_USER = 'chaos';
const SMTP_PASSWORD = 'chaos-right-password';
const API_KEY = 'pd_chaos-run-key-000001';

type Kind = 'immediate' | 'short' | 'long' | 'cancel' | 'reschedule' | 'supersede' | 'group-fresh' | 'expire';

interface Planned {
  readonly index: number;
  readonly kind: Kind;
  readonly key: string;
  readonly body: Record<string, unknown>;
}

interface Tracked {
  readonly planned: Planned;
  /** Which stack process answered the enqueue (and the follow-up), with what, when (for the report). */
  acceptedBy: string;
  /** When the message is due, from the enqueue's answer (ms). */
  readonly sendAtMs: number;
  id: string;
  rev: number;
  expectedFate: ExpectedFate;
}

/** The workload, reproducible from the seed. */
export function planWorkload(count: number, random: () => number, runId: string, scale = 1): Planned[] {
  const between = (low: number, high: number) => {
    const [from, to] = [Math.round(low * scale), Math.round(high * scale)];
    return from + Math.floor(random() * (to - from + 1));
  };
  const direct = directDelayMax(scale);
  // Longer than the direct maximum: through the Scheduler emulator, fired `lead` early.
  const later = () => direct + 2 + Math.floor(random() * Math.max(1, Math.round(22 * scale)));
  const plans: Planned[] = [];
  for (let index = 0; index < count; index += 1) {
    const roll = random();
    const kind: Kind =
      roll < 0.33
        ? 'immediate'
        : roll < 0.6
          ? 'short'
          : roll < 0.8
            ? 'long'
            : roll < 0.85
              ? 'cancel'
              : roll < 0.9
                ? 'reschedule'
                : roll < 0.94
                  ? 'supersede'
                  : roll < 0.97
                    ? 'group-fresh'
                    : 'expire';
    const body: Record<string, unknown> = {
      to: [kind === 'expire' ? `expire-${index}@chaos.test` : `r${index}@chaos.test`],
      subject: `chaos ${runId} #${index}`,
      text: `message ${index} of chaos run ${runId}`,
      tags: { kind },
    };
    if (random() < 0.1) body.on_ambiguous = 'hold';
    switch (kind) {
      case 'immediate':
        break;
      case 'short':
        body.delay_seconds = 1 + Math.floor(random() * direct);
        break;
      case 'long':
        body.delay_seconds = later();
        break;
      case 'cancel':
        body.delay_seconds = between(20, 40);
        break;
      case 'reschedule':
        body.delay_seconds = between(20, 40);
        break;
      case 'supersede':
        body.delay_seconds = between(25, 40);
        body.group = { key: `chaos-${runId}-g${index}`, version: 1 };
        break;
      case 'group-fresh':
        body.delay_seconds = between(0, 5);
        body.group = { key: `chaos-${runId}-fresh${index}`, version: 3 };
        break;
      case 'expire':
        // send_at and not_after are set at enqueue time (see datedBody): due in 0–3 s, 4 s to live.
        body.delay_seconds = between(0, 3);
        break;
    }
    plans.push({ index, kind, key: `chaos-${runId}-${index}`, body });
  }
  return plans;
}

/** An expiring message gets absolute times when it is sent (the plan is made before the stack is up). */
function datedBody(planned: Planned): Planned {
  if (planned.kind !== 'expire') return planned;
  const { delay_seconds: delay, ...rest } = planned.body;
  const sendAt = Date.now() + Number(delay) * 1000;
  return {
    ...planned,
    body: {
      ...rest,
      send_at: new Date(sendAt).toISOString(),
      not_after: new Date(sendAt + 4000).toISOString(),
    },
  };
}

const reply = (code: number, message: string): SmtpReply => ({ code, message });

/**
 * The SMTP fault script: one behaviour per mail transaction, in order; the last one repeats. Each
 * behaviour carries its kind as its label, so the relay's record of a transaction says which fault
 * it injected. `slowRate` of the transactions get their 250 20–35 s (× `scale`) after the dot, in
 * runs of 1–6 consecutive transactions (a relay that scans or tarpits is slow for a while, and a
 * batch then meets several slow replies in a row).
 */
export function smtpScript(
  length: number,
  random: () => number,
  faultRate: number,
  stallRate: number,
  slowRate = 0,
  scale = 1,
): { behaviours: SmtpBehaviour[]; kinds: string[] } {
  // Messages meant to expire: the relay refuses their recipient (451) until the deadline passes.
  const expireRule = (address: string) =>
    address.startsWith('expire-') ? reply(451, '4.2.1 Mailbox busy, try later') : undefined;
  const behaviours: SmtpBehaviour[] = [];
  const kinds: string[] = [];
  const faults: [string, SmtpBehaviour][] = [
    // The expiring messages' own rule comes first: a 550 would rightly end one `failed`, not `expired`.
    ['rcpt-451', { rcptTo: (address) => expireRule(address) ?? reply(451, '4.2.1 Try again later') }],
    ['rcpt-550', { rcptTo: (address) => expireRule(address) ?? reply(550, '5.1.1 User unknown') }],
    ['data-451', { rcptTo: expireRule, afterData: reply(451, '4.3.0 Temporary failure') }],
    ['data-554', { rcptTo: expireRule, afterData: reply(554, '5.6.0 Content rejected') }],
    ['data-drop', { rcptTo: expireRule, afterData: 'drop' }],
    ['data-drop', { rcptTo: expireRule, afterData: 'drop' }],
  ];
  const stalls: [string, SmtpBehaviour][] = [
    ['rcpt-stall', { rcptTo: 'stall' }],
    ['data-stall', { rcptTo: expireRule, afterData: 'stall' }],
  ];
  const slowMs = () => {
    const [low, high] = [SLOW_RELAY_SECONDS.min * 1000 * scale, SLOW_RELAY_SECONDS.max * 1000 * scale];
    return Math.round(low + random() * (high - low));
  };
  const slowRun = { longest: 6, left: 0 };
  // A run starts with this probability, so that `slowRate` of all transactions are slow.
  const slowStart = slowRate / ((1 + slowRun.longest) / 2);
  for (let index = 0; index < length; index += 1) {
    const roll = random();
    if (slowRun.left === 0 && roll >= stallRate + faultRate && roll < stallRate + faultRate + slowStart) {
      slowRun.left = 1 + Math.floor(random() * slowRun.longest);
    }
    const slow = slowRun.left > 0;
    if (slow) slowRun.left -= 1;
    const pick: [string, SmtpBehaviour] | undefined = slow
      ? ['data-slow', { rcptTo: expireRule, afterData: { acceptAfterMs: slowMs() } }]
      : roll < stallRate
        ? stalls[Math.floor(random() * stalls.length)]
        : roll < stallRate + faultRate
          ? faults[Math.floor(random() * faults.length)]
          : undefined;
    const kind = pick?.[0] ?? 'accept';
    kinds.push(kind);
    behaviours.push({ ...(pick?.[1] ?? { rcptTo: expireRule }), label: kind });
  }
  kinds.push('accept');
  behaviours.push({ rcptTo: expireRule, label: 'accept' });
  return { behaviours, kinds };
}

/** The stack process that is up now; requests wait for it across kills and restarts. */
class CurrentStack {
  private child: StackChild | undefined;
  private ready: Promise<StackChild> | undefined;
  private sender: SenderChild | undefined;
  /** The sender process being started (after a sender kill, or with a new stack). */
  private senderStarting: Promise<void> | undefined;
  private readonly retired: StackStats[] = [];
  private readonly retiredSenders: SenderStats[] = [];
  private readonly retiredFaults: FaultLine[] = [];
  /** Every SIGKILL this run dealt, timed just before the signal went. */
  readonly kills: KillRecord[] = [];

  /**
   * @param senderEnv when given, the sender runs in its own process (`chaos/senderProcess.ts`) with
   *   the stack's function environment plus these variables, so that it can be SIGKILLed alone.
   */
  constructor(
    private readonly env: () => Record<string, string>,
    private readonly senderEnv?: () => Record<string, string>,
  ) {}

  /** Starts a stack process; a failed start (e.g. a handler mid-edit in a shared checkout) is tried again. */
  async start(): Promise<StackChild> {
    for (let attempt = 1; ; attempt += 1) {
      this.ready = (async () => {
        const child = await startStackChild({
          ...this.env(),
          ...(this.senderEnv ? { CHAOS_SENDER: 'external' } : {}),
        });
        if (this.senderEnv) {
          try {
            this.sender = await this.startSender(child);
          } catch (error) {
            await child.kill();
            throw error;
          }
        }
        return child;
      })();
      try {
        this.child = await this.ready;
        return this.child;
      } catch (error) {
        this.ready = undefined;
        if (attempt >= 3) throw error;
        await sleep(2000);
      }
    }
  }

  private startSender(stack: StackChild): Promise<SenderChild> {
    return startSenderChild({
      ...stack.endpoints.functionEnvironment,
      ...(this.senderEnv?.() ?? {}),
    });
  }

  async get(): Promise<StackChild> {
    for (;;) {
      if (this.child) return this.child;
      if (this.ready) return this.ready;
      await sleep(100);
    }
  }

  /** SIGKILL the stack's whole process group (and the sender process), as a crash would. */
  kill(): Promise<void> {
    return this.retire('kill');
  }

  stop(): Promise<void> {
    return this.retire('stop');
  }

  /**
   * SIGKILL the sender process alone — the signal is sent before this returns, so a caller can
   * place it at an exact moment of an SMTP transaction — then start a new one against the same
   * stack. False when no sender process is up (one is starting, or the stack is down).
   */
  killSender(onRestarted: (error?: unknown) => void): boolean {
    const sender = this.sender;
    const stack = this.child;
    if (!sender || !stack || this.senderStarting) return false;
    this.sender = undefined;
    this.kills.push({ kind: 'sender-sigkill', atMs: Date.now() });
    const dying = sender.kill();
    this.senderStarting = (async () => {
      await dying;
      this.retiredSenders.push(sender.stats());
      this.retiredFaults.push(...sender.faults());
      try {
        // The stack may have been killed meanwhile: then its restart brings its own sender.
        if (this.child === stack) this.sender = await this.startSender(stack);
        onRestarted();
      } catch (error) {
        onRestarted(error);
      } finally {
        this.senderStarting = undefined;
      }
    })();
    return true;
  }

  private async retire(how: 'kill' | 'stop'): Promise<void> {
    const child = this.child;
    const sender = this.sender;
    this.child = undefined;
    this.ready = undefined;
    this.sender = undefined;
    await this.senderStarting;
    const lateSender = this.sender as SenderChild | undefined;
    this.sender = undefined;
    // One entry per stack kill, timed at its first signal: the sender (its own process or the
    // stack's) dies with that one.
    if (how === 'kill' && (sender || lateSender || child))
      this.kills.push({ kind: 'stack-sigkill', atMs: Date.now() });
    for (const process of [sender, lateSender]) {
      if (!process) continue;
      await process[how]();
      this.retiredSenders.push(process.stats());
      this.retiredFaults.push(...process.faults());
    }
    if (!child) return;
    await child[how]();
    this.retired.push(child.stats());
    this.retiredFaults.push(...child.faults());
  }

  /** The whole-call DynamoDB faults injected in every process so far. */
  faults(): FaultLine[] {
    return [
      ...this.retiredFaults,
      ...(this.child ? this.child.faults() : []),
      ...(this.sender ? this.sender.faults() : []),
    ];
  }

  /** Sender invocations the local runners killed at their function timeout, in every process so far. */
  timeoutKills(): TimeoutKill[] {
    const all = [...this.retired, ...(this.child ? [this.child.stats()] : [])];
    const senders = [...this.retiredSenders, ...(this.sender ? [this.sender.stats()] : [])];
    return [...all, ...senders].flatMap((stats) => stats.timeoutKills ?? []);
  }

  totals() {
    const all = [...this.retired, ...(this.child ? [this.child.stats()] : [])];
    const senders = [...this.retiredSenders, ...(this.sender ? [this.sender.stats()] : [])];
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    return {
      throttled: sum(all.map((stats) => stats.throttled)) + sum(senders.map((stats) => stats.throttled)),
      dynamodbCalls:
        sum(all.map((stats) => stats.dynamodbCalls)) + sum(senders.map((stats) => stats.dynamodbCalls)),
      replayedBatches: sum(all.map((stats) => stats.replays.batches)),
      replayedRecords: sum(all.map((stats) => stats.replays.records)),
      scheduleFires: sum(all.map((stats) => stats.scheduler?.fires ?? 0)),
      scheduleFiredTwice: sum(all.map((stats) => stats.scheduler?.firedTwice ?? 0)),
      scheduleLate: sum(all.map((stats) => stats.scheduler?.late ?? 0)),
    };
  }
}

interface ApiAnswer {
  readonly pid: number;
  readonly tries: number;
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/**
 * One API call, retried through kills and restarts (a connection error, a 5xx such as a throttle the
 * SDK gave up on): safe because every call the run makes is idempotent (enqueue by its key).
 */
async function callApi(
  stacks: CurrentStack,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  counters?: { retries: number; serverErrors: number },
): Promise<ApiAnswer> {
  for (let attempt = 0; ; attempt += 1) {
    const stack = await stacks.get();
    try {
      const response = await fetch(`${stack.endpoints.apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${stack.endpoints.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      if (response.status >= 500) {
        if (counters) counters.serverErrors += 1;
        throw new Error(`${response.status} ${text.slice(0, 200)}`);
      }
      return {
        pid: stack.endpoints.pid,
        tries: attempt + 1,
        status: response.status,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        headers: response.headers,
      };
    } catch (error) {
      if (counters) counters.retries += 1;
      if (attempt > 200) throw error;
      await sleep(250);
    }
  }
}

async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const item = items[next];
        next += 1;
        if (item === undefined) return;
        await work(item);
      }
    }),
  );
}

export async function runChaos(options: ChaosOptions): Promise<ChaosOutcome> {
  const log = options.log ?? ((line: string) => console.log(line));
  const startedAt = Date.now();
  const random = seededRandom(options.seed);
  const runId = `${options.seed.toString(36)}${startedAt.toString(36)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'postdate-chaos-'));
  const smtp: TestSmtpServer = await startSmtpServer({
    credentials: { username: SMTP_USER, password: SMTP_PASSWORD },
  });
  const scale = options.timeScale ?? 1;
  const script = smtpScript(
    options.messages * 3,
    random,
    options.smtpFaultRate,
    options.stallRate,
    options.slowRelayRate ?? 0,
    scale,
  );
  smtp.script(...script.behaviours);
  // The relay is reached through a tap that reports the SMTP moments the sender kills aim at.
  const senderKills = options.senderKills ?? 0;
  let onSmtpMoment: (moment: SmtpMoment) => void = () => undefined;
  const tap = await startSmtpTap({
    targetHost: smtp.host,
    targetPort: smtp.port,
    onMoment: (moment) => onSmtpMoment(moment),
  });

  let authPhase = options.authFailureSeconds > 0;
  // The sender's DynamoDB faults, wherever it runs (the stack process, or the sender process and
  // its sandboxes, whose preload reads them from the environment).
  const senderFaultEnv = {
    CHAOS_THROTTLE_RATE: String(options.throttleRate),
    CHAOS_OUTCOME_WRITE_FAILURE_RATE: String(options.outcomeWriteFailureRate ?? 0),
    CHAOS_READ_FAILURE_RATE: String(options.readFailureRate ?? 0),
  };
  const timingEnv = {
    ...compressedTime(scale),
    ...(options.maxSendRate === undefined ? {} : { POSTDATE_MAX_SEND_RATE: String(options.maxSendRate) }),
  };
  const smtpEnv = () => ({
    SMTP_HOST: tap.host,
    SMTP_PORT: String(tap.port),
    SMTP_USER,
    SMTP_PASS: authPhase ? 'chaos-wrong-password' : SMTP_PASSWORD,
    POWERTOOLS_LOG_LEVEL: 'ERROR',
  });
  const stacks = new CurrentStack(
    () => ({
      ...timingEnv,
      ...senderFaultEnv,
      CHAOS_DATA_DIR: dataDir,
      CHAOS_REPLAY_RATE: String(options.replayRate),
      CHAOS_SCHEDULER_FIRE_TWICE_RATE: String(options.schedulerFireTwiceRate ?? 0),
      CHAOS_SCHEDULER_LATE_RATE: String(options.schedulerLateRate ?? 0),
      CHAOS_SCHEDULER_LATE_MS: String(options.schedulerLateMs ?? 5000),
      POSTDATE_API_KEY: API_KEY,
      ...smtpEnv(),
    }),
    senderKills > 0 ? () => ({ ...timingEnv, ...smtpEnv(), ...senderFaultEnv }) : undefined,
  );

  const counters = { retries: 0, serverErrors: 0 };
  const figures = {
    replayedEnqueues: 0,
    replayMismatches: [] as string[],
    cancelsAccepted: 0,
    cancelsRefused: 0,
    reschedulesAccepted: 0,
    reschedulesRefused: 0,
    groupsRaised: 0,
    lateGroupRaises: 0,
    expiringRefused: 0,
    duplicateCopies: 0,
    staleCopies: 0,
    kills: [] as { atSeconds: number; statesBefore: Record<string, number> }[],
    senderKills: [] as { atSeconds: number; moment: SmtpMoment | 'timeout'; restartSeconds?: number }[],
    senderRestartFailures: 0,
  };
  const tracked: Tracked[] = [];
  let finished = false;
  try {
    let stack = await stacks.start();
    log(
      `chaos: stack up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (${stack.endpoints.apiUrl}), ${options.messages} messages, seed ${options.seed}`,
    );

    const plans = planWorkload(options.messages, random, runId, scale);
    let enqueued = 0;

    // Duplicate (and stale) SQS copies while the run goes on.
    let copiesTried = 0;
    const duplicator = (async () => {
      let sqs: { client: SQSClient; endpoint: string } | undefined;
      while (!finished) {
        await sleep(200);
        const current = await stacks.get();
        if (!sqs || sqs.endpoint !== current.endpoints.sqsEndpoint) {
          sqs?.client.destroy();
          sqs = {
            endpoint: current.endpoints.sqsEndpoint,
            client: new SQSClient({
              region: 'us-east-1',
              endpoint: current.endpoints.sqsEndpoint,
              credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
              maxAttempts: 1,
            }),
          };
        }
        // `duplicateCopyRate` copies per accepted message in all, most of them of messages accepted
        // lately (likely still in flight, where a copy races the real one), some of any message.
        const wanted = Math.min(50, Math.floor(tracked.length * options.duplicateCopyRate) - copiesTried);
        for (let index = 0; index < wanted && tracked.length > 0; index += 1) {
          copiesTried += 1;
          const recent = random() < 0.7;
          const from = recent ? Math.max(0, tracked.length - 200) : 0;
          const message = tracked[from + Math.floor(random() * (tracked.length - from))];
          if (!message) continue;
          const stale = message.rev > 1 && random() < 0.5;
          const rev = stale ? message.rev - 1 : message.rev;
          try {
            await sqs.client.send(
              new SendMessageCommand({
                QueueUrl: current.endpoints.sendQueueUrl,
                MessageBody: JSON.stringify({ v: 1, id: message.id, rev }),
                DelaySeconds: Math.floor(random() * 5),
              }),
            );
            if (stale) figures.staleCopies += 1;
            else figures.duplicateCopies += 1;
          } catch {
            // The stack is being killed; the next round uses the new one.
          }
        }
      }
      sqs?.client.destroy();
    })();

    // Kills and restarts, spread over the enqueue phase.
    // The kill that ends the AUTH-failure phase counts as one of `kills`.
    const midRunKills = Math.max(0, options.kills - (authPhase ? 1 : 0));
    const killPoints = Array.from({ length: midRunKills }, (_, index) =>
      Math.floor((options.messages * (index + 1)) / (midRunKills + 1)),
    );
    const chaosMonkey = (async () => {
      if (authPhase) {
        await sleep(options.authFailureSeconds * 1000);
        authPhase = false;
        log(
          `chaos: SIGKILL of the stack ending the AUTH-failure phase (${smtp.authAttempts.filter((a) => !a.ok).length} logins refused)`,
        );
        figures.kills.push({
          atSeconds: (Date.now() - startedAt) / 1000,
          statesBefore: await statesNow(stacks),
        });
        await stacks.kill();
        stack = await stacks.start();
      }
      for (const point of killPoints) {
        while (enqueued < point && !finished) await sleep(100);
        if (finished) return;
        // Wait (a little) until messages are in every non-final state, so that the kill lands
        // with some scheduled, some mid-send, some backing off and some sent.
        let states = await statesNow(stacks);
        // A restarted sender cold-starts its sandboxes: give it time to have sent something.
        const waitUntil = Date.now() + 20_000;
        while (!finished && Date.now() < waitUntil && Object.values(states).some((count) => count === 0)) {
          await sleep(200);
          states = await statesNow(stacks);
        }
        figures.kills.push({ atSeconds: (Date.now() - startedAt) / 1000, statesBefore: states });
        log(
          `chaos: SIGKILL of the stack at ${enqueued}/${options.messages} enqueued (${describeStates(states)})`,
        );
        await stacks.kill();
        stack = await stacks.start();
        log(`chaos: stack restarted on the data dir (${stack.endpoints.apiUrl})`);
      }
    })();

    // Sender kills, spread over the enqueue phase between the stack kills: each is armed at its
    // point and lands on the next SMTP moment the dice pick (or after 10 s without one).
    const senderKillPoints = Array.from({ length: senderKills }, (_, index) =>
      Math.floor((options.messages * (index + 0.5)) / (senderKills + 0.5)),
    );
    const senderMonkey = (async () => {
      for (const point of senderKillPoints) {
        while (enqueued < point && !finished) await sleep(100);
        if (finished) return;
        const armedAt = Date.now();
        const killed = await new Promise<SmtpMoment | 'timeout' | undefined>((resolve) => {
          const attempt = (moment: SmtpMoment | 'timeout') => {
            if (moment !== 'timeout' && random() >= 0.3) return;
            const atMs = Date.now();
            const fired = stacks.killSender((error) => {
              if (error) figures.senderRestartFailures += 1;
              const entry = figures.senderKills.find((kill) => kill.atSeconds === (atMs - startedAt) / 1000);
              if (entry) entry.restartSeconds = (Date.now() - atMs) / 1000;
            });
            if (!fired) return;
            figures.senderKills.push({ atSeconds: (atMs - startedAt) / 1000, moment });
            onSmtpMoment = () => undefined;
            clearInterval(timer);
            resolve(moment);
          };
          onSmtpMoment = attempt;
          const timer = setInterval(() => {
            if (finished) {
              onSmtpMoment = () => undefined;
              clearInterval(timer);
              resolve(undefined);
            } else if (Date.now() - armedAt > 10_000) attempt('timeout');
          }, 250);
        });
        if (killed)
          log(
            `chaos: SIGKILL of the sender process alone (${killed}) at ${enqueued}/${options.messages} enqueued`,
          );
      }
    })();

    await forEachConcurrently(plans, options.concurrency, async (plan) => {
      const planned = datedBody(plan);
      const answer = await callApi(
        stacks,
        'POST',
        '/v1/messages',
        planned.body,
        { 'idempotency-key': planned.key },
        counters,
      );
      if (answer.status === 400 && planned.kind === 'expire') {
        // Its 4 s window passed while a kill held the request up: the API rightly refuses a
        // not_after in the past. Not accepted, so not tracked (its recipient never accepts mail).
        figures.expiringRefused += 1;
        return;
      }
      if (answer.status !== 202 && answer.status !== 200)
        throw new Error(
          `enqueue #${planned.index} answered ${answer.status}: ${JSON.stringify(answer.body)}`,
        );
      const message: Tracked = {
        planned,
        acceptedBy: `${answer.status} from stack process ${answer.pid} after ${answer.tries} tr${answer.tries === 1 ? 'y' : 'ies'} at ${new Date().toISOString()}`,
        sendAtMs: Date.parse(String(answer.body.send_at)),
        id: String(answer.body.id),
        rev: Number(answer.body.rev ?? 1),
        expectedFate:
          planned.kind === 'supersede' ? 'superseded' : planned.kind === 'expire' ? 'expired' : 'send',
      };
      tracked.push(message);
      enqueued += 1;
      if (random() < 0.05) {
        const again = await callApi(
          stacks,
          'POST',
          '/v1/messages',
          planned.body,
          { 'idempotency-key': planned.key },
          counters,
        );
        figures.replayedEnqueues += 1;
        if (again.status !== 200 || again.body.id !== message.id) figures.replayMismatches.push(planned.key);
      }
      await followUp(stacks, message, random, figures, counters);
    });
    log(
      `chaos: ${tracked.length} accepted in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; waiting for terminal states`,
    );
    await chaosMonkey;
    await senderMonkey;

    const deadline = Date.now() + options.deadlineSeconds * 1000;
    let pending = await nonTerminal(stacks);
    while (pending.length > 0 && Date.now() < deadline) {
      await sleep(2000);
      pending = await nonTerminal(stacks);
      log(
        `chaos: not terminal yet: ${pending.join(', ') || 'none'} (${((Date.now() - startedAt) / 1000).toFixed(0)} s)`,
      );
    }
    // Let copies still in flight (a duplicate being read by the server) land in the SMTP log.
    await sleep(1500);
    finished = true;
    await duplicator;

    const views: Record<string, FinalView | null> = {};
    await forEachConcurrently(tracked, options.concurrency * 2, async (message) => {
      const answer = await callApi(stacks, 'GET', `/v1/messages/${message.id}`, undefined, {}, counters);
      if (answer.status !== 200) {
        message.acceptedBy += `; final GET answered ${answer.status}; in the table: ${await itemsInTable(stacks, message.id)}`;
      }
      views[message.id] =
        answer.status === 200
          ? {
              id: message.id,
              status: String(answer.body.status),
              history: (answer.body.history as FinalView['history'] | undefined) ?? [],
            }
          : null;
    });
    const totals = stacks.totals();
    await stacks.stop();

    const accepted: AcceptedMessage[] = tracked.map((message) => ({
      id: message.id,
      idempotencyKey: message.planned.key,
      expectedFate: message.expectedFate,
      acceptedBy: message.acceptedBy,
    }));
    const transactions = joinTransactions(tap.transactions(), smtp.transactionLog);
    const timeoutKills = stacks.timeoutKills();
    const kills: KillRecord[] = [
      ...stacks.kills,
      ...timeoutKills.filter((kill) => /sender/.test(kill.functionName)).map(timeoutKillRecord),
    ].sort((a, b) => a.atMs - b.atMs);
    const result = checkRun({ accepted, views, transactions, kills });
    const injected = countBy(stacks.faults().map((fault) => fault.fault));
    // Slow transactions whose dot went (the sender may have given up before the 250: hole 7).
    const slowReplies = transactions.filter(
      (transaction) => transaction.fault === 'data-slow' && transaction.finalDotAtMs !== null,
    );
    const sends = transactions.filter((transaction) => transaction.outcome === 'accepted').length;
    const used = script.kinds.slice(0, smtp.transactions);
    const smtpFaults: Record<string, number> = {};
    for (const kind of used) smtpFaults[kind] = (smtpFaults[kind] ?? 0) + 1;
    const report = {
      run: {
        messages: options.messages,
        seed: options.seed,
        seconds: Math.round((Date.now() - startedAt) / 100) / 10,
        compressedTime: compressedTime(scale),
        timeScale: scale,
        workload: countBy(tracked.map((message) => message.planned.kind)),
      },
      faults: {
        smtpTransactions: smtp.transactions,
        smtpScript: smtpFaults,
        authRefused: smtp.authAttempts.filter((attempt) => !attempt.ok).length,
        duplicateSqsCopies: figures.duplicateCopies,
        staleSqsCopies: figures.staleCopies,
        dynamodbThrottled: totals.throttled,
        dynamodbCalls: totals.dynamodbCalls,
        replayedStreamBatches: totals.replayedBatches,
        replayedStreamRecords: totals.replayedRecords,
        outcomeWritesFailed: injected['outcome-write'] ?? 0,
        outcomeWritesFailedShareOfSends: sends === 0 ? 0 : (injected['outcome-write'] ?? 0) / sends,
        bodyReadsFailed: injected['body-read'] ?? 0,
        groupReadsFailed: injected['group-read'] ?? 0,
        wholeCallFaults: stacks.faults(),
        slowRelayTransactions: slowReplies.length,
        slowRelayRepliesHeard: slowReplies.filter((t) => t.reply?.delivered === true).length,
        slowRelaySecondsMax:
          Math.round(
            Math.max(0, ...slowReplies.map((t) => (t.reply ? t.reply.atMs - (t.finalDotAtMs ?? 0) : 0))) /
              100,
          ) / 10,
        timeoutKills: timeoutKills.length,
        maxSendRate: options.maxSendRate ?? null,
        peakMailFromPerSecond: peakPerSecond(transactions.map((transaction) => transaction.mailFromAtMs)),
        scheduleFires: totals.scheduleFires,
        scheduleFiredTwice: totals.scheduleFiredTwice,
        scheduleLate: totals.scheduleLate,
        stackKills: figures.kills,
        senderKills: figures.senderKills,
        senderRestartFailures: figures.senderRestartFailures,
        apiRetries: counters.retries,
        api5xx: counters.serverErrors,
      },
      client: {
        replayedEnqueues: figures.replayedEnqueues,
        replayMismatches: figures.replayMismatches,
        cancelsAccepted: figures.cancelsAccepted,
        cancelsRefused: figures.cancelsRefused,
        reschedulesAccepted: figures.reschedulesAccepted,
        reschedulesRefused: figures.reschedulesRefused,
        groupsRaised: figures.groupsRaised,
        lateGroupRaises: figures.lateGroupRaises,
        expiringRefused: figures.expiringRefused,
      },
      // Every SMTP transaction and every kill, so that `tsx chaos/check.ts` can check the run again.
      input: { accepted, views, transactions, kills },
    };
    log(
      `chaos: faults: smtp ${JSON.stringify(smtpFaults)}, AUTH refused ${report.faults.authRefused}, ` +
        `dup copies ${figures.duplicateCopies}, stale copies ${figures.staleCopies}, throttled ${totals.throttled}/${totals.dynamodbCalls} DynamoDB calls, ` +
        `replayed stream batches ${totals.replayedBatches}, schedules fired ${totals.scheduleFires} (twice ${totals.scheduleFiredTwice}, late ${totals.scheduleLate}), ` +
        `stack kills ${figures.kills.length}, sender kills ${figures.senderKills.length} (${figures.senderKills.map((kill) => kill.moment).join(', ')}), ` +
        `timeout kills ${timeoutKills.length}, outcome writes failed ${report.faults.outcomeWritesFailed} ` +
        `(${(report.faults.outcomeWritesFailedShareOfSends * 100).toFixed(1)} % of ${sends} sends), ` +
        `body reads failed ${report.faults.bodyReadsFailed}, group reads failed ${report.faults.groupReadsFailed}, ` +
        `slow relay ${slowReplies.length} after the dot (${report.faults.slowRelayRepliesHeard} replies heard, max ${report.faults.slowRelaySecondsMax} s), ` +
        `send rate limit ${options.maxSendRate ?? 'off'}/s (peak ${report.faults.peakMailFromPerSecond} MAIL FROM/s), API 5xx ${counters.serverErrors}`,
    );
    let exitCode = emitReport(
      result,
      options.reportPath,
      report,
      `Postdate chaos run (${options.messages} messages, seed ${options.seed})`,
      log,
    );
    if (figures.replayMismatches.length > 0) {
      log(
        `chaos: FAIL: ${figures.replayMismatches.length} idempotent replays did not return the original message`,
      );
      exitCode = 1;
    }
    return { result, figures: report, exitCode };
  } finally {
    finished = true;
    await stacks.kill().catch(() => undefined);
    await tap.close();
    await smtp.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The checker's transactions: the tap's record of each (client side, times) joined with the relay's
 * (the fault it injected, whether it read the body) by the tap's upstream port — the relay's remote
 * port — and the transaction's place on its connection.
 */
export function joinTransactions(
  tapped: readonly TapTransaction[],
  relayed: readonly TransactionRecord[],
): SmtpTransaction[] {
  const byPort = new Map<number, TransactionRecord[]>();
  for (const record of relayed) {
    if (record.remotePort === undefined) continue;
    const list = byPort.get(record.remotePort) ?? [];
    list.push(record);
    byPort.set(record.remotePort, list);
  }
  // A port is reused by later connections: take the relay's records that began within this
  // connection's life, in order.
  const onConnection = new Map<number, TransactionRecord[]>();
  for (const transaction of tapped) {
    if (onConnection.has(transaction.connection) || transaction.upstreamPort === undefined) continue;
    const opened = transaction.connectionOpenedAtMs;
    const closed = transaction.closedAtMs ?? Number.POSITIVE_INFINITY;
    onConnection.set(
      transaction.connection,
      (byPort.get(transaction.upstreamPort) ?? []).filter(
        (record) => record.startedAtMs >= opened - 50 && record.startedAtMs <= closed + 50,
      ),
    );
  }
  return tapped.map((transaction) => {
    const record = onConnection.get(transaction.connection)?.[transaction.index];
    return {
      connection: transaction.connection,
      index: transaction.index,
      postdateId: transaction.postdateId ?? record?.received?.postdateId ?? null,
      messageId: transaction.messageId ?? record?.received?.messageId ?? null,
      fault: record?.label ?? (record ? 'accept' : '(not seen by the relay)'),
      outcome: record?.received?.outcome ?? null,
      mailFromAtMs: transaction.mailFromAtMs,
      dataCommandAtMs: transaction.dataCommandAtMs,
      finalDotAtMs: transaction.finalDotAtMs,
      reply: transaction.reply,
      clientCommandAfterDotAtMs: transaction.clientCommandAfterDotAtMs,
      closedAtMs: transaction.closedAtMs,
      closedBy: transaction.closedBy,
    };
  });
}

function timeoutKillRecord(kill: TimeoutKill): KillRecord {
  return {
    kind: 'function-timeout',
    atMs: kill.killedAt,
    startedAtMs: kill.startedAt,
    functionName: kill.functionName,
    ...(Array.isArray(kill.records) ? { ids: kill.records } : {}),
  };
}

/** The most events that fell in one second. */
function peakPerSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let peak = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to += 1) {
    while ((sorted[to] ?? 0) - (sorted[from] ?? 0) >= 1000) from += 1;
    peak = Math.max(peak, to - from + 1);
  }
  return peak;
}

/** Cancels, reschedules and group raises, right after the enqueue; the expectation follows the answer. */
async function followUp(
  stacks: CurrentStack,
  message: Tracked,
  random: () => number,
  figures: {
    cancelsAccepted: number;
    cancelsRefused: number;
    reschedulesAccepted: number;
    reschedulesRefused: number;
    groupsRaised: number;
    lateGroupRaises: number;
  },
  counters: { retries: number; serverErrors: number },
): Promise<void> {
  switch (message.planned.kind) {
    case 'cancel': {
      const answer = await callApi(stacks, 'DELETE', `/v1/messages/${message.id}`, undefined, {}, counters);
      if (answer.status === 200) {
        message.expectedFate = 'cancelled';
        figures.cancelsAccepted += 1;
      } else figures.cancelsRefused += 1;
      return;
    }
    case 'reschedule': {
      const sendAt = new Date(Date.now() + (2 + Math.floor(random() * 14)) * 1000).toISOString();
      const answer = await callApi(
        stacks,
        'PATCH',
        `/v1/messages/${message.id}`,
        { send_at: sendAt },
        {},
        counters,
      );
      if (answer.status === 200) {
        message.rev = Number(answer.body.rev ?? message.rev + 1);
        figures.reschedulesAccepted += 1;
      } else figures.reschedulesRefused += 1;
      return;
    }
    case 'supersede': {
      const group = message.planned.body.group as { key: string };
      const answer = await callApi(
        stacks,
        'PUT',
        `/v1/groups/${encodeURIComponent(group.key)}`,
        { version: 2 },
        {},
        counters,
      );
      if (answer.status !== 200) throw new Error(`PUT group answered ${answer.status}`);
      figures.groupsRaised += 1;
      message.acceptedBy += `; group raised by process ${answer.pid} at ${new Date().toISOString()}`;
      // The sender checks the group just before sending: a raise the client saw answered only
      // shortly before the message was due (a kill delayed it) may or may not come in time.
      if (Date.now() > message.sendAtMs - 2000) {
        message.expectedFate = 'send-or-superseded';
        figures.lateGroupRaises += 1;
      }
      return;
    }
    default:
      return;
  }
}

/**
 * For a message the API does not know: what the table itself holds under its partition (item kinds
 * and the state record's status), read past the API, so that a loss tells "never stored" apart from
 * "stored, but the API does not show it".
 */
async function itemsInTable(stacks: CurrentStack, id: string): Promise<string> {
  const stack = await stacks.get();
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: stack.endpoints.dynamodbEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const { Items = [] } = await client.send(
      new QueryCommand({
        TableName: stack.endpoints.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': KEY.partition },
        ExpressionAttributeValues: { ':pk': { S: messagePk(id) } },
        ConsistentRead: true,
      }),
    );
    if (Items.length === 0) return 'nothing';
    return Items.map(
      (item) => `${item[KEY.sort]?.S ?? '?'}${item.status?.S ? ` (${item.status.S})` : ''}`,
    ).join(', ');
  } catch (error) {
    return `unreadable (${error instanceof Error ? error.name : String(error)})`;
  } finally {
    client.destroy();
  }
}

const NON_TERMINAL = ['scheduled', 'sending', 'retrying'] as const;

/**
 * The non-terminal statuses that still hold a message, from a one-item page of the API's listing of
 * each: the wait only needs to know when none is left, and counting (a listing fans out over every
 * index shard for each page) every 2 s would load the stack it waits for.
 */
async function nonTerminal(stacks: CurrentStack): Promise<string[]> {
  const left: string[] = [];
  for (const status of NON_TERMINAL) {
    const answer = await callApi(stacks, 'GET', `/v1/messages?status=${status}&limit=1`, undefined);
    const items = Array.isArray(answer.body.items) ? answer.body.items.length : 0;
    if (items > 0 || typeof answer.body.next_cursor === 'string') left.push(status);
  }
  return left;
}

async function statesNow(stacks: CurrentStack): Promise<Record<string, number>> {
  const states: Record<string, number> = {};
  for (const status of [...NON_TERMINAL, 'sent']) states[status] = await countStatus(stacks, status, 500);
  return states;
}

async function countStatus(stacks: CurrentStack, status: string, atMost: number): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const query = `status=${status}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const answer = await callApi(stacks, 'GET', `/v1/messages?${query}`, undefined);
    const items = answer.body.items;
    count += Array.isArray(items) ? items.length : 0;
    cursor = typeof answer.body.next_cursor === 'string' ? answer.body.next_cursor : undefined;
  } while (cursor && count < atMost);
  return count;
}

function describeStates(states: Record<string, number>): string {
  return Object.entries(states)
    .map(([status, count]) => `${status} ${count >= 500 ? '500+' : count}`)
    .join(', ');
}

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

void TERMINAL_STATUSES;

async function main(argv: readonly string[]): Promise<number> {
  const program = new Command('chaos')
    .option('--messages <n>', 'messages to send', '10000')
    .option('--seed <n>', 'seed of the workload and the fault script', String(Date.now() % 1_000_000))
    .option(
      '--deadline <seconds>',
      'seconds to wait for terminal states after the last enqueue (default: max(120, N/10))',
    )
    .option('--kills <n>', 'SIGKILLs of the stack (including the one ending the AUTH-failure phase)', '3')
    .option('--auth-failure-seconds <n>', 'how long the first stack logs in with a wrong SMTP password', '8')
    .option('--smtp-fault-rate <r>', 'fraction of SMTP transactions with a 4xx/5xx/drop fault', '0.12')
    .option('--stall-rate <r>', 'fraction of SMTP transactions that stall past the timeout', '0.003')
    .option('--slow-relay-rate <r>', 'fraction of SMTP transactions answered 20–35 s after the dot', '0.005')
    .option(
      '--outcome-write-failure-rate <r>',
      'fraction of messages whose first outcome write fails on every SDK attempt',
      '0.03',
    )
    .option(
      '--read-failure-rate <r>',
      "fraction of the sender's body and group reads that fail whole",
      '0.02',
    )
    .option('--max-send-rate <n>', 'POSTDATE_MAX_SEND_RATE of the stack (0: unlimited)', '10')
    .option('--throttle-rate <r>', 'fraction of DynamoDB calls throttled', '0.03')
    .option('--replay-rate <r>', 'fraction of stream batches handed to the relay twice', '0.3')
    .option('--duplicate-rate <r>', 'extra SQS copies per accepted message (most of recent ones)', '1')
    .option('--scheduler-twice-rate <r>', 'fraction of schedule firings delivered twice', '0.2')
    .option(
      '--scheduler-late-rate <r>',
      'fraction of schedules fired late (0.5 s to --scheduler-late-ms)',
      '0.2',
    )
    .option('--scheduler-late-ms <n>', 'latest late firing, ms', '5000')
    .option('--sender-kills <n>', 'SIGKILLs of the sender process alone, at an SMTP moment', '4')
    .option('--concurrency <n>', 'client requests in flight', '8')
    .option('--time-scale <x>', 'multiplies the delays of the workload', '1')
    .option(
      '--out <file>',
      'JSON report',
      join(
        dirname(fileURLToPath(import.meta.url)),
        'reports',
        `chaos-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
      ),
    )
    .parse(['node', 'chaos', ...argv]);
  const opts = program.opts<Record<string, string | undefined>>();
  const messages = Number(opts.messages);
  const outcome = await runChaos({
    messages,
    seed: Number(opts.seed),
    // Past the last enqueue, a kill's leases must run out before the sweeper can take them over.
    deadlineSeconds: Number(
      opts.deadline ??
        Math.max(120, chaosTiming(Number(opts.timeScale)).leaseSeconds + 90, Math.ceil(messages / 10)),
    ),
    kills: Number(opts.kills),
    authFailureSeconds: Number(opts.authFailureSeconds),
    smtpFaultRate: Number(opts.smtpFaultRate),
    stallRate: Number(opts.stallRate),
    slowRelayRate: Number(opts.slowRelayRate),
    outcomeWriteFailureRate: Number(opts.outcomeWriteFailureRate),
    readFailureRate: Number(opts.readFailureRate),
    ...(Number(opts.maxSendRate) > 0 ? { maxSendRate: Number(opts.maxSendRate) } : {}),
    throttleRate: Number(opts.throttleRate),
    replayRate: Number(opts.replayRate),
    duplicateCopyRate: Number(opts.duplicateRate),
    schedulerFireTwiceRate: Number(opts.schedulerTwiceRate),
    schedulerLateRate: Number(opts.schedulerLateRate),
    schedulerLateMs: Number(opts.schedulerLateMs),
    senderKills: Number(opts.senderKills),
    concurrency: Number(opts.concurrency),
    timeScale: Number(opts.timeScale),
    reportPath: String(opts.out),
  });
  return outcome.exitCode;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
