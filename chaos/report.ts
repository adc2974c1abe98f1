import type { LocalStreamDiscard } from '../local/localStack.js';
import type { ApiCounters } from './callApi.js';
import { compressedTime } from './chaosTiming.js';
import { emitReport } from './check.js';
import type { CheckInput, CheckResult } from './checker.js';
import type { ClientFigures, TrackedMessage } from './client.js';
import type { CurrentStack } from './currentStack.js';
import type { KillFigures } from './kills.js';
import { SLOW_FAULT } from './smtpFaultScript.js';
import type { CopyFigures } from './sqsCopies.js';
import type { FaultLine } from './throttleMiddleware.js';
import { checkWebhooks, formatWebhookReport, type WebhookCheckInput } from './webhookChecker.js';

/** Everything the run recorded, for its report. */
export interface ChaosRecords {
  readonly messages: number;
  readonly seed: number;
  readonly startedAt: number;
  readonly timeScale: number;
  readonly maxSendRate: number | undefined;
  /** How long the run waited for terminal states after the last enqueue, and how much of it past the deadline. */
  readonly terminalWait: { readonly seconds: number; readonly pastDeadlineSeconds: number };
  readonly tracked: readonly TrackedMessage[];
  /** SMTP transactions the relay started, its refused logins, and the fault script's kinds in order. */
  readonly smtp: {
    readonly transactions: number;
    readonly refusedLogins: number;
    readonly script: readonly string[];
  };
  readonly totals: ReturnType<CurrentStack['totals']>;
  /** The whole-call DynamoDB faults injected in every process. */
  readonly wholeCallFaults: readonly FaultLine[];
  readonly timeoutKills: number;
  /** Stream batches the stacks' runners gave up on after their retries. */
  readonly streamDiscards: readonly LocalStreamDiscard[];
  readonly copies: CopyFigures;
  readonly kills: KillFigures;
  readonly client: ClientFigures;
  readonly counters: ApiCounters;
  readonly input: CheckInput;
  /** Each relay's transactions and outage, when the run had several (ChaosOptions.relays). */
  readonly relays?: readonly {
    readonly name: string;
    readonly transactions: number;
    readonly outageConnections: number;
    readonly outages: readonly { readonly startedAtMs: number; readonly endedAtMs: number | null }[];
  }[];
  /** The webhook checker's input, when the run had webhook receivers. */
  readonly webhooks?: WebhookCheckInput;
}

/**
 * Logs what was injected, prints the checker's one-screen report and writes the JSON report (with
 * the checker's input, so that `tsx chaos/check.ts` can check the run again); exit code 1 when the
 * checker failed or an idempotent replay did not return the original message.
 */
export function emitChaosReport(
  result: CheckResult,
  records: ChaosRecords,
  reportPath: string,
  log: (line: string) => void,
): { readonly report: Record<string, unknown>; readonly exitCode: number } {
  const { report: base, sends } = chaosReport(records);
  const webhooks = records.webhooks ? checkWebhooks(records.webhooks) : undefined;
  const report = webhooks ? { ...base, webhooks: { result: webhooks, input: records.webhooks } } : base;
  const { faults } = report;
  const { copies, kills, totals } = records;
  log(
    `chaos: faults: smtp ${JSON.stringify(faults.smtpScript)}, AUTH refused ${faults.authRefused}, ` +
      `dup copies ${copies.duplicateCopies}, stale copies ${copies.staleCopies}, throttled ${totals.throttled}/${totals.dynamodbCalls} DynamoDB calls, ` +
      `replayed stream batches ${totals.replayedBatches}, schedules fired ${totals.scheduleFires} (twice ${totals.scheduleFiredTwice}, late ${totals.scheduleLate}), ` +
      `stack kills ${kills.stackKills.length}, sender kills ${kills.senderKills.length} (${kills.senderKills.map((kill) => kill.moment).join(', ')}), ` +
      `timeout kills ${records.timeoutKills}, outcome writes failed ${faults.outcomeWritesFailed} ` +
      `(${(faults.outcomeWritesFailedShareOfSends * 100).toFixed(1)} % of ${sends} sends), ` +
      `body reads failed ${faults.bodyReadsFailed}, group reads failed ${faults.groupReadsFailed}, ` +
      `slow relay ${faults.slowRelayTransactions} after the dot (${faults.slowRelayRepliesHeard} replies heard, max ${faults.slowRelaySecondsMax} s), ` +
      `send rate limit ${records.maxSendRate ?? 'off'}/s (peak ${faults.peakMailFromPerSecond} MAIL FROM/s), API 5xx ${records.counters.serverErrors}`,
  );
  const { seconds, pastDeadlineSeconds } = records.terminalWait;
  log(
    `chaos: waited ${seconds} s for terminal states after the last enqueue, ${pastDeadlineSeconds} s of it past the deadline while mail still moved`,
  );
  let exitCode = emitReport(
    result,
    reportPath,
    report,
    `Postdate chaos run (${records.messages} messages, seed ${records.seed})`,
    log,
  );
  if (records.streamDiscards.length > 0) log(describeStreamDiscards(records.streamDiscards));
  if (webhooks) {
    log(formatWebhookReport(webhooks));
    if (!webhooks.ok) exitCode = 1;
  }
  const mismatches = records.client.replayMismatches.length;
  if (mismatches > 0) {
    log(`chaos: FAIL: ${mismatches} idempotent replays did not return the original message`);
    exitCode = 1;
  }
  return { report, exitCode };
}

/** The report's figures, and how many transactions the relay accepted (the sends). */
function chaosReport(records: ChaosRecords) {
  const { copies, kills, totals, counters, input } = records;
  const { transactions } = input;
  const injected = countBy(records.wholeCallFaults.map((fault) => fault.fault));
  // Slow transactions whose dot went (the sender may have given up before the 250: hole 7).
  const slowReplies = transactions.filter(
    (transaction) => transaction.fault === SLOW_FAULT && transaction.finalDotAtMs !== null,
  );
  const sends = transactions.filter((transaction) => transaction.outcome === 'accepted').length;
  const smtpScript = countBy(records.smtp.script.slice(0, records.smtp.transactions));
  const report = {
    run: {
      messages: records.messages,
      seed: records.seed,
      seconds: Math.round((Date.now() - records.startedAt) / 100) / 10,
      compressedTime: compressedTime(records.timeScale),
      timeScale: records.timeScale,
      terminalWait: records.terminalWait,
      workload: countBy(records.tracked.map((message) => message.planned.kind)),
    },
    faults: {
      smtpTransactions: records.smtp.transactions,
      ...(records.relays ? { relays: records.relays } : {}),
      smtpScript,
      authRefused: records.smtp.refusedLogins,
      duplicateSqsCopies: copies.duplicateCopies,
      staleSqsCopies: copies.staleCopies,
      dynamodbThrottled: totals.throttled,
      dynamodbCalls: totals.dynamodbCalls,
      replayedStreamBatches: totals.replayedBatches,
      replayedStreamRecords: totals.replayedRecords,
      outcomeWritesFailed: injected['outcome-write'] ?? 0,
      outcomeWritesFailedShareOfSends: sends === 0 ? 0 : (injected['outcome-write'] ?? 0) / sends,
      bodyReadsFailed: injected['body-read'] ?? 0,
      groupReadsFailed: injected['group-read'] ?? 0,
      wholeCallFaults: records.wholeCallFaults,
      slowRelayTransactions: slowReplies.length,
      slowRelayRepliesHeard: slowReplies.filter((t) => t.reply?.delivered === true).length,
      slowRelaySecondsMax:
        Math.round(
          Math.max(0, ...slowReplies.map((t) => (t.reply ? t.reply.atMs - (t.finalDotAtMs ?? 0) : 0))) / 100,
        ) / 10,
      timeoutKills: records.timeoutKills,
      streamDiscards: records.streamDiscards,
      maxSendRate: records.maxSendRate ?? null,
      peakMailFromPerSecond: peakPerSecond(transactions.map((transaction) => transaction.mailFromAtMs)),
      scheduleFires: totals.scheduleFires,
      scheduleFiredTwice: totals.scheduleFiredTwice,
      scheduleLate: totals.scheduleLate,
      stackKills: kills.stackKills,
      senderKills: kills.senderKills,
      senderRestartFailures: kills.senderRestartFailures,
      apiRetries: counters.retries,
      api5xx: counters.serverErrors,
    },
    client: { ...records.client },
    // Every SMTP transaction and every kill, so that `tsx chaos/check.ts` can check the run again.
    input,
  };
  return { report, sends };
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

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/**
 * One line on the batches the stream runners gave up on: the event producer's are status changes no
 * webhook carries until `postdate event-failures redrive` replays them from its failure queue.
 */
function describeStreamDiscards(discards: readonly LocalStreamDiscard[]): string {
  const parts = discards.map(
    (discard) =>
      `${discard.source} gave up on ${discard.keys.length} record(s) after ${discard.invokeCount} invocations` +
      ` (${discard.destination === 'onFailure' ? 'to its failure queue' : 'dropped'}): ` +
      discard.keys.map((key) => Object.values(key).join('/')).join(', '),
  );
  return `chaos: stream give-ups: ${parts.join('; ')}`;
}
