/**
 * Attachments in the api (DESIGN §13):
 * - `POST /v1/attachments` reserves an upload: an id, a pre-signed S3 PUT (1 h, the declared size
 *   and type in its signature) under `uploads/{tenant}/{id}`, and the declaration beside it;
 * - an enqueue's attachments, between validation and the records: the sizes (413), then the bytes
 *   into the bucket under the tenant — inline ones put, uploads checked against their declaration
 *   and copied — so that the records written next only ever name bytes that are there. Keys derive
 *   from the message id, the position and the content or upload id
 *   (docs/decisions/0082-attachment-storage.md): a client's retry writes the same bytes to the same
 *   keys, a refused replay with other content writes other keys and never touches the original's.
 */
import {
  ATTACHMENT_LIMITS,
  type AttachmentInput,
  type AttachmentSizeLimits,
  declarationBytes,
  declarationKey,
  messageAttachmentKey,
  messageSizeCheck,
  newAttachmentId,
  planAttachments,
  type StoredAttachment,
  uploadKey,
  validateAttachmentUpload,
} from '../../core/attachments.js';
import { CONFIG_SETTINGS } from '../../core/configSpec.js';
import type { EnqueueRequest } from '../../core/messageSchema.js';
import { type ProblemDetails, problem, validationProblem } from '../../core/problem.js';
import {
  jsonResult,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  readJsonBody,
} from '../route.js';

/**
 * POST /v1/attachments `{filename, content_type, size}` → 201 `{id, upload_url, expires_at}`. The
 * declaration is stored first, so an upload the enqueue finds always has one; both expire with the
 * `uploads/` area a day later, referenced or not (the enqueue copies what it references).
 */
export function createAttachmentRoute(
  deps: Pick<RouteDependencies, 'attachments' | 'config' | 'now' | 'random'>,
): RouteHandler {
  return async function createAttachment({ tenant, event }) {
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const store = deps.attachments;
    if (store === undefined) return problemResult(noBucket('body'));
    const declared = validateAttachmentUpload(body.value, sizeLimits(deps.config));
    if (!declared.ok) return problemResult(validationProblem(declared.errors));
    const now = deps.now();
    const id = newAttachmentId(now, deps.random);
    await store.put(declarationKey(tenant, id), declarationBytes(declared.value), 'application/json');
    const upload = await store.presignPut(uploadKey(tenant, id), {
      size: declared.value.size,
      contentType: declared.value.content_type,
      expiresInSeconds: ATTACHMENT_LIMITS.uploadUrlSeconds,
      now,
    });
    return jsonResult(
      201,
      { id, upload_url: upload.url, expires_at: upload.expiresAt.toISOString() },
      {},
      { attachment_id: id, size: declared.value.size },
    );
  };
}

/** POSTDATE_INLINE_ATTACHMENT_MAX_KB and POSTDATE_MAX_MESSAGE_MB in bytes (their defaults when unset). */
function sizeLimits(config: RouteDependencies['config']): AttachmentSizeLimits {
  return {
    inlineMaxBytes: (config.inlineAttachmentMaxKb ?? CONFIG_SETTINGS.inlineAttachmentMaxKb.aws) * 1024,
    maxMessageBytes: (config.maxMessageMb ?? CONFIG_SETTINGS.maxMessageMb.aws) * 1024 * 1024,
  };
}

function noBucket(field: string): ProblemDetails {
  return validationProblem([
    { field, message: 'attachments are not available: this api has no attachment bucket' },
  ]);
}

export type PreparedAttachments =
  | { readonly ok: true; readonly stored: readonly StoredAttachment[] }
  | { readonly ok: false; readonly problem: ProblemDetails };

/** The base64 characters an enqueue body may carry beyond 256 KiB: the inline limit, encoded. */
export function inlineAllowance(config: RouteDependencies['config']): number {
  const kib = config.inlineAttachmentMaxKb ?? CONFIG_SETTINGS.inlineAttachmentMaxKb.aws;
  return Math.ceil((kib * 1024) / 3) * 4;
}

/**
 * Checks the sizes of a valid request's attachments and stores their bytes; nothing is stored when a
 * check fails. A message that exists already (a replay, or a reused key) stores nothing either: the
 * enqueue answers it from the stored message.
 */
export async function prepareAttachments(
  deps: Pick<RouteDependencies, 'attachments' | 'config' | 'store'>,
  input: {
    readonly tenant: string;
    readonly messageId: string;
    readonly request: EnqueueRequest;
    /** The body's `attachments`, as the schema accepted them. */
    readonly given: readonly AttachmentInput[];
  },
): Promise<PreparedAttachments> {
  const store = deps.attachments;
  if (store === undefined) return { ok: false, problem: noBucket('/attachments') };
  const uploaded = input.given.findIndex((attachment) => 'attachment_id' in attachment);
  if (uploaded >= 0) {
    return refused(
      400,
      `/attachments/${uploaded}/attachment_id`,
      'uploads through POST /v1/attachments are not built yet; send the file inline (base64)',
    );
  }
  const limits = sizeLimits(deps.config);
  const planned = planAttachments(input.given, limits);
  if (!planned.ok) return { ok: false, problem: sizeProblem(planned.errors) };
  const inline = planned.value.flatMap((attachment) => (attachment.kind === 'inline' ? [attachment] : []));
  const bodyBytes = ['subject', 'text', 'html'].reduce(
    (sum, field) => sum + Buffer.byteLength(input.request[field as 'subject' | 'text' | 'html'] ?? ''),
    0,
  );
  const fits = messageSizeCheck(
    bodyBytes,
    inline.map((attachment) => attachment.bytes.length),
    limits,
  );
  if (!fits.ok) return { ok: false, problem: sizeProblem(fits.errors) };

  const stored = inline.map(
    (attachment, index): StoredAttachment => ({
      filename: attachment.filename,
      content_type: attachment.content_type,
      size: attachment.bytes.length,
      sha256: attachment.sha256,
      key: messageAttachmentKey(input.tenant, input.messageId, `${index}-${attachment.sha256.slice(0, 32)}`),
    }),
  );
  const existing = await deps.store.getMessage(input.tenant, input.messageId);
  if (existing === null) {
    await Promise.all(
      inline.map((attachment, index) =>
        store.put(stored[index]?.key ?? '', attachment.bytes, attachment.content_type),
      ),
    );
  }
  return { ok: true, stored };
}

function refused(status: 400 | 413, field: string, message: string): PreparedAttachments {
  return {
    ok: false,
    problem: status === 413 ? sizeProblem([{ field, message }]) : validationProblem([{ field, message }]),
  };
}

function sizeProblem(
  errors: readonly { readonly field: string; readonly message: string }[],
): ProblemDetails {
  return problem('payloadTooLarge', 'The attachments are too large.', { errors });
}
