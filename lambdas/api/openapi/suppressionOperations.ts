/**
 * The OpenAPI operations of the suppression routes (DESIGN §3, §12), spread into OPERATIONS
 * (lambdas/api/openapi.ts). The document's shared pieces (the JSON content helper, the problem
 * response, the common 400/401) are passed in, so the Problem schema stays one component.
 */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { SuppressionRouteName } from '../../core/suppressionRoutes.js';
import { SuppressionBodySchema, SuppressionReasonSchema } from '../../core/suppressions.js';

type Operation = Pick<RouteConfig, 'summary' | 'request' | 'responses'>;
type Response = RouteConfig['responses'][string];

export interface OpenApiParts {
  readonly json: (schema: z.ZodType) => Record<string, { schema: z.ZodType }>;
  readonly problemResponse: (description: string) => Response;
  readonly common: { readonly 400: Response; readonly 401: Response };
}

const SuppressionSchema = z
  .object({
    address: z.string().meta({
      example: 'ada@example.com',
      description: 'Normalised: the addr-spec, lower-cased (local part and domain).',
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
    description: 'An email address (local@domain, URL-encoded); compared lower-cased.',
    example: 'ada@example.com',
  }),
});

export function suppressionOperations(parts: OpenApiParts): Record<SuppressionRouteName, Operation> {
  const { json, problemResponse, common } = parts;
  return {
    listSuppressions: {
      summary: "List this tenant's suppressed addresses, in address order",
      request: {
        query: z.object({
          limit: z.string().optional().meta({ description: '1–100, default 50.' }),
          cursor: z.string().optional(),
        }),
      },
      responses: {
        200: { description: 'A page of the list.', content: json(SuppressionListSchema) },
        ...common,
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
        ...common,
        400: problemResponse('Invalid request: `errors` names `address` or the body field.'),
      },
    },
    deleteSuppression: {
      summary: 'Remove an address from the list',
      request: { params: addressParam },
      responses: {
        200: { description: 'Removed; the entry as it was.', content: json(SuppressionSchema) },
        ...common,
        404: problemResponse('This address is not on the suppression list.'),
      },
    },
  };
}
