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
import { messageIdFor } from '../core/ids.js';
import { PostdateError } from '../core/postdateError.js';
import {
  decideReplay,
  needsBodyStamp,
  type ReplayDecision,
  type ReplayInput,
} from '../core/replayDecision.js';
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
 * A record of this id exists: reads what is there and acts on the replay rule (core/replayDecision.ts)
 * — the replay or the reuse, a dead enqueue of the same request completed, or undefined when a racing
 * request has not finished writing yet.
 */
async function settleExisting(
  store: ApiStore,
  write: EnqueueRecords,
  input: EnqueueInput,
  wroteBody: boolean,
): Promise<EnqueueOutcome | undefined> {
  const ours = write.body.fingerprint;
  const { state, decision } = await judgeStored(store, write.state.tenant, write.messageId, () => ours, {
    wroteBody,
    grouped: write.state.group !== null,
    now: input.now,
    retentionDays: input.retentionDays,
  });
  if ('undoOwnBody' in decision && decision.undoOwnBody)
    await store.deleteOwnBody(write.messageId, write.body);
  switch (decision.kind) {
    case 'replay':
      return state ? { kind: 'replayed', state } : undefined;
    case 'key-reused':
      return { kind: 'key-reused' };
    case 'complete': {
      const completed = await store.putNew(write.state);
      return completed.kind === 'written' ? { kind: 'created', state: write.state } : undefined;
    }
    case 'in-flight':
      return undefined;
  }
}

/**
 * The stored message a request that is not (or no longer) a valid new message replays, if any: its
 * time bounds and its template's state judge a new message, not a replay, so a request whose original
 * exists (its `not_after` since passed, its template since archived) is answered with it.
 * `fingerprintAt` is the request's fingerprint as validated at the original's creation, or undefined
 * when it was no valid message then either.
 */
export async function findReplay(
  store: ApiStore,
  input: {
    readonly tenant: string;
    readonly idempotencyKey: string;
    readonly fingerprintAt: (createdAt: Date) => string | undefined;
    readonly now: Date;
    readonly retentionDays: number;
  },
): Promise<MessageStateRecord | undefined> {
  const { state, decision } = await judgeStored(
    store,
    input.tenant,
    messageIdFor(input.tenant, input.idempotencyKey),
    input.fingerprintAt,
    { wroteBody: false, grouped: false, now: input.now, retentionDays: input.retentionDays },
  );
  return decision.kind === 'replay' && state ? state : undefined;
}

/** The one reading of a message's records for the replay rule, and the rule's answer on them. */
async function judgeStored(
  store: ApiStore,
  tenant: string,
  messageId: string,
  fingerprintAt: (createdAt: Date) => string | undefined,
  request: Omit<ReplayInput, 'ours' | 'state' | 'body'>,
): Promise<{ state: MessageStateRecord | null; decision: ReplayDecision }> {
  const state = await store.getMessage(tenant, messageId);
  const body = needsBodyStamp({ state, wroteBody: request.wroteBody })
    ? await store.readBodyStamp(messageId)
    : null;
  const createdAt = state?.created_at ?? body?.created_at;
  const ours = createdAt === undefined ? undefined : fingerprintAt(new Date(createdAt));
  return { state, decision: decideReplay({ ...request, ours, state, body }) };
}
