/**
 * The outbox's template messages (DESIGN §4, §10): an application reads the template it names
 * (readOutboxTemplate) before its transaction, and the outbox validates the message with it exactly
 * as POST /v1/messages does — the template not archived, the version existing, the message rendering
 * with its data — and pins the version on the records.
 *
 * Handlebars loads with the first template read, not with the outbox: the entry runs on the
 * application's request path, and an application that sends no template message never pays its
 * import (with source-map, about 240 KB of the entry's 560 KB).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EnqueueRequest } from '../core/messageSchema.js';
import type { ProblemDetails } from '../core/problem.js';
import type { TemplateContent } from '../core/renderTemplate.js';
import { DynamoTemplateStore } from '../store/templateStore.js';

type Renderer = typeof import('../core/renderTemplate.js');

/** Handlebars, once a template was read in this process: `checkOutboxTemplate` renders with it. */
let renderer: Renderer | undefined;

/** A template as the outbox needs it: one version's sources and whether the template is archived. */
export interface OutboxTemplate {
  readonly name: string;
  readonly version: number;
  readonly content: TemplateContent;
  readonly archived: boolean;
}

/**
 * Reads a tenant's template for `buildOutboxTransactItems({ …, template })`: `version`, or the latest
 * when it is null or absent. Undefined when the template or the version does not exist. Strongly
 * consistent.
 */
export async function readOutboxTemplate(
  documents: DynamoDBDocumentClient,
  tableName: string,
  tenant: string,
  name: string,
  version?: number | null,
): Promise<OutboxTemplate | undefined> {
  const store = new DynamoTemplateStore(documents, tableName);
  const [loaded, head] = await Promise.all([
    import('../core/renderTemplate.js'),
    store.getHead(tenant, name),
  ]);
  renderer = loaded;
  if (head === undefined) return undefined;
  const stored = await store.getVersion(tenant, name, version ?? head.latest_version);
  if (stored === undefined) return undefined;
  const { subject, text, html } = stored;
  return {
    name,
    version: stored.version,
    content: { subject, text, html },
    archived: head.archived_at !== null,
  };
}

/** Why the request cannot use this template (a 422-like problem), or the version to pin. */
export function checkOutboxTemplate(
  request: EnqueueRequest,
  template: OutboxTemplate | undefined,
):
  | { readonly ok: true; readonly version: number }
  | { readonly ok: false; readonly problem: ProblemDetails } {
  const wanted = request.template;
  if (wanted == null) throw new TypeError('checkOutboxTemplate: not a template message');
  const refused = (detail: string, field: string, message: string) => ({
    ok: false as const,
    problem: templateProblem(detail, [{ field, message }]),
  });
  if (template === undefined || template.name !== wanted.name)
    return refused(
      'The template was not given: read it with readOutboxTemplate and pass it as `template`.',
      '/template/name',
      'no such template was read',
    );
  // The renderer loads with a read: without one in this process, readOutboxTemplate did not make it.
  if (renderer === undefined)
    return refused(
      'The template was not read in this process: read it with readOutboxTemplate and pass what it returns.',
      '/template/name',
      'was not read with readOutboxTemplate',
    );
  if (wanted.version != null && wanted.version !== template.version)
    return refused('The template read is another version.', '/template/version', 'is not the version read');
  if (template.archived)
    return refused('The template is archived.', '/template/name', 'is archived: no new message may use it');
  const rendered = renderer.renderTemplate(renderer.compileTemplate(template.content), request.data ?? {});
  if (!rendered.ok)
    return {
      ok: false,
      problem: templateProblem('The message does not render with its data.', rendered.errors),
    };
  return { ok: true, version: template.version };
}

function templateProblem(detail: string, errors: ProblemDetails['errors']): ProblemDetails {
  return {
    type: 'urn:postdate:problem:template',
    title: 'The template cannot be used with this request',
    status: 422,
    detail,
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}
