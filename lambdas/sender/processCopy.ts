import { decideArrival } from '../core/dispatchDecision.js';
import { parseDispatchPayload } from '../core/dispatchPayload.js';
import { MESSAGE_STATUS, type MessageStatus } from '../core/messageStatus.js';
import { pendingPositions, recipientList } from '../core/recipients.js';
import { admitCopy, decideOutcome, type OutcomeDecision } from '../core/sendDecision.js';
import { attemptBudgetMs, OUTCOME_WRITE_RESERVE_MS, type SendTiming } from '../core/sendTiming.js';
import { checkTransition } from '../core/stateMachine.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { Mailer, OutgoingEmail, SendOutcome } from '../ports/Mailer.js';
import type { MessageBodyRecord, MessageStateRecord } from '../store/messageRecord.js';
import type { SenderStore, TransitionResult } from '../store/senderTransitions.js';
import {
  attemptRecord,
  domainsOf,
  INTERRUPTED_SEND_ERROR,
  interruptedAttemptRecord,
  lastErrorOf,
  missingBodyRecord,
} from './attemptRecords.js';
import { SENDER_METRIC, type SenderCountMetric, type SenderMetrics } from './senderMetrics.js';
import type { SendRateLimiter } from './sendRateLimiter.js';

/**
 * What the sender does with one queue copy `{v, id, rev}` (DESIGN §2, §5, §5a), as a short list of
 * I/O steps around the two pure decisions of lambdas/core/sendDecision.ts: read the record and admit
 * the copy (or drop it, wait for a lease, move it to the DLQ); hold or re-delay what is early;
 * expire or supersede what must not go out; wait for the send rate; claim only with time for a
 * whole attempt; send to the pending recipients; write the outcome until it lands. It never throws
 * for an expected situation; it answers with a verdict on the SQS copy.
 */

/** The structured logger the sender writes to (lambdas/ports/Log.ts). */
export type SenderLog = Log;

export interface SenderSettings {
  /** POSTDATE_MAX_ATTEMPTS: SMTP attempts (DESIGN §2) before the message is `dead`. */
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
  /** POSTDATE_LEASE_SECONDS: longer than the function timeout. */
  readonly leaseSeconds: number;
  /** POSTDATE_RETENTION_DAYS: TTL of terminal records. */
  readonly retentionDays: number;
  /** A copy early by at most this is held in-process; earlier ones are re-enqueued. */
  readonly maxEarlyWaitMs: number;
  /** The SMTP timeouts that make up one whole attempt (lambdas/core/sendTiming.ts). */
  readonly timing: Pick<SendTiming, 'smtpTimeoutSeconds' | 'smtpReplyTimeoutSeconds'>;
}

/** One received SQS copy, as much of it as the sender needs. */
export interface ReceivedCopy {
  readonly sqsMessageId: string;
  readonly body: string;
  /** SQS ApproximateReceiveCount of this copy (1 on its first receive). */
  readonly receiveCount: number;
}

/** The time the invocation has left (its deadline on the sender's clock). */
export interface InvocationTime {
  remainingMs(): number;
}

/** What happens to the SQS copy: deleted (`ack`), or kept and visible again after `visibilitySeconds`. */
export type CopyVerdict =
  | { readonly kind: 'ack'; readonly reason: string }
  | {
      readonly kind: 'keep';
      /** Undefined: leave the queue's own visibility timeout. */
      readonly visibilitySeconds: number | undefined;
      readonly reason: string;
      /**
       * This copy is the record's `dead_copy` and its move to the DLQ is still owed: a copy that
       * replaces it (near the queue's backstop) goes to the DLQ, marked `"dlq": true`, never back
       * on the send queue under a new SQS id that the record does not know.
       */
      readonly deadCopy?: true;
    };

export interface CopyDependencies {
  readonly store: SenderStore;
  readonly mailer: Mailer;
  readonly queue: DispatchQueue;
  /** The send queue's DLQ: where the sender itself puts the copy of a message that became `dead`. */
  readonly deadLetters: DispatchQueue;
  readonly settings: SenderSettings;
  readonly now: () => Date;
  readonly random: () => number;
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly newLeaseOwner: () => string;
  readonly rateLimiter: SendRateLimiter;
  readonly log: SenderLog;
  readonly metrics: SenderMetrics;
}

/** When a released or kept copy comes back after a read failed or a move to the DLQ did not happen. */
const SHORT_RETRY_SECONDS = 5;
/** The writes after a claim are retried with full jitter up to this pause. */
const WRITE_RETRY_CAP_MS = 2000;
/** A write retry is not started with less than this left before the invocation's end. */
const WRITE_RETRY_FLOOR_MS = 500;

const ack = (reason: string): CopyVerdict => ({ kind: 'ack', reason });
const keep = (reason: string, visibilitySeconds?: number): CopyVerdict => ({
  kind: 'keep',
  visibilitySeconds,
  reason,
});

export async function processCopy(
  copy: ReceivedCopy,
  deps: CopyDependencies,
  time: InvocationTime,
): Promise<CopyVerdict> {
  const parsed = parseDispatchPayload(copy.body);
  if (!parsed.ok) {
    // Retrying a body that cannot be read would only fill the DLQ; the reason names no content.
    deps.log.warn('sender dropped a malformed copy', {
      sqsMessageId: copy.sqsMessageId,
      reason: parsed.reason,
    });
    deps.metrics.count(SENDER_METRIC.malformedCopies);
    return ack('malformed copy');
  }
  const { id, rev, dlq } = parsed.payload;
  return new CopyRun(id, rev, dlq === true, copy, deps, time).run();
}

/** One copy's way through the sender; a class only so the steps can share the context. */
class CopyRun {
  constructor(
    private readonly id: string,
    private readonly rev: number,
    private readonly fromDeadLetters: boolean,
    private readonly copy: ReceivedCopy,
    private readonly deps: CopyDependencies,
    private readonly time: InvocationTime,
  ) {}

  async run(): Promise<CopyVerdict> {
    const { deps } = this;
    const observed = await deps.store.readState(this.id);
    const admission = this.admit(observed);
    if (admission.kind === 'verdict') return admission.verdict;
    if (observed === undefined) return this.drop('no such message');
    const { takeover, redrive } = admission;

    if (takeover && observed.on_ambiguous === 'hold') return this.holdInterrupted(observed);

    const arrival = decideArrival({
      sendAt: new Date(observed.send_at),
      now: deps.now(),
      maxWaitMs: deps.settings.maxEarlyWaitMs,
    });
    if (arrival.action === 'redelay') return this.redelay(arrival.delaySeconds);
    if (arrival.action === 'wait') await deps.sleep(arrival.milliseconds);

    const now = deps.now();
    const interruption = takeover
      ? {
          interruptedAttempt: interruptedAttemptRecord(observed.lease_until, now),
          lastError: INTERRUPTED_SEND_ERROR,
        }
      : {};

    if (isPast(observed.not_after, now)) {
      if (!this.allowed(observed, 'expired')) return this.drop('past not_after');
      const result = await deps.store.settleUnsent({
        observed,
        to: 'expired',
        now,
        retentionDays: deps.settings.retentionDays,
        ...interruption,
      });
      return this.settled(result, 'expired', SENDER_METRIC.expired, takeover);
    }

    if (await this.supersededBy(observed)) {
      if (!this.allowed(observed, 'superseded')) return this.drop('superseded by its group');
      const result = await deps.store.settleUnsent({
        observed,
        to: 'superseded',
        now,
        retentionDays: deps.settings.retentionDays,
        ...interruption,
      });
      return this.settled(result, 'superseded', SENDER_METRIC.superseded, takeover);
    }

    // The rate limit waits before the claim, never under the lease (DESIGN §5).
    await deps.rateLimiter.acquire();
    // Never out of time mid-send: claim only with time left for one whole attempt and its write.
    if (this.time.remainingMs() < attemptBudgetMs(deps.settings.timing)) {
      deps.metrics.count(SENDER_METRIC.outOfTime);
      this.deps.log.info('sender handed a copy back unclaimed: too little time left', this.context({}));
      return keep('too little time left for a whole attempt; back unclaimed', 0);
    }

    const owner = deps.newLeaseOwner();
    const claimedAt = deps.now();
    // The body is read while the claim is written: one round trip fewer on every send. A lost claim
    // wastes the read (rare); the read's failure surfaces only where the body is needed.
    const body = settled(deps.store.readBody(this.id));
    const claim = await deps.store.claim({
      observed,
      owner,
      now: claimedAt,
      leaseUntil: new Date(claimedAt.getTime() + deps.settings.leaseSeconds * 1000),
      ...interruption,
      ...(redrive ? { attemptLimit: observed.attempts + deps.settings.maxAttempts } : {}),
    });
    if (claim.outcome === 'conflict') return this.afterConflict('claim lost');
    // The takeover of an expired lease recorded the interrupted attempt as ambiguous.
    if (takeover) deps.metrics.count(SENDER_METRIC.ambiguous);
    return this.sendClaimed(claim.record, owner, body);
  }

  /** Whether this copy may go on with the record it found, or the verdict on it right away. */
  private admit(
    state: MessageStateRecord | undefined,
  ):
    | { readonly kind: 'verdict'; readonly verdict: Promise<CopyVerdict> | CopyVerdict }
    | { readonly kind: 'proceed'; readonly takeover: boolean; readonly redrive: boolean } {
    const admission = admitCopy(
      state,
      { rev: this.rev, sqsMessageId: this.copy.sqsMessageId, fromDeadLetters: this.fromDeadLetters },
      this.deps.now(),
    );
    switch (admission.kind) {
      case 'drop':
        return { kind: 'verdict', verdict: this.drop(admission.reason) };
      case 'wait-for-lease':
        // Another sender holds a live lease: come back when it has run out, to see how it ended.
        return {
          kind: 'verdict',
          verdict: keep('leased by another sender', admission.visibilitySeconds),
        };
      case 'move-to-dead-letters':
        return { kind: 'verdict', verdict: this.moveToDeadLetters() };
      case 'proceed':
        return admission;
    }
  }

  /**
   * Whether the state machine (lambdas/core/stateMachine.ts) lets the sender make this move. Where it
   * does not — e.g. a DLQ-redriven copy of a `dead` message past its deadline — nothing is written
   * and nothing is sent; the copy is dropped.
   */
  private allowed(observed: MessageStateRecord, to: MessageStatus): boolean {
    const check = checkTransition(observed.status, to, 'sender');
    if (!check.allowed) {
      this.deps.log.info('sender may not make this transition', this.context({ to, reason: check.reason }));
    }
    return check.allowed;
  }

  /** The group's head is above the message's version ("approved" is never sent after "paused"). */
  private async supersededBy(record: MessageStateRecord): Promise<boolean> {
    if (record.group === null || record.group === undefined) return false;
    const head = await this.deps.store.readGroupVersion(record.tenant, record.group.key);
    return head !== undefined && head > record.group.version;
  }

  private drop(reason: string): CopyVerdict {
    this.deps.log.info('sender dropped a copy', this.context({ reason }));
    return ack(reason);
  }

  /** A sender died mid-send and the message's policy is `hold`: `unknown`, nothing sent. */
  private async holdInterrupted(observed: MessageStateRecord): Promise<CopyVerdict> {
    const now = this.deps.now();
    const result = await this.deps.store.settleUnsent({
      observed,
      to: 'unknown',
      now,
      interruptedAttempt: interruptedAttemptRecord(observed.lease_until, now),
      lastError: INTERRUPTED_SEND_ERROR,
      retentionDays: this.deps.settings.retentionDays,
    });
    return this.settled(result, 'unknown (lease expired, on_ambiguous = hold)', SENDER_METRIC.unknown, true);
  }

  /** Early by more than a moment: back on the queue with the exact remaining delay; not an attempt. */
  private async redelay(delaySeconds: number): Promise<CopyVerdict> {
    const { failed } = await this.deps.queue.enqueue([{ payload: this.payload(), delaySeconds }]);
    if (failed.length > 0) {
      // Keep this copy instead, visible again when the message is due.
      return keep('early; re-enqueue failed', delaySeconds);
    }
    this.deps.metrics.count(SENDER_METRIC.redelayed);
    this.deps.log.info('sender re-delayed an early copy', this.context({ delaySeconds }));
    return ack('early; re-enqueued');
  }

  /**
   * Dead means dead (DESIGN §5): the record says `dead` (written first, under our lease), then the
   * copy goes to the DLQ marked as the sender's own, then this copy is deleted. A failed move keeps
   * this copy; it comes back as the record's `dead_copy` and the move is tried again.
   */
  private async moveToDeadLetters(): Promise<CopyVerdict> {
    const { failed } = await this.deps.deadLetters.enqueue([
      { payload: { id: this.id, rev: this.rev, dlq: true }, delaySeconds: 0 },
    ]);
    if (failed.length > 0) {
      this.deps.log.warn('sender could not move a dead copy to the DLQ; it will try again', this.context({}));
      return {
        kind: 'keep',
        visibilitySeconds: SHORT_RETRY_SECONDS,
        reason: 'dead; the move to the DLQ failed',
        deadCopy: true,
      };
    }
    this.deps.metrics.count(SENDER_METRIC.deadLettered);
    return ack('dead; moved to the DLQ');
  }

  private async sendClaimed(
    claimed: MessageStateRecord,
    owner: string,
    bodyRead: Promise<Settled<MessageBodyRecord | undefined>>,
  ): Promise<CopyVerdict> {
    const { deps } = this;
    let superseded: boolean;
    let body: MessageBodyRecord | undefined;
    try {
      // Check, claim, check again: a group raised between the first read and our claim still wins.
      superseded = await this.supersededBy(claimed);
      body = unwrap(await bodyRead);
    } catch (error) {
      // Nothing reached the relay: give the claim back (no attempt, nothing ambiguous).
      return this.release(claimed, owner, error);
    }
    if (superseded) {
      const result = await deps.store.settleUnsent({
        observed: claimed,
        owner,
        to: 'superseded',
        now: deps.now(),
        retentionDays: deps.settings.retentionDays,
      });
      return this.settled(result, 'superseded', SENDER_METRIC.superseded);
    }
    // A body with another fingerprint than its state record's is not this message's: a request that
    // reused the key wrote it after the original's body expired (and deletes it again). Never send it.
    const foreign =
      body !== undefined && claimed.fingerprint !== undefined && body.fingerprint !== claimed.fingerprint;
    if (body === undefined || foreign) {
      const missing = missingBodyRecord(deps.now());
      const result = await deps.store.recordOutcome({
        claimed,
        owner,
        to: 'failed',
        now: deps.now(),
        attempt: missing.attempt,
        lastError: missing.lastError,
        retentionDays: deps.settings.retentionDays,
        attempts: claimed.attempts,
        recipients: progressOf(claimed),
      });
      deps.log.error(
        body === undefined ? 'sender found no body for a message' : 'sender found a body of another request',
        this.context({}),
      );
      return this.settled(result, 'failed (no body)', SENDER_METRIC.failed);
    }

    const recipients = recipientList(body);
    const positions = pendingPositions(recipients.length, progressOf(claimed));
    const email = outgoingEmail(
      this.id,
      body,
      positions.map((position) => recipients[position] ?? ''),
    );
    const outcome = await deps.mailer.send(email, {
      endsBy: Date.now() + this.time.remainingMs() - OUTCOME_WRITE_RESERVE_MS,
    });
    deps.metrics.milliseconds(SENDER_METRIC.smtpDuration, outcome.durationMs);
    const decision = decideOutcome(
      {
        delivered: outcome.delivered,
        ...(outcome.delivered ? {} : { failureClass: outcome.failure.class }),
        reachedRelay: outcome.delivered || outcome.reachedRelay,
        attempted: positions,
        refused: outcome.refused.map((refusal) => ({
          position: positions[refusal.index] ?? -1,
          permanent: refusal.permanent,
        })),
      },
      {
        attempts: claimed.attempts,
        ...(claimed.attempt_limit === undefined ? {} : { attempt_limit: claimed.attempt_limit }),
        on_ambiguous: claimed.on_ambiguous,
        recipients: progressOf(claimed),
        recipientTotal: recipients.length,
      },
      deps.settings,
      this.copy.receiveCount,
      deps.random,
    );
    return this.recordOutcome(claimed, owner, outcome, decision, email.envelope);
  }

  /** A read failed after the claim and before MAIL FROM: the record goes back to waiting, unattempted. */
  private async release(claimed: MessageStateRecord, owner: string, error: unknown): Promise<CopyVerdict> {
    const now = this.deps.now();
    this.deps.log.warn(
      'sender released its claim: a read failed before the relay saw the message',
      this.context({ error: error instanceof Error ? error.name : typeof error }),
    );
    const result = await this.writeUntilLanded(
      () =>
        this.deps.store.release({
          claimed,
          owner,
          now,
          retryAt: new Date(now.getTime() + SHORT_RETRY_SECONDS * 1000),
        }),
      { status: MESSAGE_STATUS.retrying, now },
      claimed,
    );
    if (result.kind !== 'applied') return result.verdict;
    this.deps.metrics.count(SENDER_METRIC.released);
    return keep('a read failed before the send; claim released', SHORT_RETRY_SECONDS);
  }

  private async recordOutcome(
    claimed: MessageStateRecord,
    owner: string,
    outcome: SendOutcome,
    decision: OutcomeDecision,
    envelope: readonly string[],
  ): Promise<CopyVerdict> {
    const { deps } = this;
    const now = deps.now();
    const attempt = attemptRecord(outcome, now, envelope);
    const result = await this.writeUntilLanded(
      () =>
        deps.store.recordOutcome({
          claimed,
          owner,
          to: decision.to,
          now,
          attempt,
          lastError: outcome.delivered ? null : lastErrorOf(outcome.failure),
          retryAt:
            decision.to === 'retrying'
              ? new Date(now.getTime() + (decision.visibilitySeconds ?? 0) * 1000)
              : undefined,
          retentionDays: deps.settings.retentionDays,
          attempts: decision.attempts,
          recipients: decision.recipients,
          ...(decision.to === 'dead' ? { deadCopy: this.copy.sqsMessageId } : {}),
        }),
      { status: decision.to, now },
      claimed,
    );
    const details = this.context({
      status: decision.to,
      class: outcome.delivered ? 'sent' : outcome.failure.class,
      code: attempt.code,
      enhancedCode: attempt.enhanced_code,
      receiveCount: this.copy.receiveCount,
      attempts: decision.attempts,
      durationMs: outcome.durationMs,
      ...(attempt.rejected_domains ? { rejectedDomains: attempt.rejected_domains } : {}),
    });
    if (result.kind !== 'applied') {
      deps.log.error('sender could not record the outcome of its attempt', details);
      return result.verdict;
    }
    deps.log.info('sender recorded an outcome', details);
    this.countOutcome(decision.to, outcome);
    if (outcome.delivered) {
      deps.metrics.milliseconds(
        SENDER_METRIC.lateness,
        Math.max(0, now.getTime() - Date.parse(claimed.send_at)),
      );
      if (outcome.refused.length > 0) {
        deps.log.warn('the relay refused some recipients', {
          ...this.context({}),
          refusedDomains: domainsOf(outcome.refused.map((refusal) => envelope[refusal.index] ?? '')),
        });
      }
    }
    switch (decision.to) {
      case 'retrying':
        return keep('retrying after backoff', decision.visibilitySeconds);
      case 'dead':
        return this.moveToDeadLetters();
      default:
        return ack(decision.to);
    }
  }

  /**
   * A write after the claim, tried until it lands (DESIGN §5): it is conditional on our lease, so a
   * retry can never overwrite someone else's move, and a message the relay accepted is never sent
   * again because our own write failed. A conflict after a failed try may be our own earlier try
   * that landed with its answer lost: the record tells (our status, our `updated_at`).
   */
  private async writeUntilLanded(
    write: () => Promise<TransitionResult>,
    ours: { readonly status: MessageStatus; readonly now: Date },
    claimed: MessageStateRecord,
  ): Promise<{ readonly kind: 'applied' } | { readonly kind: 'not-applied'; readonly verdict: CopyVerdict }> {
    const { deps } = this;
    for (let attempt = 0; ; attempt += 1) {
      try {
        const result = await write();
        if (result.outcome === 'applied') return { kind: 'applied' };
        if (attempt > 0) {
          const now = await deps.store.readState(this.id);
          if (
            now !== undefined &&
            now.status === ours.status &&
            now.updated_at === ours.now.toISOString() &&
            now.lease_owner === undefined
          ) {
            return { kind: 'applied' };
          }
        }
        // Our lease was taken over (the send outlived it); the new holder has its own copy and
        // treats our attempt as ambiguous. Nothing more is ours to write.
        deps.log.error('sender lost its lease before its write', this.context({}));
        return { kind: 'not-applied', verdict: ack('lease lost before the write') };
      } catch (error) {
        // Equal jitter: never a pause of 0, so the time left always runs down between tries.
        const ceiling = Math.min(WRITE_RETRY_CAP_MS, 100 * 2 ** attempt);
        const pause = Math.round(ceiling / 2 + deps.random() * (ceiling / 2));
        if (this.time.remainingMs() - pause < WRITE_RETRY_FLOOR_MS) {
          deps.metrics.count(SENDER_METRIC.outcomeWriteFailures);
          deps.log.error(
            'sender gave up writing after its attempt: the invocation is out of time',
            this.context({ tries: attempt + 1, error: errorName(error) }),
          );
          // The copy returns when our lease has run out; whoever takes it then finds it ambiguous.
          const leaseEnd = Date.parse(claimed.lease_until ?? '') || deps.now().getTime();
          return {
            kind: 'not-applied',
            verdict: keep(
              'the write after the attempt never landed',
              Math.max(1, Math.ceil((leaseEnd - deps.now().getTime()) / 1000) + 1),
            ),
          };
        }
        deps.metrics.count(SENDER_METRIC.outcomeWriteRetries);
        await deps.sleep(pause);
      }
    }
  }

  private countOutcome(to: string, outcome: SendOutcome): void {
    const { metrics } = this.deps;
    if (to === 'sent') metrics.count(SENDER_METRIC.sent);
    if (to === 'failed') metrics.count(SENDER_METRIC.failed);
    if (to === 'retrying') metrics.count(SENDER_METRIC.retried);
    if (to === 'dead') metrics.count(SENDER_METRIC.dead);
    if (to === 'unknown') metrics.count(SENDER_METRIC.unknown);
    if (!outcome.delivered && outcome.failure.class === 'config') metrics.count(SENDER_METRIC.configErrors);
    if (!outcome.delivered && outcome.failure.class === 'ambiguous') metrics.count(SENDER_METRIC.ambiguous);
  }

  /** After a write that did not apply: acknowledge or keep the copy by what the record says now. */
  private async settled(
    result: TransitionResult,
    what: string,
    metric: SenderCountMetric,
    interrupted = false,
  ): Promise<CopyVerdict> {
    if (result.outcome === 'conflict') return this.afterConflict(`${what}: condition lost`);
    this.deps.metrics.count(metric);
    if (interrupted) this.deps.metrics.count(SENDER_METRIC.ambiguous);
    this.deps.log.info(
      'sender settled a message without sending',
      this.context({ status: result.record.status }),
    );
    return ack(what);
  }

  /**
   * A conditional write lost: someone else moved the record. Read it again; a record that is gone,
   * stale or finished needs nothing from this copy; one another sender holds comes back when the
   * lease runs out; anything else comes back on the queue's own timeout.
   */
  private async afterConflict(reason: string): Promise<CopyVerdict> {
    const admission = this.admit(await this.deps.store.readState(this.id));
    if (admission.kind !== 'proceed') return admission.verdict;
    this.deps.log.info('sender will see this copy again', this.context({ reason }));
    return keep(reason, SHORT_RETRY_SECONDS);
  }

  private payload() {
    return { id: this.id, rev: this.rev, ...(this.fromDeadLetters ? { dlq: true as const } : {}) };
  }

  private context(extra: Record<string, unknown>): Record<string, unknown> {
    return { id: this.id, rev: this.rev, sqsMessageId: this.copy.sqsMessageId, ...extra };
  }
}

/** The record's recipient progress (positions in the body's to, cc, bcc). */
function progressOf(record: MessageStateRecord) {
  return { accepted: record.rcpt_accepted ?? [], rejected: record.rcpt_rejected ?? [] };
}

/** Whether a deadline (ISO time, or none) has passed. */
function isPast(deadline: string | null | undefined, now: Date): boolean {
  if (deadline === null || deadline === undefined) return false;
  const at = Date.parse(deadline);
  return Number.isFinite(at) && at < now.getTime();
}

/** The body item as the mailer takes it; only strings reach nodemailer. */
function outgoingEmail(id: string, body: MessageBodyRecord, envelope: readonly string[]): OutgoingEmail {
  return {
    id,
    from: body.from,
    to: body.to,
    cc: body.cc ?? [],
    bcc: body.bcc ?? [],
    replyTo: body.reply_to ?? null,
    subject: body.subject,
    text: body.text ?? null,
    html: body.html ?? null,
    headers: body.headers ?? {},
    envelope,
  };
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** A promise's outcome as a value, so a result nobody waits for can never become an unhandled rejection. */
type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

function settled<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

function unwrap<T>(outcome: Settled<T>): T {
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
