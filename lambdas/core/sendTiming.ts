import { AWS_CLIENT_LIMITS, type AwsClientLimits, worstCaseAwsCallMs } from './awsClientLimits.js';

/**
 * The sender's time rules (DESIGN §5, "Never out of time mid-send" and "Timeouts"), in one place for
 * the configuration loader, the CDK props and the sender itself:
 *
 *   lease  >  function timeout  >  one whole attempt (SMTP before the dot, the wait for the reply
 *   to the final dot, the outcome write: one whole AWS SDK call at the clients' limits)
 *
 * An invocation claims a copy only while the time it has left covers one whole attempt, and starts
 * the SMTP transaction (MAIL FROM) only while it still does, after the reads that follow the claim
 * (otherwise it gives the claim back: no attempt). An attempt so never meets the function timeout,
 * and the wait for the reply to the dot never reaches into the outcome write's reserve. The lease
 * outlives the function, so a live sender's record is never taken over by another one
 * (docs/decisions/0128).
 */

export interface SendTiming {
  /** POSTDATE_LEASE_SECONDS. */
  readonly leaseSeconds: number;
  /** POSTDATE_SENDER_TIMEOUT_SECONDS: the sender function's timeout. */
  readonly senderTimeoutSeconds: number;
  /**
   * POSTDATE_SMTP_TIMEOUT_SECONDS: connection, greeting and each command before the final dot. The
   * whole phase before the dot is bounded by {@link preDotBudgetMs}.
   */
  readonly smtpTimeoutSeconds: number;
  /**
   * POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS: the reply to the final dot is waited for at least this long
   * (RFC 5321 §4.5.3.2.6 gives it 10 minutes: a short wait there duplicates mail), and longer when
   * the invocation has the time: a transaction starts only with this much left after the phase
   * before the dot, plus the outcome write.
   */
  readonly smtpReplyTimeoutSeconds: number;
}

/** Beyond the SDK call itself: the answer's way back and the log line before the invocation ends. */
const OUTCOME_WRITE_MARGIN_MS = 1000;

/**
 * The time reserved after the reply for the outcome write: one whole AWS SDK call in the worst case
 * under the clients' limits (lambdas/core/awsClientLimits.ts), so a DynamoDB that hangs right after
 * a 250 gives up, or answers, before the function timeout cuts the write.
 */
export function outcomeWriteReserveMs(limits: AwsClientLimits = AWS_CLIENT_LIMITS): number {
  return worstCaseAwsCallMs(limits) + OUTCOME_WRITE_MARGIN_MS;
}

/** {@link outcomeWriteReserveMs} under the limits the functions' clients are built with (28 s). */
export const OUTCOME_WRITE_RESERVE_MS = outcomeWriteReserveMs(AWS_CLIENT_LIMITS);

/** RFC 5321 §4.5.3.2.6: no client waits longer than this for the reply to the final dot. */
export const MAX_REPLY_WAIT_MS = 600_000;

/** The phase before the final dot (connect, greeting, TLS, login, MAIL, RCPT, DATA, the body). */
export function preDotBudgetMs(timing: Pick<SendTiming, 'smtpTimeoutSeconds'>): number {
  return 2 * timing.smtpTimeoutSeconds * 1000;
}

/** The time an invocation must have left to claim a copy: one whole attempt and its outcome write. */
export function attemptBudgetMs(
  timing: Pick<SendTiming, 'smtpTimeoutSeconds' | 'smtpReplyTimeoutSeconds'>,
  limits: AwsClientLimits = AWS_CLIENT_LIMITS,
): number {
  return preDotBudgetMs(timing) + timing.smtpReplyTimeoutSeconds * 1000 + outcomeWriteReserveMs(limits);
}

/**
 * The latest a copy may still be claimed, on the invocation's clock: a whole attempt before its end.
 * The send-rate wait before the claim never goes past it (DESIGN §5a: a turn later than this is not
 * waited for; the copy goes back unclaimed at once).
 */
export function claimBy(
  nowMs: number,
  remainingMs: number,
  timing: Pick<SendTiming, 'smtpTimeoutSeconds' | 'smtpReplyTimeoutSeconds'>,
  limits: AwsClientLimits = AWS_CLIENT_LIMITS,
): number {
  return nowMs + remainingMs - attemptBudgetMs(timing, limits);
}

/**
 * The rule for the claim and for MAIL FROM: with `remainingMs` left, an invocation may claim a copy,
 * and later start its SMTP transaction, only with time for one whole attempt and its outcome write.
 * Checked before the claim, and again at the last moment before MAIL FROM: what came between (the
 * claim's tries, the group, body, template and suppression reads) has taken its time.
 */
export function hasTimeForAttempt(
  remainingMs: number,
  timing: Pick<SendTiming, 'smtpTimeoutSeconds' | 'smtpReplyTimeoutSeconds'>,
  limits: AwsClientLimits = AWS_CLIENT_LIMITS,
): boolean {
  return remainingMs >= attemptBudgetMs(timing, limits);
}

/**
 * The latest moment (epoch ms, on the clock `nowMs` is read from) the attempt may wait for the reply
 * to its final dot: the invocation's end less the outcome-write reserve.
 */
export function replyEndsBy(
  nowMs: number,
  remainingMs: number,
  limits: AwsClientLimits = AWS_CLIENT_LIMITS,
): number {
  return nowMs + remainingMs - outcomeWriteReserveMs(limits);
}

/** Every way the timing breaks the rule above, in words that name the settings; empty when it holds. */
export function sendTimingProblems(
  timing: SendTiming,
  limits: AwsClientLimits = AWS_CLIENT_LIMITS,
): string[] {
  const problems: string[] = [];
  const attemptSeconds = attemptBudgetMs(timing, limits) / 1000;
  if (timing.senderTimeoutSeconds <= attemptSeconds) {
    problems.push(
      `the sender timeout (${timing.senderTimeoutSeconds} s) must exceed one whole attempt: ` +
        `2 × the SMTP timeout (${timing.smtpTimeoutSeconds} s) + the reply timeout ` +
        `(${timing.smtpReplyTimeoutSeconds} s) + ${outcomeWriteReserveMs(limits) / 1000} s for the outcome write = ${attemptSeconds} s`,
    );
  }
  if (timing.leaseSeconds <= timing.senderTimeoutSeconds) {
    problems.push(
      `the lease (${timing.leaseSeconds} s) must exceed the sender timeout (${timing.senderTimeoutSeconds} s)`,
    );
  }
  return problems;
}

/**
 * When to give up waiting for the reply to the final dot, sent at `dotSentAt`: at `endsBy` (the
 * invocation's deadline less the outcome-write reserve), never later than RFC 5321's ten minutes.
 * A transaction starts only with the whole phase before the dot and the whole reply timeout left
 * before `endsBy` ({@link hasTimeForAttempt} at MAIL FROM), so the configured reply timeout is
 * always waited out; only a phase before the dot that overran its own bound (a stalled event loop)
 * meets `endsBy` sooner, and then the reserve wins: the outcome is ambiguous and written in time,
 * never a 250 whose write the function timeout cuts (docs/decisions/0128). Times in epoch ms.
 */
export function replyDeadline(dotSentAt: number, endsBy: number): number {
  return Math.min(dotSentAt + MAX_REPLY_WAIT_MS, endsBy);
}
