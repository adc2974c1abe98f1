/**
 * The template routes (DESIGN §3, §10): store a new immutable version, list, read the latest or one
 * version, archive, and preview a render. Every route is the tenant's own: another tenant's template
 * is a 404 like one that does not exist.
 */
import type { TemplateRouteName } from '../../core/apiRoutes.js';
import { decodeCursor, encodeCursor, readLimit, unknownParameters } from '../../core/listQuery.js';
import type { EnqueueRequest } from '../../core/messageSchema.js';
import { type FieldError, type ProblemDetails, problem, validationProblem } from '../../core/problem.js';
import type { RenderedContent } from '../../core/renderTemplate.js';
import type { TemplateRenderer } from '../../core/templateRenderer.js';
import {
  TEMPLATE_LIMITS,
  validateTemplateName,
  validateTemplatePut,
  validateTemplateRender,
  validateTemplateVersion,
} from '../../core/templateRequests.js';
import type { TemplateHead, TemplateStore, TemplateVersion } from '../../ports/TemplateStore.js';
import {
  jsonResult,
  type Outcome,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  readJsonBody,
} from '../route.js';

type TemplateDependencies = Pick<RouteDependencies, 'templates' | 'renderer' | 'now'>;

/** The handlers of the template routes (core/apiRoutes.ts), by route name. */
export function templateRoutes(
  deps: TemplateDependencies,
): Readonly<Record<TemplateRouteName, RouteHandler>> {
  return {
    putTemplate: putTemplateRoute(deps),
    listTemplates: listTemplatesRoute(deps),
    getTemplate: getTemplateRoute(deps),
    getTemplateVersion: getTemplateVersionRoute(deps),
    archiveTemplate: archiveTemplateRoute(deps),
    renderTemplate: renderTemplateRoute(deps),
  };
}

/** A version as the API answers it. */
export function templateVersionView(version: TemplateVersion, head?: TemplateHead) {
  return {
    name: version.name,
    version: version.version,
    subject: version.subject,
    text: version.text,
    html: version.html,
    description: version.description,
    created_at: version.created_at,
    ...(head === undefined ? {} : { latest_version: head.latest_version, archived_at: head.archived_at }),
  };
}

/** A template's head as the listing shows it. */
export function templateHeadView(head: TemplateHead) {
  return {
    name: head.name,
    latest_version: head.latest_version,
    description: head.description,
    created_at: head.created_at,
    updated_at: head.updated_at,
    archived_at: head.archived_at,
  };
}

function putTemplateRoute(deps: TemplateDependencies): RouteHandler {
  return async function putTemplate({ tenant, params, event }) {
    const name = validateTemplateName(params.name ?? '');
    if (!name.ok) return problemResult(validationProblem(name.errors));
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const parsed = await validateTemplatePut(body.value);
    if (!parsed.ok) return problemResult(validationProblem(parsed.errors));
    const { description, ...content } = parsed.value;
    const result = await deps.templates.putVersion({
      tenant,
      name: name.value,
      content,
      description,
      now: deps.now(),
    });
    if (result.kind === 'contended')
      return problemResult(
        problem('unavailable', 'Too many versions of this template are being stored at once; retry.'),
        {
          'retry-after': '1',
        },
      );
    return jsonResult(
      201,
      templateVersionView(result.version, result.head),
      { location: `/v1/templates/${encodeURIComponent(name.value)}/versions/${result.version.version}` },
      { template: name.value, template_version: result.version.version },
    );
  };
}

function listTemplatesRoute(deps: TemplateDependencies): RouteHandler {
  return async function listTemplates({ tenant, event }) {
    const query: Readonly<Record<string, string | undefined>> = event.queryStringParameters ?? {};
    const errors = unknownParameters(query, ['limit', 'cursor']);
    const limit = readLimit(query.limit, TEMPLATE_LIST_LIMIT);
    if (!limit.ok) errors.push(limit.error);
    let after: string | null = null;
    if (query.cursor !== undefined && query.cursor !== '') {
      after = decodeTemplateCursor(query.cursor, tenant);
      if (after === null)
        errors.push({ field: 'cursor', message: 'is not a next_cursor of this listing (the same key)' });
    }
    if (errors.length > 0) return problemResult(validationProblem(errors));
    const page = await deps.templates.list(tenant, {
      limit: limit.ok ? limit.limit : TEMPLATE_LIST_LIMIT.default,
      after,
    });
    return jsonResult(
      200,
      {
        items: page.items.map(templateHeadView),
        next_cursor: page.next === null ? null : encodeTemplateCursor(page.next, tenant),
      },
      {},
      { count: page.items.length },
    );
  };
}

function getTemplateRoute(deps: TemplateDependencies): RouteHandler {
  return async function getTemplate({ tenant, params }) {
    const name = validateTemplateName(params.name ?? '');
    if (!name.ok) return templateNotFound();
    const head = await deps.templates.getHead(tenant, name.value);
    if (head === undefined) return templateNotFound();
    const version = await deps.templates.getVersion(tenant, name.value, head.latest_version);
    if (version === undefined) return templateNotFound();
    return jsonResult(200, templateVersionView(version, head), {}, { template: name.value });
  };
}

function getTemplateVersionRoute(deps: TemplateDependencies): RouteHandler {
  return async function getTemplateVersion({ tenant, params }) {
    const name = validateTemplateName(params.name ?? '');
    const number = validateTemplateVersion(params.version ?? '');
    if (!name.ok) return templateNotFound();
    if (!number.ok) return versionNotFound('version');
    const [head, version] = await Promise.all([
      deps.templates.getHead(tenant, name.value),
      deps.templates.getVersion(tenant, name.value, number.value),
    ]);
    if (head === undefined) return templateNotFound();
    if (version === undefined) return versionNotFound('version');
    return jsonResult(200, templateVersionView(version, head), {}, { template: name.value });
  };
}

function archiveTemplateRoute(deps: TemplateDependencies): RouteHandler {
  return async function archiveTemplate({ tenant, params }) {
    const name = validateTemplateName(params.name ?? '');
    if (!name.ok) return templateNotFound();
    const head = await deps.templates.archive(tenant, name.value, deps.now());
    if (head === undefined) return templateNotFound();
    return jsonResult(200, templateHeadView(head), {}, { template: name.value });
  };
}

function renderTemplateRoute(deps: TemplateDependencies): RouteHandler {
  return async function renderTemplate({ tenant, params, event }) {
    const name = validateTemplateName(params.name ?? '');
    if (!name.ok) return templateNotFound();
    const body = readJsonBody(event);
    if (!body.ok) return problemResult(body.problem);
    const parsed = validateTemplateRender(body.value);
    if (!parsed.ok) return problemResult(validationProblem(parsed.errors));
    const head = await deps.templates.getHead(tenant, name.value);
    if (head === undefined) return templateNotFound();
    const version = parsed.value.version ?? head.latest_version;
    const rendered = await deps.renderer.render({ tenant, name: name.value, version }, parsed.value.data);
    if (rendered.kind === 'missing') return versionNotFound('/version');
    if (rendered.kind === 'invalid') return problemResult(renderProblem(rendered.errors));
    return jsonResult(200, { name: name.value, version, ...rendered.content }, {}, { template: name.value });
  };
}

function templateNotFound(): Outcome {
  const errors = [{ field: 'name', message: 'not found' }];
  return problemResult(problem('notFound', 'No template of this name.', { errors }));
}

/** The template exists but not this version: `field` is the path parameter or the body's pointer. */
function versionNotFound(field: 'version' | '/version'): Outcome {
  const errors = [{ field, message: 'not found' }];
  return problemResult(problem('notFound', 'No such version of this template.', { errors }));
}

/** The opaque `cursor` of GET /v1/templates (lambdas/core/listQuery.ts): `{"after":name}`. */
function encodeTemplateCursor(after: string, tenant: string): string {
  return encodeCursor(tenant, { after });
}

function decodeTemplateCursor(cursor: string, tenant: string): string | null {
  const after = decodeCursor(cursor, tenant)?.after;
  return typeof after === 'string' && validateTemplateName(after).ok ? after : null;
}

/** GET /v1/templates' `limit`. */
const TEMPLATE_LIST_LIMIT = { default: 20, min: 1, max: TEMPLATE_LIMITS.maxListLimit } as const;

export type TemplateCheck =
  | {
      readonly ok: true;
      readonly version: number;
      /** What the message renders: its size counts in the whole message's (routes/attachments.ts). */
      readonly content: RenderedContent;
    }
  | { readonly ok: false; readonly problem: ProblemDetails };

/**
 * The enqueue of a template message (DESIGN §3, §10): the template and version must exist and the
 * template must not be archived, and the message must render with its data — the rendered subject
 * under §3's header rules, the rendered body within the size limit, the render within its bounds of
 * steps and time (renderCost.ts). Each failure is a 422 problem
 * naming the field or the variable; nothing is stored. The answer is the version to pin and what it
 * rendered.
 */
export async function checkTemplateMessage(
  deps: { readonly templates: TemplateStore; readonly renderer: TemplateRenderer },
  tenant: string,
  request: EnqueueRequest,
): Promise<TemplateCheck> {
  const template = request.template;
  if (template == null) throw new TypeError('checkTemplateMessage: not a template message');
  const head = await deps.templates.recentHead(tenant, template.name, template.version ?? null);
  if (head === undefined)
    return unusable('The template does not exist.', '/template/name', 'no such template');
  if (head.archived_at !== null)
    return unusable('The template is archived.', '/template/name', 'is archived: no new message may use it');
  const version = template.version ?? head.latest_version;
  if (version > head.latest_version)
    return unusable(
      'The template has no such version.',
      '/template/version',
      `does not exist (the latest is ${head.latest_version})`,
    );
  const rendered = await deps.renderer.render({ tenant, name: template.name, version }, request.data ?? {});
  if (rendered.kind === 'missing')
    return unusable('The template has no such version.', '/template/version', 'does not exist');
  if (rendered.kind === 'invalid') return { ok: false, problem: renderProblem(rendered.errors) };
  // The steps and the output were bounded before the render (core/renderCost.ts): the same pinned
  // version with the same data costs the same in the sender (DESIGN §5).
  return { ok: true, version, content: rendered.content };
}

/** The 422 of a message that does not render: every failing variable or field. */
export function renderProblem(errors: readonly FieldError[]): ProblemDetails {
  return problem(
    'template',
    'The message does not render with its data: `errors` names each variable or field.',
    {
      errors,
    },
  );
}

function unusable(detail: string, field: string, message: string): TemplateCheck {
  return { ok: false, problem: problem('template', detail, { errors: [{ field, message }] }) };
}
