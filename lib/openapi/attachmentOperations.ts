/**
 * The OpenAPI operation of `POST /v1/attachments` (DESIGN §3, §13), spread into OPERATIONS
 * (lib/openapi/openApiDocument.ts), which adds the answers every route shares (401/403, 429, 5xx and,
 * with a JSON body, 413/415). The request schema is the validating one (lambdas/core/requestSchemas.ts).
 */
import * as z from 'zod';
import type { RouteName } from '../../lambdas/core/apiRoutes.js';
import { ATTACHMENT_ID_PATTERN, ATTACHMENT_LIMITS } from '../../lambdas/core/attachments.js';
import { AttachmentUploadSchema } from '../../lambdas/core/requestSchemas.js';
import { json, jsonResponse, type Operation, problemResponse } from './components.js';

const AttachmentUploadSchemaOut = z
  .object({
    id: z.string().regex(ATTACHMENT_ID_PATTERN).meta({
      description: 'Reference it in an enqueue: `"attachments": [{"attachment_id": "att_…"}]`.',
      example: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw',
    }),
    upload_url: z.string().meta({
      description:
        'PUT the bytes here, with exactly the declared `Content-Type` and size (`Content-Length`): both are in the signature, so S3 refuses any other (403).',
      format: 'uri',
    }),
    expires_at: z.string().meta({
      format: 'date-time',
      description: `When the upload URL stops working: ${ATTACHMENT_LIMITS.uploadUrlSeconds / 3600} h after the reservation, or sooner when the credentials that signed it (the API's own) end first. An upload no message references is deleted after ${ATTACHMENT_LIMITS.unreferencedUploadDays} day.`,
    }),
  })
  .meta({ id: 'AttachmentUpload' });

export const ATTACHMENT_OPERATIONS: Pick<Record<RouteName, Operation>, 'createAttachment'> = {
  createAttachment: {
    summary: 'Reserve a large attachment: a pre-signed upload URL and an id',
    description: [
      'For files too large to send inline (base64 in the enqueue, up to `POSTDATE_INLINE_ATTACHMENT_MAX_KB` in all): declare the file, PUT its bytes to `upload_url` before `expires_at` (an hour at most), then reference `id` in an enqueue.',
      '',
      'The enqueue checks the upload against this declaration (there, the declared size and type; else a 400 naming `/attachments/N/attachment_id`), copies it to the message, and covers its SHA-256 in the idempotency fingerprint. The size may be up to what fits a message by itself (`POSTDATE_MAX_MESSAGE_MB`, base64-encoded).',
    ].join('\n'),
    request: { body: { content: json(AttachmentUploadSchema), required: true } },
    responses: {
      201: jsonResponse('Reserved: PUT the file to `upload_url`.', AttachmentUploadSchemaOut),
      400: problemResponse(
        'Invalid request: `errors` names each field (a filename unsafe in a header or of an executable type, an executable or malformed `content_type`, a `size` below 1 byte or larger than a message may carry).',
      ),
    },
  },
};
