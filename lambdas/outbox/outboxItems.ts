/**
 * The transactional outbox (DESIGN §4): the DynamoDB writes that enqueue one message, as
 * `TransactWriteItem`s. An application that keeps its own data in the outbox table's account can put
 * them in the SAME `TransactWriteCommand` as its business change; the relay then picks the message up
 * from the table's stream exactly as if it came through `POST /v1/messages`. The records are the
 * API's own (lambdas/store/outboxRecords.ts), so there is one definition of what a message is.
 *
 * ```ts
 * const parsed = parseEnqueueRequest(body, { now, allowedFrom, defaultFrom, maxHorizonDays });
 * if (!parsed.ok) throw new Error(parsed.problem.detail);
 * // One replica at random (the stack's groupHeadReplicas), eventually consistent until a raise beat
 * // it: as the api reads it, so a group's enqueues spread over its replicas (DESIGN §4).
 * const groupHeadVersion = await readGroupHeadVersion(doc, table, tenant, parsed.value.group?.key,
 *   { replicas: groupHeadReplicas, consistent: attempt > 1 });
 * await doc.send(new TransactWriteCommand({ TransactItems: [
 *   { Put: { TableName: 'orders', Item: order, ConditionExpression: 'attribute_not_exists(pk)' } },
 *   ...buildOutboxTransactItems({ tableName: table, tenant, idempotencyKey: `order-${order.id}`,
 *     request: parsed.value, now, groupHeadVersion, groupHeadReplicas }),
 * ] }));
 * ```
 *
 * A template message (`"template"` + `"data"`, DESIGN §10) needs the template it names, read first:
 * `template: await readOutboxTemplate(doc, table, tenant, 'campaign-approved')`.
 *
 * The message's id is derived from (tenant, idempotency key), so its records' `attribute_not_exists`
 * conditions are the idempotency guard: the transaction fails (TransactionCanceledException) if the
 * key was already used, which is what makes a retried business transaction safe. A group head that
 * rose after `readGroupHeadVersion` fails it at OUTBOX_ITEM_INDEX.groupHead: read again and retry
 * (docs/api-resources.md has the loop). A transaction holds at most 100 items; the outbox uses
 * 2 + N of them (N: the head's replicas, `groupHeadReplicas`, when the group's version rises).
 *
 * `request` must be what parseEnqueueRequest returned (decision 0165), and the settings it was
 * validated with are the application's: the stack applies its own POSTDATE_ALLOWED_FROM again at send.
 *
 * A message with attachments is refused (OutboxInputError naming `/attachments`): its files must be
 * stored before its records, which the transaction cannot do; it goes through POST /v1/messages.
 */
import { CONFIG_SETTINGS } from '../core/configSpec.js';
import {
  type EnqueueContext,
  type EnqueueRequest,
  isParsedEnqueueRequest,
  type ParsedEnqueueRequest,
  parseEnqueueRequest,
} from '../core/messageSchema.js';
import { PostdateError } from '../core/postdateError.js';
import { type ProblemDetails, problem, validationProblem } from '../core/problem.js';
import { IDEMPOTENCY_KEY_PATTERN, TENANT_PATTERN } from '../core/requestLimits.js';
import type { EnqueueRecords } from '../ports/ApiStore.js';
import { groupHeadCheckItem, groupHeadStep } from '../store/groupHead.js';
import {
  type OutboxRecordsInput,
  outboxRecords,
  outboxTransactItems,
  type TransactWriteItem,
} from '../store/outboxRecords.js';
import { checkOutboxTemplate, type OutboxTemplate } from './outboxTemplate.js';

/** POSTDATE_RETENTION_DAYS as the stack reads it: its range and default have one home. */
const RETENTION = CONFIG_SETTINGS.retentionDays;

export { requestFingerprint } from '../core/messageSchema.js';
export { IDEMPOTENCY_KEY_PATTERN, TENANT_PATTERN } from '../core/requestLimits.js';
export { readGroupHeadVersion } from '../store/groupHead.js';
export { OUTBOX_ITEM_INDEX, type TransactWriteItem } from '../store/outboxRecords.js';

/**
 * Thrown for a caller's mistake (bad tenant, bad key, invalid raw body), before anything is written.
 * `problem` is the 400 (or 413) the API would answer, and its `errors[{field, message}]` name the
 * field as the API's do: a JSON Pointer into the body (`/subject`), or the helper's own parameter
 * (`tenant`, `idempotencyKey`, `retentionDays`, `request`, `attachments`).
 */
export class OutboxInputError extends PostdateError {
  override readonly name = 'OutboxInputError';
  constructor(
    message: string,
    readonly problem: ProblemDetails,
  ) {
    super(message, { class: 'permanent' });
  }
}

/** The error for one of the helper's own parameters, named as a field of the API's problem. */
function parameterError(field: string, message: string): OutboxInputError {
  return new OutboxInputError(`${field} ${message}`, validationProblem([{ field, message }]));
}

/**
 * The records' input less what only the api can honour: its attachments (stored in its bucket
 * first), its own queue copy and its body placement.
 */
type OutboxCommonInput = Omit<
  OutboxRecordsInput,
  'request' | 'templateVersion' | 'attachments' | 'apiCopy' | 'bodyInline' | 'retentionDays'
> & {
  /**
   * The stack's POSTDATE_RETENTION_DAYS (1–3650): a message superseded at enqueue (its group's head
   * already higher) has ended, and its records expire this many days from `now`, as the API's do;
   * and a body item older than this beside no live state record is an orphan the message replaces
   * (decision 0208). Pass it when the stack sets another value.
   * @default the stack's default, 30
   */
  readonly retentionDays?: number;
  /** The outbox table's name (the items name it). */
  readonly tableName: string;
  /**
   * For a template message (`template` + `data` in the request): the template it names, read with
   * readOutboxTemplate. The message is validated with it as the API would and pinned to its version.
   */
  readonly template?: OutboxTemplate;
};

export type OutboxInput =
  | (OutboxCommonInput & {
      /**
       * The message as parseEnqueueRequest returned it, unchanged: any other object (built by hand,
       * spread or changed since) throws OutboxInputError, since nothing else would have validated it.
       */
      readonly request: ParsedEnqueueRequest;
    })
  | (OutboxCommonInput & {
      /** A raw enqueue body (as for POST /v1/messages), validated here with the same rules. */
      readonly body: unknown;
      readonly validation: Omit<EnqueueContext, 'now'>;
    });

/** Everything the outbox writes, and the items that write it. */
export interface OutboxWrite extends EnqueueRecords {
  readonly items: TransactWriteItem[];
}

/** The `TransactWriteItem`s that enqueue one message (state, body, and the group head for a grouped one). */
export function buildOutboxTransactItems(input: OutboxInput): TransactWriteItem[] {
  return buildOutboxWrite(input).items;
}

/** Like buildOutboxTransactItems, and also returns the records it writes. */
export function buildOutboxWrite(input: OutboxInput): OutboxWrite {
  if (!TENANT_PATTERN.test(input.tenant)) {
    throw parameterError('tenant', 'must be 1–64 of a-z, 0-9, _ and -, starting with a letter or digit');
  }
  if (!IDEMPOTENCY_KEY_PATTERN.test(input.idempotencyKey)) {
    // The API's own problem for its Idempotency-Key header, naming the helper's parameter.
    const message = 'must be 1–255 printable ASCII characters';
    throw new OutboxInputError(
      `idempotencyKey ${message}`,
      problem('invalidIdempotencyKey', `The idempotencyKey ${message}.`, {
        errors: [{ field: 'idempotencyKey', message }],
      }),
    );
  }
  const retentionDays = input.retentionDays ?? RETENTION.aws;
  if (
    !Number.isInteger(retentionDays) ||
    retentionDays < RETENTION.kind.min ||
    retentionDays > RETENTION.kind.max
  ) {
    throw parameterError(
      'retentionDays',
      `must be a whole number of days from ${RETENTION.kind.min} to ${RETENTION.kind.max}, as the stack's POSTDATE_RETENTION_DAYS`,
    );
  }
  const request = requestOf(input);
  refuseAttachments(request, input);
  let templateVersion: number | undefined;
  if (request.template != null) {
    const checked = checkOutboxTemplate(request, input.template);
    if (!checked.ok)
      throw new OutboxInputError(`template message: ${checked.problem.detail}`, checked.problem);
    templateVersion = checked.version;
  }
  const records = outboxRecords({
    tenant: input.tenant,
    idempotencyKey: input.idempotencyKey,
    request,
    ...(templateVersion === undefined ? {} : { templateVersion }),
    now: input.now,
    groupHeadVersion: input.groupHeadVersion,
    // The stack's POSTDATE_GROUP_HEAD_REPLICAS: a raise writes that many (store/groupHead.ts).
    ...(input.groupHeadReplicas === undefined ? {} : { groupHeadReplicas: input.groupHeadReplicas }),
    retentionDays,
  });
  const items = outboxTransactItems(input.tableName, records);
  // A head the caller passed may be made up: a message written `superseded` checks it (groupHead.ts).
  const group = records.state.group;
  if (group !== null && groupHeadStep(records.groupHeadVersion, group.version) === 'check-above')
    items.push(groupHeadCheckItem(input.tableName, { tenant: input.tenant, group }));
  return { ...records, items };
}

/**
 * A message with attachments cannot go through the outbox (docs/decisions/0125): its files' bytes
 * must be in the bucket before the records that name them (DESIGN §13), and the application's
 * transaction cannot put them there with it. Written without them, the mail would go out without its
 * files and end `sent`; so it is refused, and the caller sends it through POST /v1/messages.
 */
function refuseAttachments(request: EnqueueRequest, input: OutboxInput): void {
  // `attachments` beside the request is the api's own input (files already stored), not the
  // helper's: from JavaScript, or past the type, it is refused the same way.
  const beside = (input as { readonly attachments?: unknown }).attachments;
  const field =
    request.attachments !== undefined && request.attachments.length > 0
      ? '/attachments'
      : Array.isArray(beside) && beside.length > 0
        ? 'attachments'
        : undefined;
  if (field === undefined) return;
  const message =
    'cannot go through the outbox: the files must be stored before the message, which a DynamoDB transaction cannot do; send a message with attachments through POST /v1/messages';
  throw new OutboxInputError(
    `attachments ${message}`,
    validationProblem([{ field, message }], 'The outbox cannot carry attachments.'),
  );
}

function requestOf(input: OutboxInput): EnqueueRequest {
  if ('request' in input) {
    if (!isParsedEnqueueRequest(input.request))
      throw parameterError(
        'request',
        'must be the value parseEnqueueRequest returned, unchanged; or pass the raw `body` with `validation`',
      );
    return input.request;
  }
  const parsed = parseEnqueueRequest(input.body, { ...input.validation, now: input.now });
  if (!parsed.ok)
    throw new OutboxInputError(`invalid enqueue body: ${parsed.problem.detail}`, parsed.problem);
  return parsed.value;
}
