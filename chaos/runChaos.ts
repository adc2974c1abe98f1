import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSmtpServer, type TestSmtpServer } from '../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../local/smtp/relayOutage.js';
import { COMPRESSED_TIME, compressedTime, keepWaiting, stallSeconds } from './chaosTiming.js';
import { type CheckInput, type CheckResult, checkRun } from './checker.js';
import { acrossRelays, checkerInput } from './checkerInput.js';
import { ChaosClient, type ChaosTenant } from './client.js';
import { CurrentStack } from './currentStack.js';
import { type KillContext, type KillFigures, killSenders, killStacks, type SmtpMomentHook } from './kills.js';
import { emitChaosReport } from './report.js';
import { seededRandom } from './seededRandom.js';
import { smtpScript } from './smtpFaultScript.js';
import { type SmtpTap, startSmtpTap } from './smtpTap.js';
import { type CopyFigures, sendExtraCopies } from './sqsCopies.js';
import { nonTerminal } from './stackStatus.js';
import { checkWebhooks, type WebhookCheckInput } from './webhookChecker.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhookReceiver.js';
import { setUpWebhookTenants } from './webhookSetup.js';
import { planWorkload } from './workload.js';

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
 * With `webhooks`, the messages are spread over two tenants, each with its endpoint on one real
 * receiver (chaos/webhookReceiver.ts) that answers a seeded share of the POSTs 500 and lets another
 * share stall past Postdate's 10 s attempt timeout (not compressed: the timeout is DESIGN §11's, not a
 * setting); after the messages are terminal the run waits for the events still on their way.
 *
 * The checker (chaos/checker.ts) reads only the harness's own record: the SMTP tap's transactions
 * joined with the relay's fault script, and the kill log (sender and stack SIGKILLs dealt here,
 * timeout kills reported by the stack and sender processes). The webhook checker
 * (chaos/webhookChecker.ts) reads the receiver's record beside what the clients observed.
 */

export interface ChaosOptions {
  readonly messages: number;
  readonly seed: number;
  /**
   * Wait at least this long after the last enqueue for terminal states; past it, while messages keep
   * becoming terminal (chaosTiming.ts `keepWaiting`), at most four times as long. The checker counts
   * the stragglers as lost.
   */
  readonly deadlineSeconds: number;
  /** SIGKILLs of the stack during the run (each followed by a restart on the data dir). */
  readonly kills: number;
  /** Run the first stack process with a wrong SMTP password for this long (0: none). */
  readonly authFailureSeconds: number;
  /**
   * A relay outage (issue 19 §1): once the relay has seen its first ten transactions, it answers every
   * connection 421 for this many seconds (0: none). No message may be dead or lost because of it.
   * @default 0
   */
  readonly relayOutageSeconds?: number;
  /**
   * Relays the stack sends through (docs/design.md §15 Failover across relays). With 2, each has its
   * own SMTP server, fault script, tap and outage proxy, listed in POSTDATE_RELAYS as `primary` and
   * `backup`, and the outage phase is one outage of each, overlapping by half: the primary goes
   * down (mail leaves through the backup), the backup goes down too (mail waits), the primary comes
   * back (mail returns to it), then the backup. @default 1
   */
  readonly relays?: 1 | 2;
  readonly smtpFaultRate: number;
  /**
   * Transactions the relay answers SES's `454 Throttling failure` after the dot, spread over the
   * first `messages` of its script (DESIGN §5 Rate: no attempt, the copy comes back). @default 0
   */
  readonly throttleReplies?: number;
  /**
   * Transactions the relay answers with the slowest 250 (35 s × time scale after the dot), each just
   * after a throttled one's place: a send that must outlast any shorter lease (DESIGN §5). @default 0
   */
  readonly slowReplies?: number;
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
  /**
   * A webhook receiver per tenant (two tenants): the share of POSTs it answers 500, the share it
   * stalls past the 10 s timeout, and how long to wait for the last events once every message is
   * terminal. Absent: no webhooks, one tenant.
   */
  readonly webhooks?: {
    readonly failureRate: number;
    readonly stallRate: number;
    readonly deadlineSeconds: number;
  };
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

const SMTP_USER = 'chaos';
const SMTP_PASSWORD = 'chaos-right-password';
const API_KEY = 'pd_chaos-run-key-000001';

export async function runChaos(options: ChaosOptions): Promise<ChaosOutcome> {
  const log = options.log ?? ((line: string) => console.log(line));
  const startedAt = Date.now();
  const random = seededRandom(options.seed);
  const runId = `${options.seed.toString(36)}${startedAt.toString(36)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'postdate-chaos-'));
  const scale = options.timeScale ?? 1;
  // The SMTP moments the sender kills aim at, reported by every relay's tap.
  const senderKills = options.senderKills ?? 0;
  const moments: SmtpMomentHook = { onMoment: () => undefined };
  // The first relay draws its fault script from the run's sequence (so one relay is what the seed
  // always made it); a second draws from its own.
  const relays: ChaosRelay[] = [await startChaosRelay('primary', random, options, moments)];
  if (options.relays === 2) {
    relays.push(await startChaosRelay('backup', seededRandom(options.seed ^ 0xbac0), options, moments));
  }
  const [first] = relays as [ChaosRelay, ...ChaosRelay[]];
  const { script, tap, outage } = first;

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
  const smtpEnv = (): Record<string, string> => {
    const pass = authPhase ? 'chaos-wrong-password' : SMTP_PASSWORD;
    if (relays.length === 1) {
      return {
        SMTP_HOST: outage.host,
        SMTP_PORT: String(outage.port),
        SMTP_USER,
        SMTP_PASS: pass,
        POWERTOOLS_LOG_LEVEL: 'ERROR',
      };
    }
    const list = relays.map((relay) => ({
      name: relay.name,
      host: relay.outage.host,
      port: relay.outage.port,
      secure: false,
      require_tls: false,
      user: SMTP_USER,
      pass,
    }));
    return { POSTDATE_RELAYS: JSON.stringify(list), POWERTOOLS_LOG_LEVEL: 'ERROR' };
  };
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
    () =>
      relays.flatMap((relay) =>
        relay.tap.openClientPorts().map((clientPort) => ({ relay: relay.name, clientPort })),
      ),
  );

  // The receiver draws from its own sequence, so the workload and the fault script stay what the
  // seed made them without webhooks.
  const receiver: WebhookReceiver | undefined = options.webhooks
    ? await startWebhookReceiver({
        random: seededRandom(options.seed ^ 0x5eed),
        failureRate: options.webhooks.failureRate,
        stallRate: options.webhooks.stallRate,
      })
    : undefined;
  let tenants: readonly ChaosTenant[] = [{ name: 'local' }];
  let client = new ChaosClient(stacks, random, tenants);
  const copies: CopyFigures = { duplicateCopies: 0, staleCopies: 0 };
  const killFigures: KillFigures = { stackKills: [], senderKills: [], senderRestartFailures: 0 };
  let finished = false;
  try {
    const stack = await stacks.start();
    log(
      `chaos: stack up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (${stack.endpoints.apiUrl}), ${options.messages} messages, seed ${options.seed}`,
    );
    if (receiver) {
      tenants = await setUpWebhookTenants(stacks, receiver);
      client = new ChaosClient(stacks, random, tenants);
      log(
        `chaos: webhook endpoints of ${tenants.map((tenant) => tenant.name).join(', ')} on port ${receiver.port}`,
      );
    }

    const plans = planWorkload(options.messages, random, runId, scale);
    let enqueued = 0;
    const copying = sendExtraCopies(
      stacks,
      client.tracked,
      options.duplicateCopyRate,
      random,
      () => finished,
      copies,
    );
    const killing: KillContext = {
      stacks,
      messages: options.messages,
      startedAt,
      random,
      log,
      enqueued: () => enqueued,
      finished: () => finished,
      tenants,
    };
    const stackKills = killStacks(
      killing,
      options.kills,
      authPhase
        ? {
            seconds: options.authFailureSeconds,
            end: () => {
              authPhase = false;
            },
            refusedLogins: () => refusedLogins(relays),
          }
        : undefined,
      killFigures,
    );
    const senderKilling = killSenders(killing, senderKills, moments, killFigures);

    const outageSeconds = options.relayOutageSeconds ?? 0;
    const outagePhase = (async () => {
      if (outageSeconds <= 0) return;
      // Once sending is under way (the tap saw its first transactions), so the outage meets traffic.
      const begin = Date.now();
      while (tap.transactions().length < 10 && Date.now() - begin < 120_000) await sleep(200);
      const second = relays[1];
      if (second === undefined) {
        await outage.set('down');
        log(`chaos: relay outage begins (${outageSeconds} s of 421 at the greeting)`);
        await sleep(outageSeconds * 1000);
        await outage.set('up');
        log(`chaos: relay outage over; ${outage.connections.down} connection attempts during it`);
        return;
      }
      // One outage of each relay, overlapping by half (ChaosOptions.relays).
      const half = (outageSeconds * 1000) / 2;
      await outage.set('down');
      log(
        `chaos: primary outage begins (${outageSeconds} s of 421 at the greeting); mail should leave through backup`,
      );
      await sleep(half);
      await second.outage.set('down');
      log(`chaos: backup outage begins (${outageSeconds} s); both relays down`);
      await sleep(half);
      await outage.set('up');
      log(
        `chaos: primary back (${outage.connections.down} connection attempts during its outage); backup still down`,
      );
      await sleep(half);
      await second.outage.set('up');
      log(`chaos: backup back (${second.outage.connections.down} connection attempts during its outage)`);
    })();
    await client.enqueueAll(plans, options.concurrency, () => {
      enqueued += 1;
    });
    log(
      `chaos: ${client.tracked.length} accepted in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; waiting for terminal states`,
    );
    await stackKills;
    await senderKilling;
    await outagePhase;

    // Past the deadline the run waits on while messages keep becoming terminal (keepWaiting).
    const waitStarted = Date.now();
    const deadlineAt = waitStarted + options.deadlineSeconds * 1000;
    const wait = {
      stallMs: stallSeconds(scale) * 1000,
      capAt: waitStarted + 4 * options.deadlineSeconds * 1000,
    };
    // Progress, by the harness's own record: the relays saw another transaction, or a status emptied.
    const transactions = () => relays.reduce((sum, relay) => sum + relay.smtp.transactions, 0);
    let pending = await nonTerminal(stacks, tenants);
    let lastProgressAt = waitStarted;
    let seen = transactions();
    while (keepWaiting({ ...wait, now: Date.now(), pending: pending.length, deadlineAt, lastProgressAt })) {
      await sleep(2000);
      const before = pending.length;
      pending = await nonTerminal(stacks, tenants);
      if (pending.length < before || transactions() > seen) lastProgressAt = Date.now();
      seen = transactions();
      log(
        `chaos: not terminal yet: ${pending.join(', ') || 'none'} (${((Date.now() - startedAt) / 1000).toFixed(0)} s)`,
      );
    }
    const terminalWait = {
      seconds: Math.round((Date.now() - waitStarted) / 1000),
      pastDeadlineSeconds: Math.max(0, Math.round((Date.now() - deadlineAt) / 1000)),
    };
    // Let copies still in flight (a duplicate being read by the server) land in the SMTP log.
    await sleep(1500);
    finished = true;
    await copying;

    const views = await client.finalViews(options.concurrency * 2);
    let webhookInput: WebhookCheckInput | undefined;
    if (receiver && options.webhooks) {
      const input = (shown = views, received = [...receiver.received]): WebhookCheckInput => ({
        tenants: tenants.map((tenant) => tenant.name),
        messages: client.tracked.map((message) => ({
          id: message.id,
          tenant: message.tenant,
          finalStatus: shown[message.id]?.status ?? null,
          outcomes: (shown[message.id]?.history ?? []).map((attempt) => attempt.outcome),
        })),
        received,
      });
      // Events are delivered after their status changes: wait for the last ones (retries included).
      const waitStarted = Date.now();
      const webhookDeadline = waitStarted + options.webhooks.deadlineSeconds * 1000;
      let missing = checkWebhooks(input()).counts.missing;
      while (missing > 0 && Date.now() < webhookDeadline) {
        await sleep(500);
        missing = checkWebhooks(input()).counts.missing;
      }
      log(
        `chaos: webhooks: ${missing} status changes still missing after ${((Date.now() - waitStarted) / 1000).toFixed(1)} s of waiting`,
      );
      // The events received so far, then the messages as they are now: a late message may have moved
      // on since `views` (its event came during the wait), and every event received came before this read.
      const received = [...receiver.received];
      webhookInput = input(await client.finalViews(options.concurrency * 2), received);
    }
    const totals = stacks.totals();
    await stacks.stop();

    const timeoutKills = stacks.timeoutKills();
    // What either relay received is what "the relay received" (chaos/checker.ts, SmtpTransaction.relay).
    const perRelay = relays.map((relay) =>
      checkerInput({
        tracked: client.tracked,
        views,
        tapped: relay.tap.transactions(),
        relayed: relay.smtp.transactionLog,
        dealtKills: stacks.kills,
        timeoutKills,
        outageCuts: relay.outage.cuts,
        maxAttempts: Number(COMPRESSED_TIME.POSTDATE_MAX_ATTEMPTS),
        ...(relays.length > 1 ? { relay: relay.name } : {}),
      }),
    );
    const input = acrossRelays(perRelay as [CheckInput, ...CheckInput[]]);
    const result = checkRun(input);
    const { report, exitCode } = emitChaosReport(
      result,
      {
        messages: options.messages,
        seed: options.seed,
        startedAt,
        timeScale: scale,
        maxSendRate: options.maxSendRate,
        terminalWait,
        tracked: client.tracked,
        smtp: {
          transactions: relays.reduce((sum, relay) => sum + relay.smtp.transactions, 0),
          refusedLogins: refusedLogins(relays),
          // Each relay's script as far as its transactions went (the report counts it whole).
          script:
            relays.length === 1
              ? script.kinds
              : relays.flatMap((relay) => relay.script.kinds.slice(0, relay.smtp.transactions)),
        },
        ...(relays.length > 1
          ? {
              relays: relays.map((relay) => ({
                name: relay.name,
                transactions: relay.smtp.transactions,
                outageConnections: relay.outage.connections.down,
                outages: relay.outage.outages,
              })),
            }
          : {}),
        totals,
        wholeCallFaults: stacks.faults(),
        timeoutKills: timeoutKills.length,
        streamDiscards: stacks.streamDiscards(),
        copies,
        kills: killFigures,
        client: client.figures,
        counters: client.counters,
        input,
        ...(webhookInput ? { webhooks: webhookInput } : {}),
      },
      options.reportPath,
      log,
    );
    return { result, figures: report, exitCode };
  } finally {
    finished = true;
    await stacks.kill().catch(() => undefined);
    await receiver?.close();
    for (const relay of relays) {
      await relay.outage.close();
      await relay.tap.close();
      await relay.smtp.close();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** One relay of the run: its SMTP server and fault script, the tap in front, the outage proxy in front of that. */
interface ChaosRelay {
  readonly name: string;
  readonly smtp: TestSmtpServer;
  readonly script: ReturnType<typeof smtpScript>;
  readonly tap: SmtpTap;
  readonly outage: RelayOutage;
}

async function startChaosRelay(
  name: string,
  random: () => number,
  options: ChaosOptions,
  moments: SmtpMomentHook,
): Promise<ChaosRelay> {
  const smtp = await startSmtpServer({ credentials: { username: SMTP_USER, password: SMTP_PASSWORD } });
  const script = smtpScript(
    options.messages * 3,
    random,
    options.smtpFaultRate,
    options.stallRate,
    options.slowRelayRate ?? 0,
    options.timeScale ?? 1,
    spread(options.throttleReplies ?? 0, options.messages),
    spread(options.slowReplies ?? 0, options.messages).map((index) => index + 1),
  );
  smtp.script(...script.behaviours);
  // The relay is reached through a tap that reports the SMTP moments the sender kills aim at.
  const tap = await startSmtpTap({
    targetHost: smtp.host,
    targetPort: smtp.port,
    onMoment: (moment) => moments.onMoment(moment),
  });
  // In front of the tap: the relay outage phase answers 421 at the greeting, so nothing reaches the tap.
  const outage = await startRelayOutage({ targetHost: tap.host, targetPort: tap.port });
  return { name, smtp, script, tap, outage };
}

/** `count` transaction indices spread evenly over the first `over` of a script. */
const spread = (count: number, over: number): number[] =>
  Array.from({ length: count }, (_, index) => Math.floor((over * (index + 1)) / (count + 1)));

const refusedLogins = (relays: readonly ChaosRelay[]): number =>
  relays.reduce((sum, relay) => sum + relay.smtp.authAttempts.filter((attempt) => !attempt.ok).length, 0);
