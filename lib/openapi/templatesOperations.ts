/**
 * The OpenAPI operations of the template routes (DESIGN §3, §10), spread into the document's
 * OPERATIONS (lib/openapi/openApiDocument.ts). Request bodies are the schemas that validate them
 * (lambdas/core/templateRequests.ts); problems refer to the document's shared `Problem` schema.
 */
import * as z from 'zod';
import type { TemplateRouteName } from '../../lambdas/core/apiRoutes.js';
import {
  TEMPLATE_LIMITS,
  TemplateNameSchema,
  TemplatePutBodySchema,
  TemplateRenderBodySchema,
} from '../../lambdas/core/templateRequests.js';
import { json, jsonResponse, type Operation, problemResponse as problem } from './components.js';

const TemplateVersionSchema = z
  .object({
    name: z.string(),
    version: z.int(),
    subject: z.string(),
    text: z.string().nullable(),
    html: z.string().nullable(),
    description: z.string().nullable(),
    created_at: z.string().meta({ format: 'date-time' }),
    latest_version: z.int(),
    archived_at: z
      .string()
      .meta({ format: 'date-time', description: 'Set once archived: no new message may use the template.' })
      .nullable(),
  })
  .meta({ id: 'TemplateVersion', description: 'One immutable version of a template.' });

const TemplateSummarySchema = z
  .object({
    name: z.string(),
    latest_version: z.int(),
    description: z.string().nullable(),
    created_at: z.string().meta({ format: 'date-time' }),
    updated_at: z.string().meta({ format: 'date-time' }),
    archived_at: z.string().meta({ format: 'date-time' }).nullable(),
  })
  .meta({ id: 'Template' });

const TemplateListSchema = z
  .object({
    items: z.array(TemplateSummarySchema),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null at the end.' }),
  })
  .meta({ id: 'TemplateList' });

const RenderedTemplateSchema = z
  .object({
    name: z.string(),
    version: z.int(),
    subject: z.string(),
    text: z.string().nullable(),
    html: z.string().nullable(),
  })
  .meta({ id: 'RenderedTemplate', description: 'What a message with this data would be; nothing is sent.' });

const nameParam = z.object({ name: TemplateNameSchema });
const common = { 400: problem('Invalid request: `errors` names each field.') };
const notFound = problem('No such template (or version) for this tenant.');

export const TEMPLATE_OPERATIONS: Record<TemplateRouteName, Operation> = {
  listTemplates: {
    summary: "List this tenant's templates by name",
    request: {
      query: z.object({
        limit: z
          .int()
          .min(1)
          .max(TEMPLATE_LIMITS.maxListLimit)
          .optional()
          .meta({ description: 'Templates per page.', default: 20 }),
        cursor: z.string().optional().meta({
          description: "The previous page's `next_cursor`, with the same key (tenant, test or live).",
        }),
      }),
    },
    responses: {
      200: { description: 'A page of templates.', content: json(TemplateListSchema) },
      400: problem(
        'An invalid `limit` or `cursor`, or a parameter the listing does not take: `errors` names each.',
      ),
    },
  },
  putTemplate: {
    summary: 'Store a new immutable version of a template',
    request: { params: nameParam, body: { content: json(TemplatePutBodySchema), required: true } },
    responses: {
      201: jsonResponse(
        'Stored as the previous version + 1 (two concurrent PUTs get two versions).',
        TemplateVersionSchema,
        { headers: ['Location'] },
      ),
      ...common,
      400: problem(
        'Invalid request or template: a Handlebars syntax error, a partial, a helper other than #if, #unless, #each and #with, a prototype name, unescaped html output; `errors` names the part and the place.',
      ),
      503: problem('Too many concurrent versions of this template; retry.'),
    },
  },
  getTemplate: {
    summary: 'Get the latest version of a template',
    request: { params: nameParam },
    responses: {
      200: { description: 'The latest version.', content: json(TemplateVersionSchema) },
      404: notFound,
    },
  },
  archiveTemplate: {
    summary: 'Archive a template',
    request: { params: nameParam },
    responses: {
      200: {
        description: 'Archived: no new message may use it; queued messages still render and send.',
        content: json(TemplateSummarySchema),
      },
      404: notFound,
    },
  },
  getTemplateVersion: {
    summary: 'Get one version of a template',
    request: {
      params: nameParam.extend({ version: z.string().meta({ description: 'A version number, from 1.' }) }),
    },
    responses: {
      200: { description: 'The version.', content: json(TemplateVersionSchema) },
      404: notFound,
    },
  },
  renderTemplate: {
    summary: 'Preview a template with data (nothing is sent)',
    request: { params: nameParam, body: { content: json(TemplateRenderBodySchema), required: true } },
    responses: {
      200: { description: 'The rendered subject, text and html.', content: json(RenderedTemplateSchema) },
      ...common,
      404: notFound,
      422: problem(
        'The template does not render with this data: `errors` names each variable missing or printing an object or a list, or the data field at fault.',
      ),
    },
  },
};
