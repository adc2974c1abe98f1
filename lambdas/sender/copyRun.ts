import { type DeadLetterPayload, deadLetterPayload } from '../core/dispatchPayload.js';
import { errorForLog } from '../core/errorForLog.js';
import type { MessageStatus } from '../core/messageStatus.js';
import { SENDER_METRIC, type SenderCountMetric } from '../core/metricNames.js';
import type { RecipientProgress } from '../core/recipients.js';
import { isRefused, type RefusedRecord } from '../core/recordLayout.js';
import { admitCopy } from '../core/sendDecision.js';
import type { SendTiming } from '../core/sendTiming.js';
import type { TemplateRenderer } from '../core/templateRenderer.js';
import { isLiveSide } from '../core/testSide.js';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { Mailer } from '../ports/Mailer.js';
import type { SenderMetrics } from '../ports/SenderMetrics.js';
import type { SenderStore } from '../ports/SenderStore.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import type { RelayGate, SendRateLimiter } from './relayGate.js';

/**
 * One copy's way through the sender, as every step shares it: the copy, the sender's parts and the
 * invocation's time; the verdict on the SQS copy that every step ends with; and the small steps any
 * stage may end with (drop the copy, settle without sending, read the record again after a lost
 * condition, move a dead copy to the DLQ).
 *
 * The way itself, top to bottom: createSenderHandler.ts (the batch) → processCopy.ts (read, admit,
 * claim; the gate and the rate are relayGate.ts) → sendClaimed.ts (under the lease: body, template,
 * suppressions, SMTP, the outcome decided) → outcomeWrite.ts (the write until it lands).
 */

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
  /**
   * POSTDATE_ALLOWED_FROM: a message whose `from` it does not allow is never sent, however it came
   * in (core/sendDecision.ts `bodyFault`, decision 0165).
   */
  readonly allowedFrom: readonly string[];
  /**
   * When a released or kept copy comes back (seconds): {@link SHORT_RETRY_SECONDS} in every wiring;
   * a test passes a shorter one so that it does not wait the whole of it (decision 0273).
   */
  readonly shortRetrySeconds: number;
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

export interface CopyDependencies {
  readonly store: SenderStore;
  readonly mailer: Mailer;
  /** A test message's mailer in place of the relay (DESIGN §14), given its attempts so far. */
  readonly simulator: (attemptsBefore: number) => Mailer;
  /** Where attachments are asked for before MAIL FROM and read as they are sent (DESIGN §13, decision 0171); absent: none can be sent. */
  readonly attachments?: Pick<AttachmentStore, 'describe' | 'open'> | undefined;
  readonly queue: DispatchQueue;
  /** The send queue's DLQ: where the sender itself puts the copy of a message that became `dead`. */
  readonly deadLetters: DispatchQueue;
  readonly settings: SenderSettings;
  readonly now: () => Date;
  readonly random: () => number;
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly newLeaseOwner: () => string;
  /** The first relay's send rate (each relay's own is `SenderRelay.rateLimiter`). */
  readonly rateLimiter: SendRateLimiter;
  /** Renders template messages from their pinned version (compiled once per warm function). */
  readonly templates: TemplateRenderer;
  readonly log: Log;
  readonly metrics: SenderMetrics;
  /** The sending gate (relay breaker, operator pause); absent, every copy may be sent. */
  readonly relayGate?: RelayGate | undefined;
  /**
   * The relays in order (DESIGN §15), the first being `mailer` and `relayGate` under its name; a
   * copy leaves through the first whose gate lets it (processCopy.ts).
   */
  readonly relays: readonly SenderRelay[];
}

/** One relay as the sender uses it: its name (in attempts and logs), its mailer and its gate. */
export interface SenderRelay {
  readonly name: string;
  readonly mailer: Mailer;
  readonly gate?: RelayGate | undefined;
  /** This relay's send rate in this container (DESIGN §5 "Rate", §15); absent: unlimited. */
  readonly rateLimiter?: SendRateLimiter | undefined;
}

/** Which copy this is: the message's `{id, rev}` and the SQS copy that carries it (what logs name). */
export interface CopyIdentity {
  readonly id: string;
  readonly rev: number;
  readonly copy: Pick<ReceivedCopy, 'sqsMessageId'>;
}

/** One copy `{v, id, rev}` on its way, with what every step needs. */
export interface CopyRun extends CopyIdentity {
  /** The copy is one the sender put in the DLQ (`"dlq": true`), so an operator redrove it. */
  readonly fromDeadLetters: boolean;
  /** Which death of the message such a copy stands for (`"death"`, decision 0149); absent on older ones. */
  readonly death?: number | undefined;
  readonly copy: ReceivedCopy;
  readonly deps: CopyDependencies;
  readonly time: InvocationTime;
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
       * This copy is the record's `dead_copy` and its move to the DLQ is still owed, as this DLQ
       * copy: one that replaces it (near the queue's backstop) goes to the DLQ, never back on the
       * send queue under a new SQS id that the record does not know.
       */
      readonly deadCopy?: DeadLetterPayload;
    };

/** When a released or kept copy comes back after a read failed or a move to the DLQ did not happen. */
export const SHORT_RETRY_SECONDS = 5;

export const ack = (reason: string): CopyVerdict => ({ kind: 'ack', reason });

export const keep = (reason: string, visibilitySeconds?: number): CopyVerdict => ({
  kind: 'keep',
  visibilitySeconds,
  reason,
});

/** The copy of a `dead` message whose move to the DLQ failed: back soon, to try the move again. */
const keepDeadCopy = (letter: DeadLetterPayload, shortRetrySeconds: number): CopyVerdict => ({
  kind: 'keep',
  visibilitySeconds: shortRetrySeconds,
  reason: 'dead; the move to the DLQ failed',
  deadCopy: letter,
});

/** Whether a copy may go on with the record it found, or the verdict on it right away. */
export type Admitted =
  | { readonly kind: 'verdict'; readonly verdict: Promise<CopyVerdict> | CopyVerdict }
  | {
      readonly kind: 'proceed';
      readonly takeover: boolean;
      readonly redrive: boolean;
      readonly record: MessageStateRecord;
    };

/** `state` as the reader hands it on: a newer writer's record as its refusal (core/recordLayout.ts). */
export function admitted(run: CopyRun, state: MessageStateRecord | RefusedRecord | undefined): Admitted {
  const admission = admitCopy(
    state,
    {
      rev: run.rev,
      sqsMessageId: run.copy.sqsMessageId,
      fromDeadLetters: run.fromDeadLetters,
      death: run.death,
    },
    run.deps.now(),
  );
  switch (admission.kind) {
    case 'drop':
      return { kind: 'verdict', verdict: drop(run, admission.reason) };
    case 'refuse':
      // Left as it is for an upgraded stack, whose sweeper dispatches it (decision 0166).
      run.deps.metrics.count(SENDER_METRIC.newerWriterRefusals);
      run.deps.log.error(
        'sender refused a message a newer writer made: upgrade the stack',
        logContext(run, { reason: admission.reason }),
      );
      return { kind: 'verdict', verdict: ack('refused: a newer writer made the record') };
    case 'wait-for-lease':
      // Another sender holds a live lease: come back when it has run out, to see how it ended.
      return { kind: 'verdict', verdict: keep('leased by another sender', admission.visibilitySeconds) };
    case 'move-to-dead-letters':
    case 'proceed':
      // Answered only for a record that was read and not refused.
      if (state === undefined || isRefused(state))
        return { kind: 'verdict', verdict: drop(run, 'no such message') };
      if (admission.kind === 'move-to-dead-letters')
        return { kind: 'verdict', verdict: retireDeadCopy(run, state) };
      return { ...admission, record: state };
  }
}

export function drop(run: CopyRun, reason: string): CopyVerdict {
  run.deps.log.debug?.('sender dropped a copy', logContext(run, { reason }));
  return ack(reason);
}

/**
 * Dead means dead (DESIGN §5), the one place a copy enters the DLQ: the record says `dead` (written
 * first, under our lease), then the copy goes to the DLQ marked as the sender's own (`"dlq": true`)
 * and naming the death (`letter`, made from the record the death write left), then the record says
 * its copy is there (`recordDeadLetter`: it leaves the partition of dead messages whose copy is owed,
 * decision 0159), then this copy is deleted (`ack`). A failed move keeps this copy (`keepDeadCopy`);
 * it comes back as the record's `dead_copy` and the move is tried again — or, near the queue's
 * backstop, the batch (createSenderHandler.ts) calls this again instead of refreshing the copy. A
 * copy the backstop moves instead is never recorded: the sweeper makes the death's copy then.
 */
export async function moveToDeadLetters(
  deps: Pick<CopyDependencies, 'deadLetters' | 'store' | 'log' | 'metrics' | 'settings'>,
  dead: CopyIdentity,
  letter: DeadLetterPayload,
): Promise<CopyVerdict> {
  const { failed, error } = await deps.deadLetters.enqueue([{ payload: letter, delaySeconds: 0 }]);
  if (failed.length > 0) {
    deps.log.warn(
      'sender could not move a dead copy to the DLQ; it will try again',
      logContext(dead, error === undefined ? {} : { error: errorForLog(error) }),
    );
    return keepDeadCopy(letter, deps.settings.shortRetrySeconds);
  }
  deps.metrics.count(SENDER_METRIC.deadLettered);
  try {
    await deps.store.recordDeadLetter(letter);
  } catch (caught) {
    // The copy is in the DLQ: the sweeper makes one more (a second copy, which its walk deletes).
    deps.log.warn(
      'sender could not record its move to the DLQ',
      logContext(dead, { error: errorForLog(caught) }),
    );
  }
  return ack('dead; moved to the DLQ');
}

/**
 * Where the copy of a message that became `dead` goes, given the record as the death left it. A live
 * one's goes to the DLQ (`moveToDeadLetters`). A test message's (DESIGN §14) is deleted. Test and live data never meet,
 * so it never waits in the live DLQ, never fires its alarm, and a `dlq redrive --all` never mixes it
 * in. Its record says `dead`, and so do the API, its events and webhooks; a retry through the API
 * sends it again (decision 0135).
 */
export function retireDeadCopy(
  run: CopyRun,
  record: Pick<MessageStateRecord, 'id' | 'rev' | 'attempts' | 'tenant'>,
): CopyVerdict | Promise<CopyVerdict> {
  if (isLiveSide(record.tenant)) return moveToDeadLetters(run.deps, run, deadLetterPayload(record));
  run.deps.log.info(
    'sender deleted a dead test message’s copy (no live DLQ for the test side)',
    logContext(run, {}),
  );
  return ack('dead (test side); copy deleted');
}

/**
 * After a write that settled the message without a send of ours: count it (a live message only,
 * core/testSide.ts `isLiveSide`), say so, acknowledge the copy.
 */
export function settled(
  run: CopyRun,
  record: Pick<MessageStateRecord, 'tenant'>,
  status: MessageStatus,
  what: string,
  metric: SenderCountMetric,
  interrupted = false,
): CopyVerdict {
  if (isLiveSide(record.tenant)) {
    run.deps.metrics.count(metric);
    if (interrupted) run.deps.metrics.count(SENDER_METRIC.ambiguous);
  }
  run.deps.log.info('sender settled a message without sending', logContext(run, { status }));
  return ack(what);
}

/**
 * A conditional write lost: someone else moved the record. Read it again (unless `current` was just
 * read); a record that is gone, stale or finished needs nothing from this copy; one another sender
 * holds comes back when the lease runs out; anything else comes back on the queue's own timeout.
 */
export async function afterConflict(
  run: CopyRun,
  reason: string,
  current?: MessageStateRecord | RefusedRecord,
): Promise<CopyVerdict> {
  const admission = admitted(run, current ?? (await run.deps.store.readState(run.id)));
  if (admission.kind !== 'proceed') return admission.verdict;
  run.deps.log.info('sender will see this copy again', logContext(run, { reason }));
  return keep(reason, run.deps.settings.shortRetrySeconds);
}

/** The group head of a grouped message (undefined for one without a group or a group without a head). */
export async function groupHeadOf(run: CopyRun, record: MessageStateRecord): Promise<number | undefined> {
  if (record.group === null || record.group === undefined) return undefined;
  return run.deps.store.readGroupVersion(record.tenant, record.group.key);
}

/** The record's recipient progress (positions in the body's to, cc, bcc). */
export function progressOf(record: MessageStateRecord): RecipientProgress {
  return {
    accepted: record.rcpt_accepted ?? [],
    rejected: record.rcpt_rejected ?? [],
    ...(record.rcpt_suppressed === undefined ? {} : { suppressed: record.rcpt_suppressed }),
  };
}

export function logContext(run: CopyIdentity, extra: Record<string, unknown>): Record<string, unknown> {
  return { id: run.id, rev: run.rev, sqsMessageId: run.copy.sqsMessageId, ...extra };
}

export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** A promise's outcome as a value, so a result nobody waits for can never become an unhandled rejection. */
export type Settled<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

export function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

export function unwrap<T>(outcome: Settled<T>): T {
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
