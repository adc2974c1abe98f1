/**
 * Stored templates (DESIGN §3, §10) in our words: immutable versions of one tenant's template, its
 * head (latest version, archived or not) and the listing. The DynamoDB adapter is
 * store/templateStore.ts.
 */
import type { TemplateContent } from '../core/renderTemplate.js';

/** One immutable version. */
export interface TemplateVersion extends TemplateContent {
  readonly name: string;
  readonly version: number;
  readonly description: string | null;
  readonly created_at: string;
}

/** A template as a whole: its latest version and whether it is archived. */
export interface TemplateHead {
  readonly name: string;
  readonly latest_version: number;
  readonly description: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  /** Set once archived: no new enqueue may use the template; queued messages still render. */
  readonly archived_at: string | null;
}

export type PutVersionResult =
  | {
      readonly kind: 'created';
      readonly version: TemplateVersion;
      readonly head: TemplateHead;
      /** The template was archived before this PUT, which un-archived it. */
      readonly unarchived: boolean;
    }
  /** Another PUT of the same template took every version number tried: the client may retry. */
  | { readonly kind: 'contended' };

export interface TemplatePage {
  readonly items: readonly TemplateHead[];
  /** The last name of this page, to pass as `after`; null at the end. */
  readonly next: string | null;
}

/** What the sender reads: one version, by the reference a message pinned. */
export interface TemplateVersions {
  /** The version, or undefined when it does not exist (reads are consistent). */
  getVersion(tenant: string, name: string, version: number): Promise<TemplateVersion | undefined>;
}

export interface TemplateStore extends TemplateVersions {
  /**
   * Stores `content` as the next version (latest + 1), atomically with the head: two concurrent
   * PUTs get two different versions, never the same one. A PUT of an archived template un-archives it.
   */
  putVersion(input: {
    tenant: string;
    name: string;
    content: TemplateContent;
    description: string | null;
    now: Date;
  }): Promise<PutVersionResult>;
  getHead(tenant: string, name: string): Promise<TemplateHead | undefined>;
  /**
   * The head an enqueue judges by: at most a few seconds old (an archive or a new latest version
   * shows within that bound), read through when `version` is newer than the head known.
   */
  recentHead(tenant: string, name: string, version: number | null): Promise<TemplateHead | undefined>;
  /** Heads by name, `limit` at most, after the name `after`. */
  list(tenant: string, options: { limit: number; after: string | null }): Promise<TemplatePage>;
  /** Archives the template (idempotent: an archived one keeps its first `archived_at`); undefined when there is none. */
  archive(tenant: string, name: string, now: Date): Promise<TemplateHead | undefined>;
}
