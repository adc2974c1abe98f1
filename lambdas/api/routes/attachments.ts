/**
 * Attachments in the api (DESIGN §13):
 * - `POST /v1/attachments` reserves an upload: an id, a pre-signed S3 PUT (1 h, the declared size
 *   and type in its signature) under `uploads/{tenant}/{id}`, and the declaration beside it;
 * - an enqueue's attachments, in two steps: checked when the enqueue is judged (checkAttachments:
 *   the sizes, each upload against its declaration), so nothing is stored for a request, or a strict
 *   batch, that is refused; then, when it is written, the bytes into the bucket under the tenant
 *   (storeAttachments: inline ones put, uploads copied), so that the records written next only ever
 *   name bytes that are there. Each is written tagged `pending`, which the bucket expires a day later
 *   unless the message's record, once written, has it tagged `live` (events/attachmentLifetimes.ts):
 *   bytes stored for an enqueue that never becomes a message (refused, failed, or cut off mid-way)
 *   go by themselves. Keys are new for each request (docs/decisions/0144), so a request never
 *   writes over an object another request's message names.
 */
import {
  ATTACHMENT_LIFETIME_TAG,
  ATTACHMENT_LIMITS,
  type AttachmentInput,
  type AttachmentSizeLimits,
  attachmentWriteToken,
  contentTypeFor,
  declarationBytes,
  declarationKey,
  encodedMessageBytes,
  keptUploadCopy,
  type MessageText,
  messageAttachmentKey,
  messageSizeCheck,
  newAttachmentId,
  type PlannedAttachment,
  planAttachments,
  type RequestedAttachment,
  readDeclaration,
  type StoredAttachment,
  type UploadDeclaration,
  uploadKey,
  uploadMismatch,
} from '../../core/attachments.js';
import { CONFIG_SETTINGS } from '../../core/configSpec.js';
import type { EnqueueRequest } from '../../core/messageSchema.js';
import { type FieldError, type ProblemDetails, problem, validationProblem } from '../../core/problem.js';
import { validateAttachmentUpload } from '../../core/requestSchemas.js';
import type { AttachmentStore } from '../../ports/AttachmentStore.js';
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

type AttachmentsRefused = { readonly ok: false; readonly problem: ProblemDetails };

type PreparedAttachments =
  | {
      readonly ok: true;
      readonly stored: readonly StoredAttachment[];
      readonly requested: readonly RequestedAttachment[];
    }
  | AttachmentsRefused;

/** The base64 characters an enqueue body may carry beyond 256 KiB: the inline limit, encoded. */
export function inlineAllowance(config: RouteDependencies['config']): number {
  const kib = config.inlineAttachmentMaxKb ?? CONFIG_SETTINGS.inlineAttachmentMaxKb.aws;
  return Math.ceil((kib * 1024) / 3) * 4;
}

/** A message's subject, text and html as it is sent: a request's own, or its template's rendering. */
export type MessageContent = Pick<EnqueueRequest, 'subject' | 'text' | 'html'>;

/** A request's attachments once checked (checkAttachments): what storeAttachments writes. */
export interface CheckedAttachments {
  readonly planned: readonly PlannedAttachment[];
  /** Each upload's declaration, by position; null for an inline file. */
  readonly declarations: readonly (UploadDeclaration | null)[];
}

/**
 * Every check that can refuse a valid request's attachments, without writing anything, so an
 * enqueue is judged whole before any byte is stored (a strict batch refuses all its items on one
 * bad file: DESIGN §3a). In order: a bucket at all (400); the inline total (413); each upload
 * against its declaration (400 naming `/attachments/N/attachment_id` and why); the whole message's
 * size (413).
 */
export async function checkAttachments(
  deps: Pick<RouteDependencies, 'attachments' | 'config'>,
  input: {
    readonly tenant: string;
    /** The message as it is sent: a template message's subject, text and html as rendered. */
    readonly message: MessageText;
    /** The body's `attachments`, as the schema accepted them. */
    readonly given: readonly AttachmentInput[];
  },
): Promise<{ readonly ok: true; readonly checked: CheckedAttachments } | AttachmentsRefused> {
  const store = deps.attachments;
  if (store === undefined) return { ok: false, problem: noBucket('/attachments') };
  const limits = sizeLimits(deps.config);
  const planned = planAttachments(input.given, limits);
  if (!planned.ok) return { ok: false, problem: sizeProblem(planned.errors) };

  const uploads = await Promise.all(
    planned.value.map(async (attachment, position) =>
      attachment.kind === 'upload'
        ? checkUpload(store, input.tenant, attachment.attachment_id, position)
        : null,
    ),
  );
  const errors = uploads.flatMap((check) => (check !== null && !check.ok ? [check.error] : []));
  if (errors.length > 0) return { ok: false, problem: validationProblem(errors) };
  const declarations = uploads.map((check) => (check?.ok ? check.declaration : null));

  const sizes = planned.value.map((attachment, position) =>
    attachment.kind === 'inline' ? attachment.bytes.length : (declarations[position]?.size ?? 0),
  );
  const fits = messageSizeCheck(encodedMessageBytes(input.message), sizes, limits);
  if (!fits.ok) return { ok: false, problem: sizeProblem(fits.errors) };
  return { ok: true, checked: { planned: planned.value, declarations } };
}

/**
 * Stores checked attachments' bytes for a message: inline ones put, uploads copied within the
 * bucket (S3 answers the copy's SHA-256), each tagged `pending` in the same request and under a key
 * of this request's own. A message that exists already (a replay, or a reused key; not one whose
 * retention ran out) stores nothing: an upload's SHA-256 is then the upload's own as it is now (it
 * may have been PUT again since: {@link replayedUploadSha256}), or, once it is gone, the one the
 * message keeps for the same upload at that position. The one refusal left is an upload deleted
 * since its check (its day ended in between), a 400 on its field.
 *
 * `requested` is the request's attachments as the fingerprint must cover them: an upload by its
 * filename, type, size and SHA-256 like an inline file, so a replay with another file under the
 * same name is a 422 and a retry that uploaded the same bytes again is a replay.
 */
export async function storeAttachments(
  deps: Pick<RouteDependencies, 'attachments' | 'store' | 'random' | 'now'>,
  input: { readonly tenant: string; readonly messageId: string; readonly checked: CheckedAttachments },
): Promise<PreparedAttachments> {
  const store = deps.attachments;
  if (store === undefined) return { ok: false, problem: noBucket('/attachments') };
  const { planned, declarations } = input.checked;
  // A record whose retention ran out reads as none (being deleted; its key is free again): its
  // files are stored as for a new message (decisions 0181, 0205).
  const existing = await deps.store.getMessage(input.tenant, input.messageId, deps.now());
  const write = attachmentWriteToken(deps.random);
  const keyOf = (position: number, content: string) =>
    messageAttachmentKey(input.tenant, input.messageId, `${position}-${content}-${write}`);
  const pending = ATTACHMENT_LIFETIME_TAG.pending;
  const stored = await Promise.all(
    planned.map(async (attachment, position): Promise<StoredAttachment | undefined> => {
      if (attachment.kind === 'inline') {
        const key = keyOf(position, attachment.sha256.slice(0, 32));
        if (existing === null) await store.put(key, attachment.bytes, attachment.content_type, pending);
        const { filename, content_type, sha256 } = attachment;
        return { filename, content_type, size: attachment.bytes.length, sha256, key };
      }
      const declaration = declarations[position];
      if (declaration == null) return undefined;
      const from = uploadKey(input.tenant, attachment.attachment_id);
      const key = keyOf(position, attachment.attachment_id);
      const sha256 =
        existing === null
          ? (await store.copy(from, key, pending))?.sha256
          : await replayedUploadSha256(
              store,
              from,
              keptUploadCopy(
                { tenant: input.tenant, id: input.messageId, attachments: existing.attachments },
                position,
                attachment.attachment_id,
              ),
            );
      if (sha256 === undefined) return undefined;
      const { filename, size } = declaration;
      return {
        filename,
        content_type: contentTypeFor(filename, declaration.content_type),
        size,
        sha256,
        key,
      };
    }),
  );
  const gone = stored.indexOf(undefined);
  if (gone >= 0) {
    // Deleted between the check and the copy: its day ended just now.
    const field = `/attachments/${gone}/attachment_id`;
    return {
      ok: false,
      problem: validationProblem([{ field, message: 'the upload has expired (an upload lives a day)' }]),
    };
  }
  const complete = stored as StoredAttachment[];
  return {
    ok: true,
    stored: complete,
    requested: complete.map(({ filename, content_type, size, sha256 }) => ({
      filename,
      content_type,
      size,
      sha256,
    })),
  };
}

/**
 * The SHA-256 of an upload a request names for a message that exists already (a replay, or a reused
 * key): the upload's bytes as they are now, so an upload PUT again with other bytes within its
 * URL's hour is another file (a 422), not a replay (decision 0258). The copy the message keeps at
 * that place answers without reading the upload when both have one ETag (the MD5 of the bytes in
 * this bucket, kept by the copy), and alone once the upload is gone (its day ended: decision 0147).
 */
async function replayedUploadSha256(
  store: AttachmentStore,
  upload: string,
  kept: StoredAttachment | undefined,
): Promise<string | undefined> {
  if (kept === undefined) return store.hash(upload);
  const [now, copy] = await Promise.all([store.describe(upload), store.describe(kept.key)]);
  if (now === undefined) return kept.sha256;
  if (now.etag !== undefined && now.etag === copy?.etag) return kept.sha256;
  return (await store.hash(upload)) ?? kept.sha256;
}

type UploadCheck =
  | { readonly ok: true; readonly declaration: UploadDeclaration }
  | { readonly ok: false; readonly error: FieldError };

/** An upload as the enqueue finds it: reserved under this tenant, and uploaded as declared. */
async function checkUpload(
  store: AttachmentStore,
  tenant: string,
  attachmentId: string,
  position: number,
): Promise<UploadCheck> {
  const field = `/attachments/${position}/attachment_id`;
  const bytes = await store.read(declarationKey(tenant, attachmentId));
  const declaration = bytes === undefined ? undefined : readDeclaration(bytes);
  if (declaration === undefined) {
    return {
      ok: false,
      error: {
        field,
        message: 'is no upload of this tenant: reserve one with POST /v1/attachments (an upload lives a day)',
      },
    };
  }
  const mismatch = uploadMismatch(declaration, await store.describe(uploadKey(tenant, attachmentId)));
  return mismatch === null ? { ok: true, declaration } : { ok: false, error: { field, message: mismatch } };
}

function sizeProblem(
  errors: readonly { readonly field: string; readonly message: string }[],
): ProblemDetails {
  return problem('payloadTooLarge', 'The attachments are too large.', { errors });
}
