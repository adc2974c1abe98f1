/**
 * `postdate webhooks list | create | show | delete | test | deliveries | retry | rotate-secret`
 * (DESIGN §6, §11): an operator manages a tenant's endpoints and their deliveries through the same
 * store, rules and conditions as the API (lambdas/api/routes/webhooks.ts, lambdas/store/webhookStore.ts).
 * A secret is shown only by the creation or the rotation that makes it.
 */

import { type Command, InvalidArgumentError } from 'commander';
import { SqsWebhookQueue } from '../lambdas/adapters/SqsWebhookQueue.js';
import {
  checkNewWebhookUrl,
  type ResolveHost,
  systemResolve,
} from '../lambdas/adapters/webhookAddressPolicy.js';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  deliveryView,
  endpointView,
  findWebhookEndpoint,
  newWebhookSecret,
  retiredUntil,
  retryDelivery,
  sendTestEvent,
  type WebhookRouteDependencies,
} from '../lambdas/api/routes/webhooks.js';
import type { FieldError } from '../lambdas/core/problem.js';
import { stalledRetryFrom, WEBHOOK_STALLED_AFTER_MS } from '../lambdas/core/webhookOperator.js';
import {
  isWebhookDeliveryId,
  isWebhookDeliveryStatus,
  WEBHOOK_DELIVERY_STATUS,
  WEBHOOK_LIMITS,
} from '../lambdas/core/webhooks.js';
import type { WebhookDelivery, WebhookQueue, WebhookStore } from '../lambdas/ports/Webhooks.js';
import { DynamoWebhookStore } from '../lambdas/store/webhookStore.js';
import { CliError, EXIT, NotFoundError, UsageError } from './cliErrors.js';
import { type CommandAction, type CommandContext, pageSize, tenantName, tenantOf } from './commandAction.js';
import { type Output, printFields, printTable } from './output.js';
import { type QueueRef, queueUrlOf, type ResourceRefs, type TargetMode } from './target.js';

export interface WebhooksDeps {
  readonly store: WebhookStore;
  readonly queue: WebhookQueue | undefined;
  readonly now: () => Date;
  readonly retryHours: number;
  readonly retentionDays: number;
  /** The URL policy `webhooks create` checks by: the API's (webhookUrlCheckOf). */
  readonly checkUrl: WebhookRouteDependencies['checkUrl'];
  readonly random: () => number;
}

/**
 * The URL policy of the stack the CLI works on (DESIGN §11): locally `http` to loopback too, as the
 * local stack's api allows (POSTDATE_WEBHOOK_ALLOW_PRIVATE_URLS); against AWS `https` to a public
 * address only (its name resolved now, by `resolve`, decision 0217), as every AWS api, which never has
 * that setting. Tests give names their own answers.
 */
export function webhookUrlCheckOf(
  mode: TargetMode,
  resolve: ResolveHost = systemResolve,
): WebhooksDeps['checkUrl'] {
  const policy = mode === 'local' ? 'local' : 'public-https';
  return (url) => checkNewWebhookUrl(url, policy, resolve);
}

export async function webhooksList(deps: WebhooksDeps, tenant: string, out: Output): Promise<void> {
  const endpoints = await deps.store.listEndpoints(tenant);
  const rows = endpoints.map((endpoint) => ({
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events?.join(',') ?? 'all',
    created_at: endpoint.createdAt,
  }));
  if (out.json) return out.data(rows);
  printTable(
    out,
    [
      { header: 'ID', value: (row) => row.id },
      { header: 'URL', value: (row) => row.url },
      { header: 'EVENTS', value: (row) => row.events },
      { header: 'CREATED', value: (row) => row.created_at },
    ],
    rows,
  );
}

/**
 * An endpoint's deliveries, newest first, paged as `suppressions list` is: one page of `limit`
 * (`--after` the `next` of the page before), or every page with `all`.
 */
export async function webhooksDeliveries(
  deps: WebhooksDeps,
  options: {
    readonly tenant: string;
    readonly endpoint: string;
    readonly status?: string;
    readonly limit: number;
    readonly after?: string;
    readonly all?: boolean;
  },
  out: Output,
): Promise<void> {
  const endpoint = await deps.store.getEndpoint(options.tenant, options.endpoint);
  if (!endpoint) throw endpointNotFound(options);
  if (options.status !== undefined && !isWebhookDeliveryStatus(options.status)) {
    throw new UsageError('--status must be pending, delivered or failed');
  }
  const status =
    options.status !== undefined && isWebhookDeliveryStatus(options.status) ? options.status : null;
  const deliveries: WebhookDelivery[] = [];
  let next = options.after ?? null;
  do {
    const page = await deps.store.listDeliveries({
      endpointId: endpoint.id,
      status,
      limit: options.limit,
      cursor: next,
    });
    deliveries.push(...page.items);
    next = page.nextCursor;
  } while (options.all === true && next !== null);
  const items = deliveries.map((delivery) => ({
    id: delivery.id,
    event: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    last: delivery.history.at(-1)?.error ?? String(delivery.history.at(-1)?.statusCode ?? '–'),
    updated_at: delivery.updatedAt,
    // A pending one's: more than 2 h past, its copy is not coming (runbook procedure 7, step 4).
    next_attempt_at: delivery.status === WEBHOOK_DELIVERY_STATUS.pending ? delivery.nextAttemptAt : null,
  }));
  if (out.json) return out.data({ items, next });
  printTable(
    out,
    [
      { header: 'DELIVERY', value: (row) => row.id },
      { header: 'EVENT', value: (row) => row.event },
      { header: 'STATUS', value: (row) => row.status },
      { header: 'ATTEMPTS', value: (row) => String(row.attempts), align: 'right' },
      { header: 'LAST', value: (row) => row.last },
      { header: 'UPDATED', value: (row) => row.updated_at },
      { header: 'NEXT ATTEMPT', value: (row) => row.next_attempt_at ?? '–' },
    ],
    items,
  );
  if (next !== null) out.line(`more: --after ${next} (or --all)`);
}

/** As `POST /v1/webhooks/{id}/deliveries/{delivery}/retry`, by the route's own steps (retryDelivery). */
export async function webhooksRetry(
  deps: WebhooksDeps,
  options: { readonly tenant: string; readonly endpoint: string; readonly delivery: string },
  out: Output,
): Promise<void> {
  const queue = requireQueue(deps);
  const retried = await retryDelivery({ ...deps, queue }, options.tenant, options.endpoint, options.delivery);
  if (retried.kind === 'endpoint-not-found') throw endpointNotFound(options);
  if (retried.kind === 'not-found')
    throw new NotFoundError(
      `no delivery ${options.delivery} of endpoint ${options.endpoint}`,
      `postdate webhooks deliveries ${options.endpoint} --tenant ${options.tenant}`,
    );
  if (retried.kind === 'conflict') throw retryRefused(retried.current);
  if (retried.kind === 'queue-refused') throw retried.error;
  const { delivery } = retried;
  if (out.json) return out.data({ id: delivery.id, status: delivery.status });
  out.line(`${delivery.id}: pending again (rev ${delivery.rev})`);
}

/** As `POST /v1/webhooks/{id}/rotate-secret`: prints the new secret (the only time it is shown). */
export async function webhooksRotateSecret(
  deps: WebhooksDeps,
  options: { readonly tenant: string; readonly endpoint: string },
  out: Output,
): Promise<void> {
  const secret = newWebhookSecret();
  const rotated = await deps.store.rotateSecret({
    tenant: options.tenant,
    id: options.endpoint,
    secret,
    now: deps.now(),
  });
  if (rotated === 'not-found') throw endpointNotFound(options);
  const previousUntil = retiredUntil(rotated);
  if (out.json) return out.data({ id: rotated.id, secret, previous_secret_expires_at: previousUntil });
  out.line(`${rotated.id}: new secret ${secret}`);
  out.line(`the previous secret keeps signing beside it until ${previousUntil}`);
}

/**
 * As `POST /v1/webhooks`: the API's rules (event types, the URL policy, the tenant's limit), nothing
 * written unless all pass; a refusal names the flag. Prints the secret, the one time it is shown.
 */
export async function webhooksCreate(
  deps: WebhooksDeps,
  options: {
    readonly tenant: string;
    readonly url: string;
    readonly events?: readonly string[];
    readonly description?: string;
  },
  out: Output,
): Promise<void> {
  const body = {
    url: options.url,
    ...(options.events === undefined ? {} : { events: options.events }),
    ...(options.description === undefined ? {} : { description: options.description }),
  };
  const created = await createWebhookEndpoint(deps, options.tenant, body);
  if (created.kind === 'invalid')
    throw new UsageError(created.errors.map((error) => flagError(error, options.url)).join('; '));
  if (created.kind === 'limit')
    throw new CliError(
      `tenant ${options.tenant} has ${WEBHOOK_LIMITS.maxEndpointsPerTenant} webhook endpoints, the most it may have`,
      EXIT.failed,
    );
  const { endpoint } = created;
  if (out.json) return out.data({ ...endpointView(endpoint), secret: endpoint.secret });
  out.line(`created ${endpoint.id} for ${endpoint.url} (events: ${endpoint.events?.join(',') ?? 'all'})`);
  out.line(`secret: ${endpoint.secret}`);
  out.line('the secret is shown only once, now: store it (`webhooks rotate-secret` makes a new one)');
}

/**
 * The API's field errors in the CLI's words: `/url must be https` is `--url http://… must be https`,
 * the URL as given, so a script that built it from a variable shows what it built.
 */
function flagError(error: FieldError, url: string): string {
  const [, field = '', item] = error.field.split('/');
  const flag = ['url', 'events', 'description'].includes(field) ? `--${field}` : error.field;
  const value = field === 'url' ? ` ${url}` : '';
  return `${flag}${value}${item === undefined ? '' : ` (item ${Number(item) + 1})`} ${error.message}`;
}

/** As `GET /v1/webhooks/{id}`: the endpoint (never its secret) and its delivery counts. */
export async function webhooksShow(
  deps: WebhooksDeps,
  options: { readonly tenant: string; readonly endpoint: string },
  out: Output,
): Promise<void> {
  const endpoint = await findWebhookEndpoint(deps.store, options.tenant, options.endpoint);
  if (!endpoint) throw endpointNotFound(options);
  const deliveries = await deps.store.countDeliveries(endpoint.id);
  if (out.json) return out.data({ ...endpointView(endpoint), deliveries });
  printFields(out, [
    ['id', endpoint.id],
    ['url', endpoint.url],
    ['events', endpoint.events?.join(',') ?? 'all'],
    ['description', endpoint.description ?? '–'],
    ['created', endpoint.createdAt],
    [
      'deliveries',
      `${deliveries.delivered} delivered, ${deliveries.pending} pending, ${deliveries.failed} failed ` +
        `(delivered and pending among the ${deliveries.recent} newest; failed: every one kept)`,
    ],
  ]);
}

/**
 * As `DELETE /v1/webhooks/{id}`: its queued deliveries find no endpoint and stop. A second run finds
 * none and fails as the API's 404 does.
 */
export async function webhooksDelete(
  deps: WebhooksDeps,
  options: { readonly tenant: string; readonly endpoint: string },
  out: Output,
): Promise<void> {
  const deleted = await deleteWebhookEndpoint(deps.store, options.tenant, options.endpoint);
  if (deleted === 'not-found') throw endpointNotFound(options);
  if (out.json) return out.data({ id: options.endpoint, deleted: true });
  out.line(`deleted ${options.endpoint}; its queued deliveries stop`);
}

/** As `POST /v1/webhooks/{id}/test`: a `webhook.test` event delivered now, through the webhook queue. */
export async function webhooksTest(
  deps: WebhooksDeps,
  options: { readonly tenant: string; readonly endpoint: string },
  out: Output,
): Promise<void> {
  const queue = requireQueue(deps);
  const tested = await sendTestEvent({ ...deps, queue }, options.tenant, options.endpoint);
  if (tested.kind === 'not-found') throw endpointNotFound(options);
  if (tested.kind === 'queue-refused')
    throw new CliError('the webhook queue refused the copy: no test event was sent; try again', EXIT.failed);
  const { delivery } = tested;
  if (out.json) return out.data(deliveryView(delivery));
  out.line(`queued ${delivery.eventType} to ${delivery.endpointId}: delivery ${delivery.id}`);
  out.line(`its outcome: postdate webhooks deliveries ${delivery.endpointId} --tenant ${options.tenant}`);
}

/**
 * A retry the rule refused (mayRetryDelivery): a pending delivery says from when it can be retried
 * and why not yet (its copy may still come), as the API's 409 does; `retryable_at` in the error
 * document.
 */
function retryRefused(current: WebhookDelivery): CliError {
  const from = stalledRetryFrom(current);
  const hours = WEBHOOK_STALLED_AFTER_MS / 3_600_000;
  const message =
    from === null
      ? `the delivery is ${current.status}: only a failed one, or a pending one whose next attempt is more than ${hours} hours overdue, can be retried`
      : `the delivery is pending, its next attempt due at ${current.nextAttemptAt}: its copy may still come ` +
        `(from the webhook queue, or from the webhook DLQ once redriven: runbook procedure 7); ` +
        `retry it from ${from.toISOString()}, when that attempt is ${hours} hours overdue`;
  return new CliError(message, EXIT.failed, {
    context: { delivery_status: current.status, retryable_at: from?.toISOString() ?? null },
  });
}

function endpointNotFound(options: { readonly tenant: string; readonly endpoint: string }): NotFoundError {
  return new NotFoundError(
    `no webhook endpoint ${options.endpoint} for tenant ${options.tenant} (deleted, or never made)`,
    `postdate webhooks list --tenant ${options.tenant}`,
  );
}

/** The webhook queue a copy goes to (`test`, `retry`), or the usage error naming the flag. */
function requireQueue(deps: Pick<WebhooksDeps, 'queue'>): WebhookQueue {
  if (!deps.queue)
    throw new UsageError(
      'no webhook queue: pass --stack NAME, --webhook-queue-url or set POSTDATE_WEBHOOK_QUEUE_URL (stack output WebhookQueueUrl)',
    );
  return deps.queue;
}

/**
 * The queue a retried delivery's copy goes to: `--webhook-queue-url`, else the target's (the stack's
 * `WebhookQueueUrl` output with `--stack`, or POSTDATE_WEBHOOK_QUEUE_URL). Never the global
 * `--queue-url`, which names the send queue: a webhook copy there is no delivery.
 */
export function webhookQueueOf(
  options: { readonly webhookQueueUrl?: string },
  refs: Pick<ResourceRefs, 'webhookQueue'>,
): QueueRef | undefined {
  return options.webhookQueueUrl === undefined ? refs.webhookQueue : { url: options.webhookQueueUrl };
}

/** The `--after` of `webhooks deliveries`: the `next` of the page before, a delivery id. */
function deliveryCursor(value: string): string {
  if (!isWebhookDeliveryId(value)) throw new InvalidArgumentError('must be the `next` of the page before');
  return value;
}

/** `--events a,b`: the event types, each as given (the API's rules judge them). */
/** `--status` of `webhooks deliveries`: checked as it is parsed, so a bad one is exit 2 before any read. */
function deliveryStatus(value: string): string {
  if (!isWebhookDeliveryStatus(value))
    throw new InvalidArgumentError('--status must be pending, delivered or failed');
  return value;
}

function commaList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Registers `postdate webhooks …` with postdate.ts's action wrapper (one line in cli/postdate.ts). */
export function registerWebhooksCommands(program: Command, action: CommandAction): void {
  const webhooks = program
    .command('webhooks')
    .description(
      "a tenant's webhook endpoints: create, show, delete, test; their deliveries; retry one; rotate a secret",
    );
  const deps = async (
    { target, config, now }: CommandContext,
    /** `test` and `retry` only: the others put nothing on the queue, so they never look it up. */
    options?: { readonly webhookQueueUrl?: string },
  ): Promise<WebhooksDeps> => {
    const queue = options === undefined ? undefined : webhookQueueOf(options, target.refs);
    return {
      store: new DynamoWebhookStore(target.documents, target.refs.tableName),
      queue:
        queue === undefined
          ? undefined
          : new SqsWebhookQueue(target.sqs, await queueUrlOf(target.sqs, queue, 'webhook queue')),
      now,
      // With --stack, the stack's settings (retry hours, retention) over the shell's.
      retryHours: config.webhookRetryHours,
      retentionDays: config.retentionDays,
      checkUrl: webhookUrlCheckOf(target.mode),
      random: Math.random,
    };
  };
  const webhookQueueOption = [
    '--webhook-queue-url <url>',
    "the webhook queue (default: the stack's WebhookQueueUrl with --stack, else POSTDATE_WEBHOOK_QUEUE_URL, locally the local stack's)",
  ] as const;
  /** Every command's tenant: `--tenant`, or `local` on the local stack (`tenantOf`, as templates'). */
  const tenantOption = [
    '--tenant <tenant>',
    'the tenant (default on the local stack: local)',
    tenantName,
  ] as const;
  /** `show`, `delete`: `<endpoint> [--tenant T]`, nothing else. */
  const onEndpoint = (
    run: (deps: WebhooksDeps, options: { tenant: string; endpoint: string }, out: Output) => Promise<void>,
  ) =>
    action(async (context, endpoint: string, options: { tenant?: string }) => {
      await run(await deps(context), { tenant: tenantOf(context, options.tenant), endpoint }, context.out);
      return EXIT.ok;
    });
  webhooks
    .command('list')
    .description("a tenant's endpoints (never their secrets)")
    .option(...tenantOption)
    .action(
      action(async (context, options: { tenant?: string }) => {
        await webhooksList(await deps(context), tenantOf(context, options.tenant), context.out);
        return EXIT.ok;
      }),
    );
  webhooks
    .command('create')
    .description("subscribe an endpoint to the tenant's events; its signing secret is shown once")
    .option(...tenantOption)
    .requiredOption(
      '--url <url>',
      'where events are POSTed: https to a public address (locally http to loopback too)',
    )
    .option('--events <types>', 'only these event types, comma-separated (default: all)', commaList)
    .option('--description <text>', 'what the endpoint is for')
    .action(
      action(
        async (
          context,
          options: { tenant?: string; url: string; events?: string[]; description?: string },
        ) => {
          const tenant = tenantOf(context, options.tenant);
          await webhooksCreate(await deps(context), { ...options, tenant }, context.out);
          return EXIT.ok;
        },
      ),
    );
  webhooks
    .command('show')
    .description('one endpoint (never its secret) with its delivery counts')
    .argument('<endpoint>')
    .option(...tenantOption)
    .action(onEndpoint(webhooksShow));
  webhooks
    .command('delete')
    .description('remove an endpoint; its queued deliveries stop')
    .argument('<endpoint>')
    .option(...tenantOption)
    .action(onEndpoint(webhooksDelete));
  webhooks
    .command('test')
    .description('deliver a webhook.test event now (as POST /v1/webhooks/{id}/test)')
    .argument('<endpoint>')
    .option(...tenantOption)
    .option(...webhookQueueOption)
    .action(
      action(async (context, endpoint: string, options: { tenant?: string; webhookQueueUrl?: string }) => {
        const tenant = tenantOf(context, options.tenant);
        await webhooksTest(await deps(context, options), { tenant, endpoint }, context.out);
        return EXIT.ok;
      }),
    );
  webhooks
    .command('deliveries')
    .description("an endpoint's deliveries, newest first, a page at a time")
    .argument('<endpoint>')
    .option(...tenantOption)
    .option('--status <status>', 'pending|delivered|failed', deliveryStatus)
    .option(
      '--limit <n>',
      `at most this many per page (1–${WEBHOOK_LIMITS.listMax})`,
      pageSize(WEBHOOK_LIMITS.listMax),
      50,
    )
    .option(
      '--after <delivery>',
      'start after this delivery (the `more:` line of the previous page)',
      deliveryCursor,
    )
    .option('--all', 'every page')
    .action(
      action(
        async (
          context,
          endpoint: string,
          options: { tenant?: string; status?: string; limit: number; after?: string; all?: boolean },
        ) => {
          const tenant = tenantOf(context, options.tenant);
          await webhooksDeliveries(await deps(context), { ...options, tenant, endpoint }, context.out);
          return EXIT.ok;
        },
      ),
    );
  webhooks
    .command('rotate-secret')
    .description('a new signing secret; the previous one signs beside it for 24 h')
    .argument('<endpoint>')
    .option(...tenantOption)
    .action(
      action(async (context, endpoint: string, options: { tenant?: string }) => {
        const tenant = tenantOf(context, options.tenant);
        await webhooksRotateSecret(await deps(context), { tenant, endpoint }, context.out);
        return EXIT.ok;
      }),
    );
  webhooks
    .command('retry')
    .description('deliver a failed delivery again (as POST /v1/webhooks/{id}/deliveries/{delivery}/retry)')
    .argument('<endpoint>')
    .argument('<delivery>')
    .option(...tenantOption)
    .option(...webhookQueueOption)
    .action(
      action(
        async (
          context,
          endpoint: string,
          delivery: string,
          options: { tenant?: string; webhookQueueUrl?: string },
        ) => {
          await webhooksRetry(
            await deps(context, options),
            { tenant: tenantOf(context, options.tenant), endpoint, delivery },
            context.out,
          );
          return EXIT.ok;
        },
      ),
    );
}
