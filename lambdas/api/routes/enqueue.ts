/**
 * POST /v1/messages: validates the body and the Idempotency-Key, enqueues once per key, and answers
 * a replay with the original message (200, `idempotent-replayed: true`).
 *
 * Idempotent enqueue (DESIGN §4). The message's id is derived from (tenant, Idempotency-Key), so the
 * `attribute_not_exists` conditions on its records are the idempotency guard (docs/decisions/,
 * "The id is the idempotency guard"):
 *
 * - an ungrouped message is written as one conditional put of its state record when its body is
 *   small enough to go inside it (store/bodyContent.ts `placeBody`), else as two, the body first,
 *   then the state record (which alone makes it visible to the relay): no transaction, no guard
 *   item, no pre-read;
 * - a grouped message is written in one transaction with its group head, so "approved" can never be
 *   accepted without the head knowing it.
 *
 * When a record already exists, the fingerprint (on the state record, and on the body) tells a replay
 * (200, the same message) from a reused key (422); a replay never writes anything. A body without a
 * state record is an enqueue that died between its two puts: a request with the same fingerprint
 * completes it, for the whole retention.
 *
 * The api's own copy of a message due now or within a minute (`POSTDATE_API_IMMEDIATE_COPY`,
 * docs/decisions/0111-api-copy-for-short-delays.md): right after its state record is written, the
 * copy the relay would put on the send queue, delayed until it is due, so the sender need not wait
 * for the stream and the relay. The relay's copy still follows, held back a
 * few seconds because the record says `api_copy` — the stream stays the safety net, for a copy this
 * fails to put and for an api that dies before it — and the sender drops the second by the `rev`
 * and status rules (DESIGN §2), so this can only make the message earlier, never doubled.
 */

import { type AttachmentInput, requestedAsStored, type StoredAttachment } from '../../core/attachments.js';
import { CONFIG_SETTINGS } from '../../core/configSpec.js';
import { messageIdFor } from '../../core/ids.js';
import {
  type EnqueueRequest,
  requestFingerprint,
  simulatorRecipientErrors,
  validateEnqueueRequest,
} from '../../core/messageSchema.js';
import { PostdateError } from '../../core/postdateError.js';
import { type ProblemDetails, problem, validationProblem } from '../../core/problem.js';
import { sqsDelaySeconds } from '../../core/queueLimits.js';
import {
  decideReplay,
  needsBodyStamp,
  type ReplayDecision,
  type ReplayInput,
} from '../../core/replayDecision.js';
import { isLiveSide } from '../../core/testSide.js';
import type { ApiStore, BodyStamp, EnqueueRecords, EnqueueWriteResult } from '../../ports/ApiStore.js';
import type { DispatchQueue } from '../../ports/DispatchQueue.js';
import type { MessageStateRecord } from '../../store/messageRecord.js';
import { messageView } from '../../store/messageView.js';
import { outboxRecords } from '../../store/outboxRecords.js';
import {
  headerValue,
  jsonResult,
  type Outcome,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  readIdempotencyKey,
  readJsonBody,
} from '../route.js';
import {
  type CheckedAttachments,
  checkAttachments,
  inlineAllowance,
  type MessageContent,
  storeAttachments,
} from './attachments.js';
import { checkTemplateMessage } from './templates.js';

export function enqueueRoute(deps: RouteDependencies): RouteHandler {
  return async function enqueue({ tenant, event }) {
    const body = readJsonBody(event, { attachmentAllowance: inlineAllowance(deps.config) });
    if (!body.ok) return problemResult(body.problem);
    const key = readIdempotencyKey(headerValue(event.headers, 'idempotency-key'));
    if (!key.ok) return problemResult(key.problem);
    const item = { tenant, idempotencyKey: key.key, body: body.value, now: deps.now() };
    const judged = await judgeEnqueue(deps, item);
    return enqueueOutcome(judged.kind === 'valid' ? await writeJudgedEnqueue(deps, item, judged) : judged);
  };
}

/** What one enqueue answers, before HTTP: a new message, a replay of the stored one, or a problem. */
export type EnqueueAnswer =
  | {
      readonly kind: 'created';
      readonly state: MessageStateRecord;
      readonly immediateCopy?: ImmediateCopyOutcome | undefined;
    }
  | { readonly kind: 'replayed'; readonly state: MessageStateRecord }
  | { readonly kind: 'problem'; readonly problem: ProblemDetails };

/** A request judged a valid new message: what its write needs. */
export interface ValidEnqueue {
  readonly kind: 'valid';
  readonly request: EnqueueRequest;
  /** A template message that names no version: the latest now. */
  readonly templateVersion?: number | undefined;
  /** Its attachments, checked (nothing stored yet): writeJudgedEnqueue stores them first. */
  readonly attachments?: CheckedAttachments | undefined;
}

/** One enqueue request: the body as parsed JSON, under its idempotency key, at `now`. */
export interface EnqueueItem {
  readonly tenant: string;
  readonly idempotencyKey: string;
  readonly body: unknown;
  readonly now: Date;
}

/**
 * Judges one enqueue without writing: valid (then writeJudgedEnqueue stores it), or the answer it
 * already has — the stored message it replays, or its problem. A single enqueue and each item of a
 * batch (routes/enqueueBatch.ts) go through here and writeJudgedEnqueue alike.
 */
export async function judgeEnqueue(
  deps: RouteDependencies,
  item: EnqueueItem,
): Promise<ValidEnqueue | EnqueueAnswer> {
  const validation = {
    allowedFrom: deps.config.allowedFrom,
    defaultFrom: deps.config.defaultFrom,
    maxHorizonDays: deps.config.maxHorizonDays,
  };
  const parsed = validateEnqueueRequest(item.body, { ...validation, now: item.now });
  // Time bounds, the allowed senders, a template's state and an upload's day judge a new message, not
  // a replay (findReplay): the request is read as of the original's creation under any sender and
  // horizon a deployment may set (a deploy between a request and its retry changes neither what it
  // asked nor that it was stored; decision 0236). `defaultFrom` stays: the fingerprint covers it.
  const asReplay = {
    ...validation,
    allowedFrom: ['*'],
    maxHorizonDays: CONFIG_SETTINGS.maxHorizonDays.kind.max,
    zonesAsStored: true,
  };
  const replayOr = async (problem: ProblemDetails): Promise<EnqueueAnswer> => {
    const original = await findReplay(deps.store, {
      tenant: item.tenant,
      idempotencyKey: item.idempotencyKey,
      fingerprintAt: (createdAt, stored) => {
        const asOriginal = validateEnqueueRequest(item.body, { ...asReplay, now: createdAt });
        if (!asOriginal.ok) return undefined;
        const { attachments } = asOriginal.value;
        // Its uploads as the stored message keeps them: an upload lives a day, the message longer.
        return requestFingerprint(
          attachments === undefined || stored === null
            ? asOriginal.value
            : { ...asOriginal.value, attachments: requestedAsStored(attachments, stored) },
        );
      },
      now: item.now,
      retentionDays: deps.config.retentionDays,
    });
    return original === undefined ? { kind: 'problem', problem } : { kind: 'replayed', state: original };
  };
  if (!parsed.ok) return replayOr(validationProblem(parsed.errors));
  // Only a test key's message may name the mailbox simulator (decision 0192); one stored before replays.
  const simulated = isLiveSide(item.tenant) ? simulatorRecipientErrors(parsed.value) : [];
  if (simulated.length > 0) return replayOr(validationProblem(simulated));
  let templateVersion: number | undefined;
  // The subject, text and html the message will be sent with: the request's, or what its template
  // rendered (once, here), so the whole size is judged on what is sent (DESIGN §13).
  let content: MessageContent = parsed.value;
  if (parsed.value.template != null) {
    const checked = await checkTemplateMessage(deps, item.tenant, parsed.value);
    if (!checked.ok) return replayOr(checked.problem);
    templateVersion = checked.version;
    content = checked.content;
  }
  // Every check that can refuse the attachments runs here, before anything is stored, so a strict
  // batch is judged whole before it writes (DESIGN §3a).
  let attachments: CheckedAttachments | undefined;
  if (parsed.value.attachments !== undefined) {
    const checked = await checkAttachments(deps, {
      tenant: item.tenant,
      message: { ...parsed.value, ...content },
      given: (item.body as { attachments: readonly AttachmentInput[] }).attachments,
    });
    if (!checked.ok) return replayOr(checked.problem);
    attachments = checked.checked;
  }
  return { kind: 'valid', request: parsed.value, templateVersion, attachments };
}

/** Stores a judged enqueue once per key (enqueueMessage) and puts its immediate copy, if any. */
export async function writeJudgedEnqueue(
  deps: RouteDependencies,
  item: EnqueueItem,
  valid: ValidEnqueue,
): Promise<EnqueueAnswer> {
  // Attachments' bytes go to the bucket before the records that name them (DESIGN §13).
  let attachments: readonly StoredAttachment[] = [];
  let request = valid.request;
  if (valid.attachments !== undefined) {
    const prepared = await storeAttachments(deps, {
      tenant: item.tenant,
      messageId: messageIdFor(item.tenant, item.idempotencyKey),
      checked: valid.attachments,
    });
    if (!prepared.ok) return { kind: 'problem', problem: prepared.problem };
    attachments = prepared.stored;
    // An upload is fingerprinted by its SHA-256, as an inline file is (DESIGN §13).
    request = { ...valid.request, attachments: prepared.requested };
  }
  const outcome = await enqueueMessage(
    { store: deps.store, sleep: deps.sleep },
    {
      tenant: item.tenant,
      idempotencyKey: item.idempotencyKey,
      request,
      now: item.now,
      random: deps.random,
      retentionDays: deps.config.retentionDays,
      ...(valid.templateVersion === undefined ? {} : { templateVersion: valid.templateVersion }),
      ...(deps.immediateCopies === undefined ? {} : { apiCopy: true }),
      ...(attachments.length > 0 ? { attachments } : {}),
    },
  );
  if (outcome.kind === 'key-reused') {
    return {
      kind: 'problem',
      problem: problem(
        'idempotencyKeyReused',
        'This Idempotency-Key was used for a different request body; use a new key for a new message.',
        { errors: [{ field: 'Idempotency-Key', message: 'was already used with a different body' }] },
      ),
    };
  }
  if (outcome.kind === 'replayed') return outcome;
  return {
    kind: 'created',
    state: outcome.state,
    immediateCopy: await putImmediateCopy(deps.immediateCopies, outcome.state, item.now),
  };
}

/** A single enqueue's HTTP answer: 202 with Location, 200 with `Idempotent-Replayed`, or the problem. */
function enqueueOutcome(answer: EnqueueAnswer): Outcome {
  if (answer.kind === 'problem') return problemResult(answer.problem);
  const view = messageView(answer.state, { withHistory: false });
  const location = `/v1/messages/${answer.state.id}`;
  if (answer.kind === 'replayed') {
    return jsonResult(
      200,
      view,
      { 'idempotent-replayed': 'true', location },
      { message_id: answer.state.id, replayed: true },
    );
  }
  return jsonResult(
    202,
    view,
    { location },
    {
      message_id: answer.state.id,
      message_status: answer.state.status,
      ...(answer.immediateCopy === undefined ? {} : { immediate_copy: answer.immediateCopy }),
    },
  );
}

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
  /** The api will put the copy of a message due now on the queue itself (api/routes/enqueue.ts). */
  readonly apiCopy?: boolean;
  /** The attachments, their bytes already in the bucket (api/routes/attachments.ts). */
  readonly attachments?: readonly StoredAttachment[];
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
    // The first try reads the head eventually consistently (heads only grow; a head that moved fails
    // the transaction's condition), a retry after a moved head consistently (store/groupHead.ts).
    const head = group
      ? await deps.store.readGroupHead(input.tenant, group.key, { consistent: attempt > 0 })
      : null;
    const write = outboxRecords({
      tenant: input.tenant,
      idempotencyKey: input.idempotencyKey,
      request: input.request,
      now: input.now,
      groupHeadVersion: head?.version ?? null,
      ...(head === null ? {} : { groupHeadReplicas: head.replicas }),
      retentionDays: input.retentionDays,
      ...(input.templateVersion === undefined ? {} : { templateVersion: input.templateVersion }),
      ...(input.apiCopy === true ? { apiCopy: true } : {}),
      ...(input.attachments ? { attachments: input.attachments } : {}),
      bodyInline: true,
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

/** An ungrouped message: the body, then the state record that makes it visible (one put when it holds the body). */
async function writeInTurn(
  store: ApiStore,
  write: EnqueueRecords,
): Promise<{ result: EnqueueWriteResult; wroteBody: boolean }> {
  if (write.state.body !== undefined) return { result: await store.putNew(write.state), wroteBody: false };
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
  const { state, body, decision } = await judgeStored(
    store,
    write.state.tenant,
    write.messageId,
    () => ours,
    {
      wroteBody,
      grouped: write.state.group !== null,
      now: input.now,
      retentionDays: input.retentionDays,
    },
  );
  if ('undoOwnBody' in decision && decision.undoOwnBody)
    await store.deleteOwnBody(write.messageId, write.body);
  switch (decision.kind) {
    case 'replay':
      return state ? { kind: 'replayed', state } : undefined;
    case 'key-reused':
      return { kind: 'key-reused' };
    case 'complete': {
      const completing = completedState(write.state, body);
      const completed = await store.putNew(completing);
      return completed.kind === 'written' ? { kind: 'created', state: completing } : undefined;
    }
    case 'replace': {
      // No live message holds the key: the transaction writes over the orphan body, its state
      // condition guarding both (a racer's record fails it, and the next round reads again).
      const replaced = await store.writeEnqueue(write);
      return replaced.kind === 'written' ? { kind: 'created', state: write.state } : undefined;
    }
    case 'in-flight':
      return undefined;
  }
}

/**
 * The state record that completes a dead enqueue: this request's, pinned to the template version the
 * stored body renders (DESIGN §3, §10). A request that names no version resolves the latest now, which
 * may be newer than the one the first request pinned on the body; the fingerprint (which covers the
 * name alone) cannot tell them apart, and the sender renders the body's (what was validated then).
 */
function completedState(state: MessageStateRecord, body: BodyStamp | null): MessageStateRecord {
  return body?.template === undefined ? state : { ...state, template: body.template };
}

/**
 * The stored message a request that is not (or no longer) a valid new message replays, if any: its
 * time bounds and its template's state judge a new message, not a replay, so a request whose original
 * exists (its `not_after` since passed, its template since archived, its upload expired) is answered
 * with it.
 * `fingerprintAt` is the request's fingerprint as validated at the original's creation, or undefined
 * when it was no valid message then either.
 */
export async function findReplay(
  store: ApiStore,
  input: {
    readonly tenant: string;
    readonly idempotencyKey: string;
    readonly fingerprintAt: (createdAt: Date, stored: MessageStateRecord | null) => string | undefined;
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
  fingerprintAt: (createdAt: Date, stored: MessageStateRecord | null) => string | undefined,
  request: Omit<ReplayInput, 'ours' | 'state' | 'body'>,
): Promise<{ state: MessageStateRecord | null; body: BodyStamp | null; decision: ReplayDecision }> {
  // Records past their retention read as none: the key is free again (decision 0205).
  const state = await store.getMessage(tenant, messageId, request.now);
  const body = needsBodyStamp({ state, wroteBody: request.wroteBody })
    ? await store.readBodyStamp(messageId, request.now)
    : null;
  const createdAt = state?.created_at ?? body?.created_at;
  const ours = createdAt === undefined ? undefined : fingerprintAt(new Date(createdAt), state);
  return { state, body, decision: decideReplay({ ...request, ours, state, body }) };
}

/** What became of the copy, for the request's log line; undefined when there was none to make. */
export type ImmediateCopyOutcome = 'enqueued' | 'failed';

/**
 * Puts the copy of a newly written message that is due now — the one its records mark `api_copy`
 * (store/outboxRecords.ts decides) — and never throws (the 202 stands).
 */
export async function putImmediateCopy(
  queue: DispatchQueue | undefined,
  state: MessageStateRecord,
  now: Date,
): Promise<ImmediateCopyOutcome | undefined> {
  if (queue === undefined || state.api_copy !== true) return undefined;
  // Whole seconds, rounded down: an early copy waits out the rest in the sender (DESIGN §5a).
  const delaySeconds = sqsDelaySeconds((Date.parse(state.send_at) - now.getTime()) / 1000);
  try {
    const { failed } = await queue.enqueue([{ payload: { id: state.id, rev: state.rev }, delaySeconds }]);
    return failed.length === 0 ? 'enqueued' : 'failed';
  } catch {
    return 'failed';
  }
}
