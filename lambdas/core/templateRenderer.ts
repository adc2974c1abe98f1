/**
 * Renders a message's template from its pinned version, compiling each (tenant, template, version)
 * once per warm function: the api (enqueue validation, preview) and the sender each hold one
 * renderer over their own reads of the table. Versions are immutable, so a cached version is never
 * stale; an archived template's versions still render (archiving stops new enqueues only).
 */
import type { FieldError } from './problem.js';
import {
  type CompiledTemplate,
  compileTemplate,
  type RenderedContent,
  renderTemplate,
  type TemplateContent,
} from './renderTemplate.js';
import { LruCache, templateVersionKey } from './templateCache.js';

/** One template version of one tenant. */
export interface TemplateVersionRef {
  readonly tenant: string;
  readonly name: string;
  readonly version: number;
}

/** Reads one stored version's sources; undefined when it does not exist. */
export type LoadTemplateVersion = (ref: TemplateVersionRef) => Promise<TemplateContent | undefined>;

export type TemplateRenderOutcome =
  | {
      readonly kind: 'rendered';
      readonly content: RenderedContent;
    }
  | { readonly kind: 'invalid'; readonly errors: readonly FieldError[] }
  | { readonly kind: 'missing' };

export interface TemplateRenderer {
  /** Renders `data` with the version; a read failure of the version rejects (the caller may retry). */
  render(ref: TemplateVersionRef, data: Readonly<Record<string, unknown>>): Promise<TemplateRenderOutcome>;
  /** Renders with sources already read (a preview of the version just read), through the same cache. */
  renderLoaded(
    ref: TemplateVersionRef,
    content: TemplateContent,
    data: Readonly<Record<string, unknown>>,
  ): Promise<TemplateRenderOutcome>;
}

/** Compiled versions kept per warm function by default. */
export const DEFAULT_TEMPLATE_CACHE_ENTRIES = 100;

export function createTemplateRenderer(
  load: LoadTemplateVersion,
  maxEntries: number = DEFAULT_TEMPLATE_CACHE_ENTRIES,
): TemplateRenderer {
  const compiled = new LruCache<CompiledTemplate>(maxEntries);
  const outcome = (template: CompiledTemplate | undefined, data: Readonly<Record<string, unknown>>) => {
    if (template === undefined) return { kind: 'missing' } as const;
    const result = renderTemplate(template, data);
    return result.ok
      ? ({ kind: 'rendered', content: result.value } as const)
      : ({ kind: 'invalid', errors: result.errors } as const);
  };
  return {
    async render(ref, data) {
      const key = templateVersionKey(ref.tenant, ref.name, ref.version);
      const template = await compiled.getOrLoad(key, async () => {
        const content = await load(ref);
        return content === undefined ? undefined : compileTemplate(content);
      });
      return outcome(template, data);
    },
    async renderLoaded(ref, content, data) {
      const key = templateVersionKey(ref.tenant, ref.name, ref.version);
      const template = await compiled.getOrLoad(key, async () => compileTemplate(content));
      return outcome(template, data);
    },
  };
}
