/**
 * A template message's body at send time (DESIGN §10): rendered from the version its records
 * pinned, with the data it was enqueued with, through the sender's renderer (each version compiled
 * once per warm function). The enqueue rendered the same version with the same data, so this
 * should not fail; when it does anyway (the version item gone, a data item unreadable), the message
 * can never be sent: `failed`, class `permanent`, a reason naming what failed, never a retry. A
 * failed read of the version is the table's fault, not the message's: the claim is released.
 */
import type { TemplateRenderer } from '../core/templateRenderer.js';
import type { AttemptRecord, LastError, MessageBodyRecord } from '../store/messageRecord.js';

export type SendableBody =
  | { readonly kind: 'ready'; readonly body: MessageBodyRecord }
  | { readonly kind: 'unrenderable'; readonly reason: string }
  | { readonly kind: 'read-failed'; readonly error: unknown };

/** The body with its subject, text and html: as stored (inline), or rendered (template). */
export async function sendableBody(
  renderer: TemplateRenderer,
  tenant: string,
  body: MessageBodyRecord,
): Promise<SendableBody> {
  const template = body.template;
  if (template === undefined) return { kind: 'ready', body };
  const data = parseData(body.data_json);
  if (data === undefined)
    return {
      kind: 'unrenderable',
      reason: `the data of template ${template.name} v${template.version} is unreadable`,
    };
  let outcome: Awaited<ReturnType<TemplateRenderer['render']>>;
  try {
    outcome = await renderer.render({ tenant, name: template.name, version: template.version }, data);
  } catch (error) {
    return { kind: 'read-failed', error };
  }
  if (outcome.kind === 'missing')
    return { kind: 'unrenderable', reason: `template ${template.name} v${template.version} does not exist` };
  if (outcome.kind === 'invalid') {
    const first = outcome.errors[0];
    const why = first === undefined ? 'it does not render' : `${first.field} ${first.message}`;
    return {
      kind: 'unrenderable',
      reason:
        `template ${template.name} v${template.version} does not render with the message's data: ${why}`.slice(
          0,
          300,
        ),
    };
  }
  return { kind: 'ready', body: { ...body, ...outcome.content } };
}

/** The history entry and `last_error` of a message whose template does not render: permanent. */
export function unrenderableRecord(
  at: Date,
  reason: string,
): { attempt: AttemptRecord; lastError: LastError } {
  return {
    attempt: {
      at: at.toISOString(),
      outcome: 'permanent',
      code: null,
      enhanced_code: null,
      reply: 'template did not render',
      duration_ms: 0,
    },
    lastError: { class: 'permanent', code: null, enhanced_code: null, message: reason },
  };
}

function parseData(json: string | undefined): Readonly<Record<string, unknown>> | undefined {
  if (json === undefined) return {};
  try {
    const data: unknown = JSON.parse(json);
    return typeof data === 'object' && data !== null && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
