/**
 * Idempotent enqueue (DESIGN §4). The message and its idempotency guard are written in one
 * transaction with `attribute_not_exists` conditions (lambdas/outbox/outboxItems.ts). Before writing,
 * the guard is read: a replay answers from it without a (twice-billed) failed transaction. A lost
 * race (the guard appeared between the read and the write) reads the winner back. A replay never
 * writes anything, so a different body cannot touch the original.
 */
import type { EnqueueRequest } from '../core/messageSchema.js';
import { buildOutboxWrite, idempotencyKeyHash, requestFingerprint } from '../outbox/outboxItems.js';
import type { ApiStore } from '../store/apiStore.js';
import type { MessageStateRecord } from '../store/messageRecord.js';

export type EnqueueOutcome =
  | { readonly kind: 'created'; readonly state: MessageStateRecord }
  | { readonly kind: 'replayed'; readonly state: MessageStateRecord }
  | { readonly kind: 'key-reused' };

/** Too many lost races in a row (heavy contention on one key or group): the client may retry. */
export class EnqueueContentionError extends Error {
  override readonly name = 'EnqueueContentionError';
  readonly class = 'transient';
}

export interface EnqueueInput {
  readonly tenant: string;
  readonly idempotencyKey: string;
  readonly request: EnqueueRequest;
  readonly now: Date;
  readonly random: () => number;
  readonly retentionDays: number;
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
  const keyHash = idempotencyKeyHash(input.idempotencyKey);
  const fingerprint = requestFingerprint(input.request);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const guard = await deps.store.readGuard(input.tenant, keyHash);
    if (guard) {
      if (guard.fingerprint !== fingerprint) return { kind: 'key-reused' };
      const state = await deps.store.getMessage(input.tenant, guard.message_id);
      // The guard and the state are written together; a guard without state means the state's TTL
      // ran first. Nothing to replay, and a new message would break the key's promise.
      if (state) return { kind: 'replayed', state };
      return { kind: 'key-reused' };
    }
    const group = input.request.group;
    const groupHeadVersion = group ? await deps.store.readGroupHead(input.tenant, group.key) : null;
    const write = buildOutboxWrite({
      tableName: deps.store.tableName,
      tenant: input.tenant,
      idempotencyKey: input.idempotencyKey,
      request: input.request,
      now: input.now,
      random: input.random,
      groupHeadVersion,
      retentionDays: input.retentionDays,
    });
    const result = await deps.store.writeEnqueue(write.items);
    if (result.kind === 'written') return { kind: 'created', state: write.state };
    if (result.kind === 'contended') await deps.sleep(Math.floor(input.random() * 20 * (attempt + 1)) + 5);
    // key-taken: the next round reads the winner's guard; group-moved: it reads the new head.
  }
  throw new EnqueueContentionError(`enqueue lost ${MAX_ATTEMPTS} races in a row`);
}
