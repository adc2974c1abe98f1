/**
 * The OpenAPI operations of the suppression routes (DESIGN §3, §12), spread into OPERATIONS
 * (lib/openapi/openApiDocument.ts), which adds the answers every route shares (401/403, 429, 5xx and, with a
 * JSON body, 413/415).
 */
import * as z from 'zod';
import type { SuppressionRouteName } from '../../lambdas/core/apiRoutes.js';
import { SUPPRESSION_LIST_LIMIT } from '../../lambdas/core/requestLimits.js';
import { SuppressionBodySchema, SuppressionReasonSchema } from '../../lambdas/core/requestSchemas.js';
import { json, type Operation, problemResponse } from './components.js';

const SuppressionSchema = z
  .object({
    address: z.string().meta({
      example: 'ada@example.com',
      description:
        'Normalised: the addr-spec, lower-cased (local part and domain), a Unicode domain in its ASCII (IDNA) form.',
    }),
    reason: SuppressionReasonSchema,
    message_id: z.string().nullable().meta({
      description: 'The message whose hard bounce or complaint added the address; null when added by hand.',
    }),
    created_at: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'Suppression' });

const SuppressionListSchema = z
  .object({
    items: z.array(SuppressionSchema),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null at the end.' }),
  })
  .meta({ id: 'SuppressionList' });

const addressParam = z.object({
  address: z.string().meta({
    description:
      'An email address (local@domain, URL-encoded); compared lower-cased, a Unicode domain in its ASCII (IDNA) form.',
    example: 'ada@example.com',
  }),
});

export const SUPPRESSION_OPERATIONS: Record<SuppressionRouteName, Operation> = {
  listSuppressions: {
    summary: "List this tenant's suppressed addresses, in address order",
    request: {
      query: z.object({
        limit: z
          .int()
          .min(SUPPRESSION_LIST_LIMIT.min)
          .max(SUPPRESSION_LIST_LIMIT.max)
          .optional()
          .meta({ description: 'Entries per page.', default: SUPPRESSION_LIST_LIMIT.default }),
        cursor: z.string().optional().meta({
          description: "The previous page's `next_cursor`, with the same key (tenant, test or live).",
        }),
      }),
    },
    responses: {
      200: { description: 'A page of the list.', content: json(SuppressionListSchema) },
      400: problemResponse(
        'An invalid `limit` or `cursor`, or a parameter the listing does not take: `errors` names each.',
      ),
    },
  },
  putSuppression: {
    summary: 'Suppress an address: messages are no longer sent to it',
    request: {
      params: addressParam,
      body: { content: json(SuppressionBodySchema), required: false },
    },
    responses: {
      200: {
        description:
          'On the list (an existing entry keeps its time and message; a given reason replaces its reason).',
        content: json(SuppressionSchema),
      },
      400: problemResponse('Invalid request: `errors` names `address` or the body field.'),
    },
  },
  deleteSuppression: {
    summary: 'Remove an address from the list',
    request: { params: addressParam },
    responses: {
      200: { description: 'Removed; the entry as it was.', content: json(SuppressionSchema) },
      400: problemResponse('Invalid request: `errors` names `address`.'),
      404: problemResponse('This address is not on the suppression list.'),
    },
  },
};
