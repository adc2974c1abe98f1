import { backoffSeconds, configBackoffSeconds } from '../core/backoff.js';
import { decideArrival } from '../core/dispatchDecision.js';
import { parseDispatchPayload } from '../core/dispatchPayload.js';
import { MESSAGE_STATUS, type MessageStatus } from '../core/messageStatus.js';
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
 * What the sender does with one queue copy `{v, id, rev}` (DESIGN §2, §5, §5a): read the record,
 * drop what is stale or finished, hold or re-delay what is early, expire or supersede what must not
 * go out, claim the lease, send, and write the outcome — each write conditioned on the state it saw.
 * It never throws for an expected situation; it answers with a verdict on the SQS copy.
 */

/** The structured logger the sender writes to (lambdas/ports/Log.ts). */
export type SenderLog = Log;

export interface SenderSettings {
  /** POSTDATE_MAX_ATTEMPTS: the receive on which a transient failure makes the message `dead`. */
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
  /** POSTDATE_LEASE_SECONDS: longer than the function timeout. */
  readonly leaseSeconds: number;
  /** POSTDATE_RETENTION_DAYS: TTL of terminal records. */
  readonly retentionDays: number;
  /** A copy early by at most this is held in-process; earlier ones are re-enqueued. */
  readonly maxEarlyWaitMs: number;
}

/** One received SQS copy, as much of it as the sender needs. */
export interface ReceivedCopy {
  readonly sqsMessageId: string;
  readonly body: string;
  /** SQS ApproximateReceiveCount of this copy (1 on its first receive). */
  readonly receiveCount: number;
}

/** What happens to the SQS copy: deleted (`ack`), or kept and visible again after `visibilitySeconds`. */
export type CopyVerdict =
  | { readonly kind: 'ack'; readonly reason: string }
  | {
      readonly kind: 'keep';
      /** Undefined: leave the queue's own visibility timeout. */
      readonly visibilitySeconds: number | undefined;
      readonly reason: string;
    };

export interface CopyDependencies {
  readonly store: SenderStore;
  readonly mailer: Mailer;
  readonly queue: DispatchQueue;
  readonly settings: SenderSettings;
  readonly now: () => Date;
  readonly random: () => number;
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly newLeaseOwner: () => string;
  readonly rateLimiter: SendRateLimiter;
  readonly log: SenderLog;
  readonly metrics: SenderMetrics;
}

/** A copy that may go on, with the record it found. */
type Admission = CopyVerdict | { readonly kind: 'proceed'; readonly state: MessageStateRecord };

const ack = (reason: string): CopyVerdict => ({ kind: 'ack', reason });
const keep = (reason: string, visibilitySeconds?: number): CopyVerdict => ({
  kind: 'keep',
  visibilitySeconds,
  reason,
});

export async function processCopy(copy: ReceivedCopy, deps: CopyDependencies): Promise<CopyVerdict> {
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
  const { id, rev } = parsed.payload;
  return new CopyRun(id, rev, copy, deps).run();
}

/** One copy's way through the sender; a class only so the steps can share the context. */
class CopyRun {
  constructor(
    private readonly id: string,
    private readonly rev: number,
    private readonly copy: ReceivedCopy,
    private readonly deps: CopyDependencies,
  ) {}

  async run(): Promise<CopyVerdict> {
    const { deps } = this;
    const admission = this.admit(await deps.store.readState(this.id), deps.now());
    if (admission.kind !== 'proceed') return admission;
    const observed = admission.state;
    const interrupted = observed.status === MESSAGE_STATUS.sending;

    if (interrupted && observed.on_ambiguous === 'hold') return this.holdInterrupted(observed);

    const arrival = decideArrival({
      sendAt: new Date(observed.send_at),
      now: deps.now(),
      maxWaitMs: deps.settings.maxEarlyWaitMs,
    });
    if (arrival.action === 'redelay') return this.redelay(arrival.delaySeconds);
    if (arrival.action === 'wait') await deps.sleep(arrival.milliseconds);

    const now = deps.now();
    const interruption = interrupted
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
      return this.settled(result, 'expired', SENDER_METRIC.expired, interrupted);
    }

    if (observed.group !== null && observed.group !== undefined) {
      const head = await deps.store.readGroupVersion(observed.tenant, observed.group.key);
      if (head !== undefined && head > observed.group.version) {
        if (!this.allowed(observed, 'superseded')) return this.drop('superseded by its group');
        const result = await deps.store.settleUnsent({
          observed,
          to: 'superseded',
          now,
          retentionDays: deps.settings.retentionDays,
          ...interruption,
        });
        return this.settled(result, 'superseded', SENDER_METRIC.superseded, interrupted);
      }
    }

    const owner = deps.newLeaseOwner();
    // The body is read while the claim is written: one round trip fewer on every send. A lost claim
    // wastes the read (rare); the read's failure surfaces only where the body is needed.
    const body = settled(deps.store.readBody(this.id));
    const claim = await deps.store.claim({
      observed,
      owner,
      now,
      leaseUntil: new Date(now.getTime() + deps.settings.leaseSeconds * 1000),
      ...interruption,
    });
    if (claim.outcome === 'conflict') return this.afterConflict('claim lost');
    // The takeover of an expired lease recorded the interrupted attempt as ambiguous.
    if (interrupted) deps.metrics.count(SENDER_METRIC.ambiguous);
    return this.send(claim.record, owner, body);
  }

  /** Whether this copy may go on with the record it found, or what to do with the copy right away. */
  private admit(state: MessageStateRecord | undefined, now: Date): Admission {
    if (state === undefined) return this.drop('no such message');
    if (state.rev !== this.rev) return this.drop(`stale rev (record is at rev ${state.rev})`);
    if (state.status === MESSAGE_STATUS.sending) {
      const leaseEnd = state.lease_until === undefined ? 0 : Date.parse(state.lease_until);
      if (leaseEnd > now.getTime()) {
        // Another sender holds a live lease: come back when it has run out, to see how it ended.
        return keep('leased by another sender', Math.ceil((leaseEnd - now.getTime()) / 1000) + 1);
      }
      return { kind: 'proceed', state };
    }
    // The state machine says which statuses a copy may still claim: scheduled, retrying, and `dead`
    // (terminal, but it takes a copy redriven from the DLQ).
    if (!checkTransition(state.status, MESSAGE_STATUS.sending, 'sender').allowed) {
      return this.drop(`already ${state.status}`);
    }
    return { kind: 'proceed', state };
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
    const { failed } = await this.deps.queue.enqueue([
      { payload: { id: this.id, rev: this.rev }, delaySeconds },
    ]);
    if (failed.length > 0) {
      // Keep this copy instead, visible again when the message is due.
      return keep('early; re-enqueue failed', delaySeconds);
    }
    this.deps.metrics.count(SENDER_METRIC.redelayed);
    this.deps.log.info('sender re-delayed an early copy', this.context({ delaySeconds }));
    return ack('early; re-enqueued');
  }

  private async send(
    claimed: MessageStateRecord,
    owner: string,
    bodyRead: Promise<Settled<MessageBodyRecord | undefined>>,
  ): Promise<CopyVerdict> {
    const { deps } = this;
    // Check, claim, check again: a group raised between the first read and our claim must still win
    // ("approved" is never sent after "paused"). Only grouped messages pay this second read.
    if (claimed.group !== null && claimed.group !== undefined) {
      const head = await deps.store.readGroupVersion(claimed.tenant, claimed.group.key);
      if (head !== undefined && head > claimed.group.version) {
        const result = await deps.store.settleUnsent({
          observed: claimed,
          owner,
          to: 'superseded',
          now: deps.now(),
          retentionDays: deps.settings.retentionDays,
        });
        return this.settled(result, 'superseded', SENDER_METRIC.superseded);
      }
    }
    const body = unwrap(await bodyRead);
    if (body === undefined) {
      const missing = missingBodyRecord(deps.now());
      const result = await deps.store.recordOutcome({
        claimed,
        owner,
        to: 'failed',
        now: deps.now(),
        attempt: missing.attempt,
        lastError: missing.lastError,
        retentionDays: deps.settings.retentionDays,
      });
      deps.log.error('sender found no body for a message', this.context({}));
      return this.settled(result, 'failed (no body)', SENDER_METRIC.failed);
    }

    await deps.rateLimiter.acquire();
    const outcome = await deps.mailer.send(outgoingEmail(this.id, body));
    const now = deps.now();
    deps.metrics.milliseconds(SENDER_METRIC.smtpDuration, outcome.durationMs);
    return this.recordOutcome(claimed, owner, outcome, now);
  }

  private async recordOutcome(
    claimed: MessageStateRecord,
    owner: string,
    outcome: SendOutcome,
    now: Date,
  ): Promise<CopyVerdict> {
    const { deps } = this;
    const attempt = attemptRecord(outcome, now);
    const plan = this.plan(claimed, outcome);
    const result = await deps.store.recordOutcome({
      claimed,
      owner,
      to: plan.to,
      now,
      attempt,
      lastError: outcome.delivered ? null : lastErrorOf(outcome.failure),
      retryAt: plan.to === 'retrying' ? new Date(now.getTime() + plan.visibilitySeconds * 1000) : undefined,
      retentionDays: deps.settings.retentionDays,
    });
    const details = this.context({
      status: plan.to,
      class: outcome.delivered ? 'sent' : outcome.failure.class,
      code: attempt.code,
      enhancedCode: attempt.enhanced_code,
      receiveCount: this.copy.receiveCount,
      durationMs: outcome.durationMs,
      ...(attempt.rejected_domains ? { rejectedDomains: attempt.rejected_domains } : {}),
    });
    if (result.outcome === 'conflict') {
      // Our lease was taken over (the send outlived it); the new holder has its own copy and
      // treats our attempt as ambiguous. Nothing more is ours to write.
      deps.log.error('sender lost its lease before recording the outcome', details);
      return ack('lease lost before the outcome');
    }
    deps.log.info('sender recorded an outcome', details);
    this.countOutcome(plan.to, outcome);
    if (outcome.delivered) {
      deps.metrics.milliseconds(
        SENDER_METRIC.lateness,
        Math.max(0, now.getTime() - Date.parse(claimed.send_at)),
      );
      if (outcome.rejected.length > 0) {
        deps.log.warn('the relay refused some recipients', {
          ...this.context({}),
          rejectedDomains: domainsOf(outcome.rejected.map((recipient) => recipient.address)),
        });
      }
    }
    switch (plan.to) {
      case 'retrying':
        return keep('retrying after backoff', plan.visibilitySeconds);
      case 'dead':
        // Visible at once: the queue's redrive moves it to the DLQ instead of delivering it again.
        return keep('attempts exhausted; to the DLQ', 0);
      default:
        return ack(plan.to);
    }
  }

  /** Where a send's outcome takes the record. */
  private plan(
    claimed: MessageStateRecord,
    outcome: SendOutcome,
  ):
    | { readonly to: 'sent' | 'failed' | 'unknown' | 'dead' }
    | { readonly to: 'retrying'; readonly visibilitySeconds: number } {
    if (outcome.delivered) return { to: 'sent' };
    const failure = outcome.failure;
    if (failure.class === 'permanent') return { to: 'failed' };
    if (failure.class === 'ambiguous' && claimed.on_ambiguous === 'hold') return { to: 'unknown' };
    // transient, config, or ambiguous under `retry` (at-least-once, same Message-ID).
    if (this.copy.receiveCount >= this.deps.settings.maxAttempts) return { to: 'dead' };
    const policy = {
      baseSeconds: this.deps.settings.retryBaseSeconds,
      capSeconds: this.deps.settings.retryCapSeconds,
    };
    const attempt = this.copy.receiveCount - 1;
    const visibilitySeconds =
      failure.class === 'config'
        ? configBackoffSeconds(attempt, policy, this.deps.random)
        : backoffSeconds(attempt, policy, this.deps.random);
    return { to: 'retrying', visibilitySeconds };
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
    const now = this.deps.now();
    const admission = this.admit(await this.deps.store.readState(this.id), now);
    if (admission.kind !== 'proceed') return admission;
    this.deps.log.info('sender will see this copy again', this.context({ reason }));
    return keep(reason);
  }

  private context(extra: Record<string, unknown>): Record<string, unknown> {
    return { id: this.id, rev: this.rev, sqsMessageId: this.copy.sqsMessageId, ...extra };
  }
}

/** Whether a deadline (ISO time, or none) has passed. */
function isPast(deadline: string | null | undefined, now: Date): boolean {
  if (deadline === null || deadline === undefined) return false;
  const at = Date.parse(deadline);
  return Number.isFinite(at) && at < now.getTime();
}

/** The body item as the mailer takes it; only strings reach nodemailer. */
function outgoingEmail(id: string, body: MessageBodyRecord): OutgoingEmail {
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
  };
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
