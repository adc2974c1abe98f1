/**
 * Idempotent enqueue (DESIGN §4). The message's id is derived from (tenant, Idempotency-Key), so the
 * `attribute_not_exists` conditions on its records are the idempotency guard (docs/decisions/,
 * "The id is the idempotency guard"):
 *
 * - an ungrouped message is written as two conditional puts, the body first, then the state record
 *   (which alone makes it visible to the relay): no transaction, no guard item, no pre-read;
 * - a grouped message is written in one transaction with its group head, so "approved" can never be
 *   accepted without the head knowing it.
 *
 * When a record already exists, the fingerprint (on the state record, and on the body) tells a replay
 * (200, the same message) from a reused key (422); a replay never writes anything. A body without a
 * state record is an enqueue that died between its two puts: a request with the same fingerprint
 * completes it, for the whole retention.
 */
import type { EnqueueRequest } from '../core/enqueueRequest.js';
import { isTerminal } from '../core/messageStatus.js';
import { PostdateError } from '../core/postdateError.js';
import type { ApiStore, EnqueueRecords, EnqueueWriteResult } from '../ports/ApiStore.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import { outboxRecords } from '../store/outboxRecords.js';

export type EnqueueOutcome =
  | { readonly kind: 'created'; readonly state: MessageStateRecord }
  | { readonly kind: 'replayed'; readonly state: MessageStateRecord }
  | { readonly kind: 'key-reused' };

/** Too many lost races in a row (heavy contention on one key or group): the client may retry. */
export class EnqueueContentionError extends PostdateError {
  override readonly name = 'EnqueueContentionError';
  constructor(message: string) {
    super(message, { class: 'transient' });
  }
}

export interface EnqueueInput {
  readonly tenant: string;
  readonly idempotencyKey: string;
  readonly request: EnqueueRequest;
  readonly now: Date;
  readonly random: () => number;
  readonly retentionDays: number;
  /** A template message that names no version: the latest, which its records pin. */
  readonly templateVersion?: number;
  /** The api will put the copy of a message due now on the queue itself (api/immediateCopy.ts). */
  readonly apiCopy?: boolean;
}

export interface EnqueueDependencies {
  readonly store: ApiStore;
  /** Waits between attempts after a contended transaction (jittered, a few ms). */
  readonly sleep: (milliseconds: number) => Promise<void>;
}

const MAX_ATTEMPTS = 10;

const DAY_MS = 86_400_000;

/**
 * How old a body without its state record may be and still be completed by a replay: the retention.
 * A state record lives at least POSTDATE_RETENTION_DAYS after it was written (its TTL is set only
 * once it is final, to the retention after that), so a younger orphan was never followed by its state
 * record: the enqueue died between its two puts. An older one may be the body of a message whose
 * state already expired: the key is spent, never reused for a new send.
 */
export function resumeWindowMs(retentionDays: number): number {
  return retentionDays * DAY_MS;
}

export async function enqueueMessage(
  deps: EnqueueDependencies,
  input: EnqueueInput,
): Promise<EnqueueOutcome> {
  const group = input.request.group;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const groupHeadVersion = group ? await deps.store.readGroupHead(input.tenant, group.key) : null;
    const write = outboxRecords({
      tenant: input.tenant,
      idempotencyKey: input.idempotencyKey,
      request: input.request,
      now: input.now,
      groupHeadVersion,
      retentionDays: input.retentionDays,
      ...(input.templateVersion === undefined ? {} : { templateVersion: input.templateVersion }),
      ...(input.apiCopy === true ? { apiCopy: true } : {}),
    });
    const { result, wroteBody } = group
      ? { result: await deps.store.writeEnqueue(write), wroteBody: false }
      : await writeInTurn(deps.store, write);
    if (result.kind === 'written') return { kind: 'created', state: write.state };
    if (result.kind === 'exists') {
      const settled = await settleExisting(deps.store, write, input, wroteBody);
      if (settled) return settled;
    }
    if (result.kind === 'contended') await deps.sleep(Math.floor(input.random() * 20 * (attempt + 1)) + 5);
    // exists but unsettled: another request completed the orphan first (or a record expired under
    // us), so the next round reads what is there now; group-moved: the next round reads the new head.
  }
  throw new EnqueueContentionError(`enqueue lost ${MAX_ATTEMPTS} races in a row`);
}

/** An ungrouped message: the body, then the state record that makes it visible. */
async function writeInTurn(
  store: ApiStore,
  write: EnqueueRecords,
): Promise<{ result: EnqueueWriteResult; wroteBody: boolean }> {
  const body = await store.putNew(write.body);
  if (body.kind !== 'written') return { result: body, wroteBody: false };
  return { result: await store.putNew(write.state), wroteBody: true };
}

/**
 * A record of this id exists. Answers the replay or the reuse, completes a dead enqueue of the same
 * request, or answers undefined when a racing request has not finished writing yet. The state
 * record's fingerprint decides while it lives (the body may have expired before it); when this
 * request wrote a body beside an ended message (its body expired) or under another request's key, it
 * deletes that body again: a replay writes nothing, and a reuse never gives the original new content.
 */
async function settleExisting(
  store: ApiStore,
  write: EnqueueRecords,
  input: EnqueueInput,
  wroteBody: boolean,
): Promise<EnqueueOutcome | undefined> {
  const ours = write.body.fingerprint;
  const state = await store.getMessage(write.state.tenant, write.messageId);
  if (state) {
    // A live message's body carries no TTL, so a body we could put beside its state record is the
    // one it reads: a racing identical request completed the message with it. Only the body we put
    // beside an ended message (its own body expired) or under another request's key is undone.
    const readsOurBody = !isTerminal(state.status) && (state.fingerprint ?? ours) === ours;
    if (wroteBody && !readsOurBody) await store.deleteOwnBody(write.messageId, write.body);
    // A state record written before it carried the fingerprint: the body's decides, if it is not ours.
    const stored =
      state.fingerprint ??
      (wroteBody ? undefined : (await store.readBodyStamp(write.messageId))?.fingerprint);
    return stored === ours ? { kind: 'replayed', state } : { kind: 'key-reused' };
  }
  const body = await store.readBodyStamp(write.messageId);
  if (!body) return undefined;
  if (body.fingerprint !== ours) return { kind: 'key-reused' };
  const resumable =
    write.state.group === null &&
    input.now.getTime() - Date.parse(body.created_at) <= resumeWindowMs(input.retentionDays);
  if (!resumable) return { kind: 'key-reused' };
  const completed = await store.putNew(write.state);
  return completed.kind === 'written' ? { kind: 'created', state: write.state } : undefined;
}
