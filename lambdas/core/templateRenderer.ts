/**
 * Renders a message's template from its pinned version, compiling each (tenant, template, version)
 * once per warm function: the api (enqueue validation, preview) and the sender each hold one
 * renderer over their own reads of the table. Versions are immutable, so a cached version is never
 * stale; an archived template's versions still render (archiving stops new enqueues only).
 */
import type { FieldError } from './problem.js';
import type { CompiledTemplate, RenderedContent, TemplateContent } from './renderTemplate.js';
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

/**
 * renderTemplate.ts and Handlebars, imported on the first render (decision 0114): most messages have
 * no template, and code splitting keeps Handlebars (~110 KB of bundle with its source-map) out of
 * what a cold start loads. Node imports a module once; later calls get the same module at once.
 */
const renderModule = () => import('./renderTemplate.js');

export function createTemplateRenderer(
  load: LoadTemplateVersion,
  maxEntries: number = DEFAULT_TEMPLATE_CACHE_ENTRIES,
): TemplateRenderer {
  const compiled = new LruCache<CompiledTemplate>(maxEntries);
  const compile = async (content: TemplateContent) => (await renderModule()).compileTemplate(content);
  const outcome = async (
    template: CompiledTemplate | undefined,
    data: Readonly<Record<string, unknown>>,
  ): Promise<TemplateRenderOutcome> => {
    if (template === undefined) return { kind: 'missing' };
    const result = (await renderModule()).renderTemplate(template, data);
    return result.ok
      ? { kind: 'rendered', content: result.value }
      : { kind: 'invalid', errors: result.errors };
  };
  return {
    async render(ref, data) {
      const key = templateVersionKey(ref.tenant, ref.name, ref.version);
      const template = await compiled.getOrLoad(key, async () => {
        const content = await load(ref);
        return content === undefined ? undefined : compile(content);
      });
      return outcome(template, data);
    },
    async renderLoaded(ref, content, data) {
      const key = templateVersionKey(ref.tenant, ref.name, ref.version);
      const template = await compiled.getOrLoad(key, () => compile(content));
      return outcome(template, data);
    },
  };
}
