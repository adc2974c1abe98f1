/**
 * The batch enqueue request (DESIGN §3a): `{messages: [{idempotency_key, …enqueue body}], mode?}`.
 * Only the envelope and each item's key are judged here; each item's body is an enqueue body, judged
 * by the single enqueue's own validation (messageSchema.ts, through api/routes/enqueue.ts), so a
 * batch item can never accept what a single enqueue refuses, or the reverse.
 *
 * Field errors name a JSON Pointer into the batch body (`/messages/3/to`), as every field error of
 * the API does (problem.ts): `batchItemField` turns an item's own field into the batch's.
 */
import * as z from 'zod';
import { EnqueueBodyDocumentSchema } from './messageSchema.js';
import {
  describeFieldErrors,
  type FieldError,
  guarded,
  jsonPointer,
  PARSE_CONTEXT,
  type ProblemDetails,
  problem,
  type Validated,
  validationProblem,
  zodErrors,
} from './problem.js';
import { bodySizeProblem, IDEMPOTENCY_KEY_PATTERN, LIMITS } from './requestLimits.js';

/** permissive: every valid item is enqueued, the others reported; strict: none unless all are valid. */
export const BATCH_MODES = ['permissive', 'strict'] as const;
export type BatchMode = (typeof BATCH_MODES)[number];

const IdempotencyKeySchema = z.string().regex(IDEMPOTENCY_KEY_PATTERN).meta({
  description:
    "This item's Idempotency-Key, 1–255 printable ASCII characters: the item is exactly a POST /v1/messages with this key (no Structured Field quotes here: the string is the key).",
  example: 'order-7-confirmation',
});

const BatchModeSchema = z.enum(BATCH_MODES).meta({
  description:
    '`permissive` (default): every valid item is enqueued and each other one reported in its result. `strict`: every item is judged first, and if one is invalid nothing is enqueued (400 naming each failing item).',
});

const BatchEnvelopeSchema = z.strictObject({
  messages: z.array(z.unknown()).min(1).max(LIMITS.maxBatchMessages),
  mode: BatchModeSchema.optional(),
});

export interface BatchEnvelope {
  /** The items as sent, each judged on its own by splitBatchItem and the enqueue validation. */
  readonly messages: readonly unknown[];
  readonly mode: BatchMode;
}

/** Judges the batch's envelope: 1–100 items and a known mode; never the items themselves. */
export function validateBatchEnvelope(body: unknown): Validated<BatchEnvelope> {
  return guarded(() => {
    const parsed = BatchEnvelopeSchema.safeParse(body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
    return { ok: true, value: { messages: parsed.data.messages, mode: parsed.data.mode ?? 'permissive' } };
  });
}

export interface BatchItem {
  readonly idempotencyKey: string;
  /** The item without its key: an enqueue body. */
  readonly body: Record<string, unknown>;
}

type SplitItem =
  | { readonly ok: true; readonly value: BatchItem }
  | { readonly ok: false; readonly problem: ProblemDetails };

/**
 * Takes an item's `idempotency_key` off it, or answers the item's problem in the order a single
 * enqueue of it answers (DESIGN §3a), which reads its body before its key: a body (the item without
 * its key) over `maxBodyBytes` is its 413 whatever its key; then a missing or malformed key is the
 * single enqueue's own `idempotency-key-missing` / `-invalid`, naming the item's own field
 * (`/idempotency_key`).
 */
export function splitBatchItem(item: unknown, maxBodyBytes: number): SplitItem {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    return { ok: false, problem: validationProblem([{ field: 'body', message: 'must be an object' }]) };
  }
  const { idempotency_key: key, ...body } = item as Record<string, unknown>;
  const oversized = bodySizeProblem(body, maxBodyBytes);
  if (oversized) return { ok: false, problem: oversized };
  const checked = IdempotencyKeySchema.safeParse(key, PARSE_CONTEXT);
  if (checked.success) return { ok: true, value: { idempotencyKey: checked.data, body } };
  const field = '/idempotency_key';
  return {
    ok: false,
    problem:
      key === undefined
        ? problem('missingIdempotencyKey', 'This item needs its idempotency_key.', {
            errors: [{ field, message: 'is required' }],
          })
        : problem('invalidIdempotencyKey', 'The idempotency_key must be 1–255 printable ASCII characters.', {
            errors: [{ field, message: 'must be 1–255 printable ASCII characters' }],
          }),
  };
}

/**
 * An item's field error as a field of the batch: `/to` → `/messages/3/to`; the item as a whole
 * (`body`) → `/messages/3`; the single enqueue's `Idempotency-Key` header → `/messages/3/idempotency_key`.
 */
export function batchItemField(index: number, error: FieldError): FieldError {
  const item = jsonPointer(['messages', index]);
  if (error.field.startsWith('/')) return { ...error, field: `${item}${error.field}` };
  if (error.field === 'Idempotency-Key') return { ...error, field: `${item}/idempotency_key` };
  return { ...error, field: item };
}

/**
 * An item's own problem as its batch result carries it: each field under the item
 * (`batchItemField`), and a `detail` that lists the fields (a validation's `One field is invalid:
 * /to.`) listing them as the errors now name them, so the two never disagree.
 */
export function batchItemProblem(index: number, details: ProblemDetails): ProblemDetails {
  if (details.errors === undefined) return details;
  const errors = details.errors.map((error) => batchItemField(index, error));
  const listsFields = details.detail === describeFieldErrors(details.errors);
  return { ...details, ...(listsFields ? { detail: describeFieldErrors(errors) } : {}), errors };
}

/** One form of the enqueue body with the item's key: strict objects cannot be widened by `allOf`. */
const BATCH_ITEM_IDS = ['InlineBatchItem', 'TemplateBatchItem'] as const;
const batchItemForms = EnqueueBodyDocumentSchema.options.map((form, index) =>
  form.extend({ idempotency_key: IdempotencyKeySchema }).meta({
    id: BATCH_ITEM_IDS[index],
    description: `${form.description ?? 'An enqueue body'} With this item's own \`idempotency_key\`.`,
  }),
);

/** The batch request for the OpenAPI document. */
export const BatchEnqueueBodyDocumentSchema = z
  .strictObject({
    messages: z
      .array(z.union(batchItemForms))
      .min(1)
      .max(LIMITS.maxBatchMessages)
      .meta({
        description: `1–${LIMITS.maxBatchMessages} enqueue bodies (EnqueueRequest: the same rules, each at most ${LIMITS.maxBodyBytes / 1024} KiB as JSON beside inline attachments' content), each with its own \`idempotency_key\`.`,
      }),
    mode: BatchModeSchema.optional(),
  })
  .meta({ id: 'BatchEnqueueRequest' });
