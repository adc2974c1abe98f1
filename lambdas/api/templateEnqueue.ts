/**
 * The enqueue of a template message (DESIGN §3, §10): the template and version must exist and the
 * template must not be archived, and the message must render with its data — the rendered subject
 * under §3's header rules, the rendered body within the size limit, the render within its bounds of
 * steps and time (renderCost.ts). Each failure is a 422 problem
 * naming the field or the variable; nothing is stored. The answer is the version to pin.
 */
import type { EnqueueRequest } from '../core/enqueueRequest.js';
import type { FieldError } from '../core/problem.js';
import { type ProblemDetails, problem } from '../core/problem.js';
import type { TemplateRenderer } from '../core/templateRenderer.js';
import type { TemplateStore } from '../ports/TemplateStore.js';

export type TemplateCheck =
  | { readonly ok: true; readonly version: number }
  | { readonly ok: false; readonly problem: ProblemDetails };

export async function checkTemplateMessage(
  deps: { readonly templates: TemplateStore; readonly renderer: TemplateRenderer },
  tenant: string,
  request: EnqueueRequest,
): Promise<TemplateCheck> {
  const template = request.template;
  if (template == null) throw new TypeError('checkTemplateMessage: not a template message');
  const head = await deps.templates.getHead(tenant, template.name);
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
  return { ok: true, version };
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
