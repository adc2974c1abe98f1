import { attemptBudgetMs, sendTimingProblems } from '../lambdas/core/sendTiming.js';
import { SLOW_RELAY_SECONDS } from './smtpFaultScript.js';

/** The largest delay that goes straight to SQS in a run of time scale `scale` (8 s at 1). */
export function directDelayMax(scale: number): number {
  return Math.max(2, Math.round(8 * scale));
}

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

/** The wait for terminal states past the deadline (see {@link keepWaiting}). */
export interface TerminalWait {
  readonly now: number;
  /** How many kinds of non-terminal message are left (0: none; the run only needs to know when none is). */
  readonly pending: number;
  /** The deadline after the last enqueue: until then the run waits whatever happens. */
  readonly deadlineAt: number;
  /**
   * When the run last saw mail move, by its own record: a relay saw a transaction, or a status
   * emptied (the start of the wait until then).
   */
  readonly lastProgressAt: number;
  /** How long past the deadline the run waits for mail to move again. */
  readonly stallMs: number;
  /** The run never waits past this. */
  readonly capAt: number;
}

/**
 * Whether the run still waits for its messages' terminal states. Until the deadline, yes; past it,
 * for as long as mail keeps moving: a stack that drains slowly (a send rate, two cores under faults)
 * is late, not losing mail, and the checker must judge what the stack finished, not where a clock
 * cut it off. It stops once nothing moved for `stallMs` — a stranded message is one that stays put
 * while the stack, done with the rest, has had a lease and a sweep to find it — or at `capAt`.
 */
export function keepWaiting(wait: TerminalWait): boolean {
  if (wait.pending === 0) return false;
  if (wait.now < wait.deadlineAt) return true;
  return wait.now < wait.capAt && wait.now - wait.lastProgressAt < wait.stallMs;
}

/**
 * How long a run of time scale `scale` waits past its deadline for mail to move again: a killed
 * process's lease must run out and a sweep find its messages (as the deadline's floor in
 * chaos/run.ts), with a minute to spare.
 */
export function stallSeconds(scale: number): number {
  return chaosTiming(scale).leaseSeconds + 90;
}
