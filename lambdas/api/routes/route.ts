/**
 * One route of the HTTP API: a factory over the dependencies it needs, answering one matched
 * request with an Outcome. The router (createApiHandler.ts) resolves the route, checks the tenant,
 * logs the answer and turns a thrown error into a problem.
 */
import type { Config } from '../../core/config.js';
import type { TemplateRenderer } from '../../core/templateRenderer.js';
import type { ApiStore } from '../../ports/ApiStore.js';
import type { DispatchQueue } from '../../ports/DispatchQueue.js';
import type { TemplateStore } from '../../ports/TemplateStore.js';
import type { ApiEvent } from '../apiEvent.js';
import type { Outcome } from '../routeOutcome.js';
import type { WebhookRouteDependencies } from './webhooks.js';

/** The settings the routes read. */
export type ApiConfig = Pick<Config, 'allowedFrom' | 'defaultFrom' | 'maxHorizonDays' | 'retentionDays'>;

export interface RouteDependencies {
  readonly store: ApiStore;
  /** Stored templates (DESIGN §10), and their renderer with its compiled-version cache. */
  readonly templates: TemplateStore;
  readonly renderer: TemplateRenderer;
  readonly config: ApiConfig;
  readonly now: () => Date;
  readonly random: () => number;
  /** Waits between enqueue attempts after a contended transaction. */
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly webhooks?: WebhookRouteDependencies | undefined;
  /** The send queue, for the api's own copy of an immediate message (api/immediateCopy.ts). */
  readonly immediateCopies?: DispatchQueue | undefined;
}

export interface RouteRequest {
  /** The authorizer's tenant ('' on a public route). */
  readonly tenant: string;
  /** The path parameters of the matched route, decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly event: ApiEvent;
}

export type RouteHandler = (request: RouteRequest) => Promise<Outcome>;
