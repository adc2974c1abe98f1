import createClient, { type Client } from 'openapi-fetch';
import { idempotencyKeyOf } from '../core/requestLimits.js';
import { PostdateClientError, PostdateInputError, PostdateProblemError, problemOf } from './clientErrors.js';
import type { components, operations, paths } from './openapiTypes.js';
import { IDEMPOTENCY_KEY_HEADER, retryingFetch } from './retryingFetch.js';
import {
  backoffDelayMs,
  hasFailedItems,
  MAX_TIMER_MS,
  mergeBatchResults,
  type OptionRange,
  outOfRange,
  parseRetryAfter,
  type RetryPolicy,
  retryPolicyOf,
} from './retryPolicy.js';

export type Message = components['schemas']['Message'];
export type MessageList = components['schemas']['MessageList'];
export type MessageStatus = components['schemas']['MessageStatus'];
export type GroupHead = components['schemas']['GroupHead'];
export type EnqueueRequest = components['schemas']['EnqueueRequest'];
export type BatchEnqueueRequest = components['schemas']['BatchEnqueueRequest'];
export type BatchEnqueueResponse = components['schemas']['BatchEnqueueResponse'];
export type BatchResult = components['schemas']['BatchResult'];
export type AttachmentUploadRequest = components['schemas']['AttachmentUploadRequest'];
export type AttachmentUpload = components['schemas']['AttachmentUpload'];
export type RescheduleRequest = components['schemas']['RescheduleRequest'];
export type GroupVersionRequest = components['schemas']['GroupVersionRequest'];
export type ListQuery = NonNullable<operations['list']['parameters']['query']>;
export type RotatedWebhook = components['schemas']['RotatedWebhook'];
export type Suppression = components['schemas']['Suppression'];
export type SuppressionList = components['schemas']['SuppressionList'];
export type SuppressionRequest = components['schemas']['SuppressionRequest'];
export type Template = components['schemas']['Template'];
export type TemplateList = components['schemas']['TemplateList'];
export type TemplateRequest = components['schemas']['TemplateRequest'];
export type TemplateVersion = components['schemas']['TemplateVersion'];
export type TemplateRenderRequest = components['schemas']['TemplateRenderRequest'];
export type RenderedTemplate = components['schemas']['RenderedTemplate'];
export type CreateWebhookRequest = components['schemas']['CreateWebhookBody'];
export type CreatedWebhook = components['schemas']['CreatedWebhook'];
export type WebhookList = components['schemas']['WebhookList'];
export type WebhookWithCounts = components['schemas']['WebhookWithCounts'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type WebhookDeliveryList = components['schemas']['WebhookDeliveryList'];
/** The body a webhook endpoint receives for a message's status change (the document's `webhooks`). */
export type MessageEvent = components['schemas']['MessageEvent'];
export type WebhookTestEvent = components['schemas']['WebhookTestEvent'];
/** Every body a webhook endpoint receives: `switch (event.type)` tells them apart. */
export type WebhookEvent = MessageEvent | WebhookTestEvent;
/** The query of a list call: `limit`, the `cursor` of the previous page (and a status where it filters). */
export type PageQuery<Operation extends keyof operations> = NonNullable<
  operations[Operation]['parameters']['query']
>;

const DEFAULT_TIMEOUT_MS = 30_000;
const TIMEOUT_RANGE: OptionRange = { unit: 'ms', min: 1, max: MAX_TIMER_MS };

/** What every call takes besides its own arguments. */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

export interface PostdateClientOptions {
  /** The API's base URL: the stack's `ApiUrl` output (https), or `npm start`'s `http://127.0.0.1:…` (plain http only to loopback). */
  readonly baseUrl: string;
  /** A Postdate API key (`pd_…`), sent as `Authorization: Bearer`. */
  readonly apiKey: string;
  /**
   * Takes a plain-http `baseUrl` on another host (a local stack in a container, `http://postdate:3000`):
   * the key then crosses that network in clear. Without it only loopback may be plain http (decision 0249).
   */
  readonly allowPlainHttp?: boolean;
  /**
   * Retries of 429, 5xx and network errors (retryPolicy.ts); `{ maxAttempts: 1 }` turns them off. A
   * field out of its range is a PostdateInputError when the client is made.
   */
  readonly retry?: Partial<RetryPolicy>;
  /**
   * The longest one attempt may take, its answer read to the end (default 30 s, API Gateway's own
   * limit; 1 ms to 2^31 − 1, as a timer holds it); a timed-out attempt is a network error, retried
   * only where that is safe.
   */
  readonly timeoutMs?: number;
  /** The fetch to use (default `globalThis.fetch`). */
  readonly fetch?: (request: Request) => Promise<Response>;
  /** For tests: the jitter's random source, the clock and the wait. */
  readonly random?: () => number;
  readonly now?: () => Date;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Makes an Idempotency-Key when the caller gives none (default `crypto.randomUUID()`). */
  readonly newIdempotencyKey?: () => string;
}

export interface EnqueueOptions {
  /**
   * The key that makes a retried enqueue safe (1–255 printable ASCII). Give one derived from your own
   * data (`order-7-confirmation`) so a retry of *your* operation is also deduplicated; without one the
   * client makes a random key, which still covers its own retries.
   */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}

export interface EnqueueResult {
  readonly message: Message;
  /** The key the message was enqueued with (given or generated), as the API reads it: `"abc"` is `abc`. */
  readonly idempotencyKey: string;
  /** True when the API answered a replay of an earlier enqueue with the same key and body. */
  readonly replayed: boolean;
}

export interface PostdateClient {
  enqueue(request: EnqueueRequest, options?: EnqueueOptions): Promise<EnqueueResult>;
  /**
   * Up to 100 enqueues in one request (DESIGN §3a), each under its own `idempotency_key`: one result
   * per item in request order, each what a single enqueue of it would have answered (`status`, and
   * `message` or `problem`). Permissive by default; `mode: 'strict'` throws the 400 and enqueues
   * nothing when one item is invalid. Retried like an enqueue: every item carries its key. An item
   * whose write failed (500/503 in the 200) is retried as an enqueue's 5xx is: the same batch is sent
   * again (the stored items replay), within `retry.maxAttempts` requests for the whole call (its 5xx
   * retries among them) with backoff, and each item keeps
   * its first answer unless that was the failure; one still failing is answered with its 5xx.
   */
  enqueueBatch(request: BatchEnqueueRequest, options?: CallOptions): Promise<BatchEnqueueResponse>;
  get(id: string, options?: { readonly signal?: AbortSignal }): Promise<Message>;
  list(query?: ListQuery, options?: { readonly signal?: AbortSignal }): Promise<MessageList>;
  reschedule(
    id: string,
    request: RescheduleRequest,
    options?: { readonly signal?: AbortSignal },
  ): Promise<Message>;
  /**
   * Cancel a `scheduled` or `retrying` message. Repeated after a 5xx or a lost answer (decision 0196),
   * as a reschedule is: a 409 with `currentStatus: 'cancelled'` may be this call's own cancel.
   */
  cancel(id: string, options?: { readonly signal?: AbortSignal }): Promise<Message>;
  /** Send a `failed`, `dead` or `unknown` message again. Retried after a 429 only. */
  retry(id: string, options?: { readonly signal?: AbortSignal }): Promise<Message>;
  raiseGroup(
    key: string,
    request: GroupVersionRequest,
    options?: { readonly signal?: AbortSignal },
  ): Promise<GroupHead>;
  /**
   * Reserves a large attachment (DESIGN §13): `{id, upload_url, expires_at}`. PUT the bytes to
   * `upload_url` before `expires_at` (an hour at most) with exactly the declared `Content-Type` and
   * size (plain `fetch`; no API key: the URL is signed), then enqueue with
   * `attachments: [{ attachment_id: id }]`.
   */
  createAttachment(request: AttachmentUploadRequest, options?: CallOptions): Promise<AttachmentUpload>;
  /** `GET /health`: `{ status: 'ok' }` when the API's function answers (liveness: it reads no table). */
  health(options?: CallOptions): Promise<{ status: 'ok' }>;
  /** `GET /openapi.json`: the OpenAPI document the API serves. */
  openapi(options?: CallOptions): Promise<Record<string, unknown>>;

  /** The tenant's suppressed addresses, a page at a time. */
  listSuppressions(query?: PageQuery<'listSuppressions'>, options?: CallOptions): Promise<SuppressionList>;
  /** Stop sending to an address (any later message to it is `suppressed`). */
  putSuppression(address: string, request: SuppressionRequest, options?: CallOptions): Promise<Suppression>;
  /** Send to an address again; the entry removed is returned. */
  deleteSuppression(address: string, options?: CallOptions): Promise<Suppression>;

  /** The tenant's templates by name, a page at a time. */
  listTemplates(query?: PageQuery<'listTemplates'>, options?: CallOptions): Promise<TemplateList>;
  /**
   * Store a new immutable version of a template (previous + 1). Retried after a 429 only: a lost
   * answer may mean the version was stored, so check `getTemplate` before storing again.
   */
  putTemplate(name: string, request: TemplateRequest, options?: CallOptions): Promise<TemplateVersion>;
  /** The latest version of a template. */
  getTemplate(name: string, options?: CallOptions): Promise<TemplateVersion>;
  /** Archive a template: no new message may name it; its versions stay readable. */
  archiveTemplate(name: string, options?: CallOptions): Promise<Template>;
  /** One version of a template. */
  getTemplateVersion(name: string, version: number, options?: CallOptions): Promise<TemplateVersion>;
  /** Render a template with data, storing and sending nothing: retried like a GET (decision 0220). */
  renderTemplate(
    name: string,
    request: TemplateRenderRequest,
    options?: CallOptions,
  ): Promise<RenderedTemplate>;

  /** A new webhook endpoint; the answer holds its signing secret, shown this once. */
  createWebhook(request: CreateWebhookRequest, options?: CallOptions): Promise<CreatedWebhook>;
  listWebhooks(options?: CallOptions): Promise<WebhookList>;
  /** One endpoint with its delivery counts. */
  getWebhook(id: string, options?: CallOptions): Promise<WebhookWithCounts>;
  deleteWebhook(id: string, options?: CallOptions): Promise<{ id: string; deleted: true }>;
  /** Send a test event to the endpoint; the delivery is returned as queued. */
  testWebhook(id: string, options?: CallOptions): Promise<WebhookDelivery>;
  /** A new signing secret for a webhook endpoint; the previous one signs beside it for 24 h. */
  rotateWebhookSecret(id: string, options?: CallOptions): Promise<RotatedWebhook>;
  /** The endpoint's deliveries (each with its attempt count and `history`), a page at a time. */
  listWebhookDeliveries(
    id: string,
    query?: PageQuery<'listWebhookDeliveries'>,
    options?: CallOptions,
  ): Promise<WebhookDeliveryList>;
  /** Deliver a failed delivery again. */
  retryWebhookDelivery(id: string, delivery: string, options?: CallOptions): Promise<WebhookDelivery>;
  /**
   * The typed openapi-fetch client underneath (with the same auth and retries), for anything else. A
   * header a call gives is judged as `enqueue`'s key is: one fetch cannot carry is a PostdateInputError.
   */
  readonly http: Client<paths>;
}

/**
 * A typed client of Postdate's HTTP API. Every call resolves to the API's document or throws a
 * PostdateProblemError (the RFC 9457 problem: `type`, `status`, `errors`) or, when no attempt got an
 * answer, a PostdateNetworkError.
 *
 * ```ts
 * const postdate = createPostdateClient({ baseUrl, apiKey });
 * const { message } = await postdate.enqueue(
 *   { from: 'ops@example.com', to: ['ada@example.com'], subject: 'Hi', text: 'Hello', delay_seconds: 60 },
 *   { idempotencyKey: 'welcome-ada' },
 * );
 * ```
 */
export function createPostdateClient(options: PostdateClientOptions): PostdateClient {
  // A key no header may carry would be quoted whole in fetch's own error.
  if (!/^[\x21-\x7e]+$/.test(options.apiKey)) {
    throw new PostdateInputError('apiKey', 'must be a Postdate key: printable ASCII, no spaces (`pd_…`)');
  }
  // A host without its scheme would otherwise fail every call with fetch's own TypeError.
  if (!isHttpUrl(options.baseUrl)) {
    throw new PostdateInputError(
      'baseUrl',
      `must be an http(s) URL, such as the stack's ApiUrl output (https://…), got "${options.baseUrl}"`,
    );
  }
  // Every request carries the key: over plain http it would cross the network in clear. The local
  // stack listens on loopback only (DESIGN §7), and a deployed API answers https only.
  if (options.allowPlainHttp !== true && !isPrivateToThisMachine(options.baseUrl)) {
    throw new PostdateInputError(
      'baseUrl',
      `must be https (the API key goes with every request); plain http only to this machine (localhost, 127.0.0.1, [::1]) unless allowPlainHttp is set, got "${options.baseUrl}"`,
    );
  }
  const policy = retryPolicyOf(options.retry);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // 0, NaN or a negative timeout ends every attempt at once, as one past a timer's limit does.
  const timeoutProblem = outOfRange(timeoutMs, TIMEOUT_RANGE);
  if (timeoutProblem !== null) throw new PostdateInputError('timeoutMs', timeoutProblem);
  const now = options.now ?? (() => new Date());
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? sleepUnlessAborted;
  const fetchOnce = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  /** The API through retryingFetch: up to `maxAttempts` requests a call, each through `fetch`. */
  const clientOf = (maxAttempts: number, fetch: (request: Request) => Promise<Response>) =>
    createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      fetch: retryingFetch({ policy: { ...policy, maxAttempts }, timeoutMs, fetch, random, now, sleep }),
    });
  const unchecked = clientOf(policy.maxAttempts, fetchOnce);
  const http = withCheckedHeaders(unchecked);
  const newKey = options.newIdempotencyKey ?? (() => globalThis.crypto.randomUUID());

  /** The document of a successful answer, or the problem of any other, thrown. */
  function documentOf<T>(
    answer: { data?: T; error?: unknown; response: Response },
    idempotencyKey: string | null = null,
  ): T {
    const { data, error, response } = answer;
    if (response.ok) {
      if (data !== undefined) return data;
      // A 2xx with no body (a proxy, a captive portal) is no answer of the API, and no problem either.
      throw new PostdateClientError(`A ${response.status} answer had no body: is baseUrl the API?`);
    }
    throw new PostdateProblemError(problemOf(response.status, response.statusText, error), {
      retryAfterMs: parseRetryAfter(response.headers.get('retry-after'), now()),
      idempotencyKey,
    });
  }

  /** The document of the call's answer ({@link documentOf}). */
  async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    return documentOf(await answerOf(call));
  }

  return {
    http,
    async enqueue(request, enqueueOptions = {}) {
      const given = enqueueOptions.idempotencyKey;
      const sent = given ?? newKey();
      // Sent as given (a quoted key stays quoted: its content may start with `"`); reported as the
      // API reads and stores it. Judged here, once, naming where a made key came from: so the call
      // goes through the client `http` wraps, which would judge the one header again.
      const idempotencyKey = headerValueOf(
        IDEMPOTENCY_KEY_HEADER,
        sent,
        given === undefined ? 'made by newIdempotencyKey' : undefined,
      );
      const answer = await answerOf(
        unchecked.POST('/v1/messages', {
          params: { header: { [IDEMPOTENCY_KEY_HEADER]: sent } },
          body: request,
          ...signalOf(enqueueOptions),
        }),
      );
      const message = documentOf(answer, idempotencyKey);
      const replayed = answer.response.headers.get('idempotent-replayed') === 'true';
      return { message, idempotencyKey, replayed };
    },
    async enqueueBatch(request, callOptions = {}) {
      // One budget of `maxAttempts` requests for the whole call, whatever sent them again (a 5xx, an
      // item's 5xx): a struggling store gets no more than an enqueue gives it (decision 0250).
      let requests = 0;
      const counted = (sent: Request) => {
        requests += 1;
        return fetchOnce(sent);
      };
      const send = () =>
        unwrap(
          withCheckedHeaders(clientOf(policy.maxAttempts - requests, counted)).POST('/v1/messages/batch', {
            body: request,
            ...signalOf(callOptions),
          }),
        );
      let answer = await send();
      while (requests < policy.maxAttempts && hasFailedItems(answer.results)) {
        await sleep(backoffDelayMs(requests - 1, policy, random), callOptions.signal ?? NEVER_ABORTED);
        let again: BatchEnqueueResponse;
        try {
          again = await send();
        } catch (error) {
          // What the first answer said stands (its failed items: maybe stored); only an abort is thrown.
          if (callOptions.signal?.aborted) throw error;
          break;
        }
        answer = { ...answer, results: mergeBatchResults(answer.results, again.results) };
      }
      return answer;
    },
    async get(id, callOptions = {}) {
      return unwrap(http.GET('/v1/messages/{id}', { params: { path: { id } }, ...signalOf(callOptions) }));
    },
    async list(query = {}, callOptions = {}) {
      return unwrap(http.GET('/v1/messages', { params: { query }, ...signalOf(callOptions) }));
    },
    async reschedule(id, request, callOptions = {}) {
      return unwrap(
        http.PATCH('/v1/messages/{id}', {
          params: { path: { id } },
          body: request,
          ...signalOf(callOptions),
        }),
      );
    },
    async cancel(id, callOptions = {}) {
      return unwrap(http.DELETE('/v1/messages/{id}', { params: { path: { id } }, ...signalOf(callOptions) }));
    },
    async retry(id, callOptions = {}) {
      return unwrap(
        http.POST('/v1/messages/{id}/retry', { params: { path: { id } }, ...signalOf(callOptions) }),
      );
    },
    async createAttachment(request, callOptions = {}) {
      return unwrap(http.POST('/v1/attachments', { body: request, ...signalOf(callOptions) }));
    },
    async health(callOptions = {}) {
      return unwrap(http.GET('/health', signalOf(callOptions)));
    },
    async openapi(callOptions = {}) {
      return unwrap(http.GET('/openapi.json', signalOf(callOptions)));
    },

    async listSuppressions(query = {}, callOptions = {}) {
      return unwrap(http.GET('/v1/suppressions', { params: { query }, ...signalOf(callOptions) }));
    },
    async putSuppression(address, request, callOptions = {}) {
      return unwrap(
        http.PUT('/v1/suppressions/{address}', {
          params: { path: { address } },
          body: request,
          ...signalOf(callOptions),
        }),
      );
    },
    async deleteSuppression(address, callOptions = {}) {
      return unwrap(
        http.DELETE('/v1/suppressions/{address}', {
          params: { path: { address } },
          ...signalOf(callOptions),
        }),
      );
    },

    async listTemplates(query = {}, callOptions = {}) {
      return unwrap(http.GET('/v1/templates', { params: { query }, ...signalOf(callOptions) }));
    },
    async putTemplate(name, request, callOptions = {}) {
      return unwrap(
        http.PUT('/v1/templates/{name}', {
          params: { path: { name } },
          body: request,
          ...signalOf(callOptions),
        }),
      );
    },
    async getTemplate(name, callOptions = {}) {
      return unwrap(
        http.GET('/v1/templates/{name}', { params: { path: { name } }, ...signalOf(callOptions) }),
      );
    },
    async archiveTemplate(name, callOptions = {}) {
      return unwrap(
        http.DELETE('/v1/templates/{name}', { params: { path: { name } }, ...signalOf(callOptions) }),
      );
    },
    async getTemplateVersion(name, version, callOptions = {}) {
      return unwrap(
        http.GET('/v1/templates/{name}/versions/{version}', {
          params: { path: { name, version: String(version) } },
          ...signalOf(callOptions),
        }),
      );
    },
    async renderTemplate(name, request, callOptions = {}) {
      return unwrap(
        http.POST('/v1/templates/{name}/render', {
          params: { path: { name } },
          body: request,
          ...signalOf(callOptions),
        }),
      );
    },

    async createWebhook(request, callOptions = {}) {
      return unwrap(http.POST('/v1/webhooks', { body: request, ...signalOf(callOptions) }));
    },
    async listWebhooks(callOptions = {}) {
      return unwrap(http.GET('/v1/webhooks', signalOf(callOptions)));
    },
    async getWebhook(id, callOptions = {}) {
      return unwrap(http.GET('/v1/webhooks/{id}', { params: { path: { id } }, ...signalOf(callOptions) }));
    },
    async deleteWebhook(id, callOptions = {}) {
      return unwrap(http.DELETE('/v1/webhooks/{id}', { params: { path: { id } }, ...signalOf(callOptions) }));
    },
    async testWebhook(id, callOptions = {}) {
      return unwrap(
        http.POST('/v1/webhooks/{id}/test', { params: { path: { id } }, ...signalOf(callOptions) }),
      );
    },
    async rotateWebhookSecret(id, callOptions = {}) {
      return unwrap(
        http.POST('/v1/webhooks/{id}/rotate-secret', {
          params: { path: { id } },
          ...signalOf(callOptions),
        }),
      );
    },
    async listWebhookDeliveries(id, query = {}, callOptions = {}) {
      return unwrap(
        http.GET('/v1/webhooks/{id}/deliveries', {
          params: { path: { id }, query },
          ...signalOf(callOptions),
        }),
      );
    },
    async retryWebhookDelivery(id, delivery, callOptions = {}) {
      return unwrap(
        http.POST('/v1/webhooks/{id}/deliveries/{delivery}/retry', {
          params: { path: { id, delivery } },
          ...signalOf(callOptions),
        }),
      );
    },
    async raiseGroup(key, request, callOptions = {}) {
      return unwrap(
        http.PUT('/v1/groups/{key}', {
          params: { path: { key } },
          body: request,
          ...signalOf(callOptions),
        }),
      );
    },
  };
}

/**
 * Every item of a paged list, a page fetched only when the one before is used up: `fetchPage` is
 * called with no cursor first, then with each page's `next_cursor` until it is null. A failed page
 * throws out of the loop, after the client's own retries.
 *
 * ```ts
 * for await (const message of paginate((cursor) => postdate.list({ status: 'failed', cursor }))) { … }
 * ```
 */
export async function* paginate<Item>(
  fetchPage: (
    cursor: string | undefined,
  ) => Promise<{ readonly items: readonly Item[]; readonly next_cursor: string | null }>,
): AsyncGenerator<Item, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.items;
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
}

/**
 * The answer of a call. A 2xx whose body is no JSON is no answer of the API (a `baseUrl` that is a
 * web site, a captive portal): thrown typed, with the parse error as its cause.
 */
async function answerOf<Answer>(call: Promise<Answer>): Promise<Answer> {
  try {
    return await call;
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new PostdateClientError('A 2xx answer was not JSON: is baseUrl the API?', { cause: error });
  }
}

/** A header name fetch takes (RFC 9110's token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The one rule for a header the caller gives, `enqueue`'s key or any header of {@link
 * withCheckedHeaders} (decisions 0222, 0225, 0229): judged before anything is sent, so that a value
 * fetch cannot carry is never its bare TypeError, and a key the API refuses never a 400 for a request
 * that need not go out. fetch sends a value without its leading and trailing whitespace (tab, CR, LF,
 * space: Fetch's "normalize"); what is left may hold no NUL, CR or LF and nothing beyond Latin-1. An
 * Idempotency-Key must moreover be printable ASCII (so the API reads it as given) and a key by the
 * API's own reading (DESIGN §3: `"abc"` is the key `abc`). Returns the value as the API reads it.
 * @throws PostdateInputError naming the header (and `source`, where the value came from).
 */
function headerValueOf(name: string, value: string, source?: string): string {
  if (!HEADER_NAME.test(name)) {
    throw new PostdateInputError(name, "is no header name: letters, digits and !#$%&'*+-.^_`|~", source);
  }
  const sent = value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (name.toLowerCase() === IDEMPOTENCY_KEY_HEADER.toLowerCase()) {
    const key = /^[\x20-\x7E]*$/.test(sent) ? idempotencyKeyOf(sent) : null;
    if (key === null) {
      throw new PostdateInputError(
        IDEMPOTENCY_KEY_HEADER,
        'must be 1–255 printable ASCII characters',
        source,
      );
    }
    return key;
  }
  if (!/^[^\0\r\n\u0100-\uffff]*$/.test(sent)) {
    throw new PostdateInputError(
      name,
      'must be a value a header can carry: no NUL, CR or LF, nothing beyond Latin-1',
      source,
    );
  }
  return sent;
}

/** The header options of an openapi-fetch call: its `headers` and `params.header`. */
interface CallHeaders {
  readonly headers?: unknown;
  readonly params?: { readonly header?: unknown };
}

/**
 * The openapi-fetch client with every header a call gives (`headers`, `params.header`) judged by
 * {@link headerValueOf} first: openapi-fetch merges them into a `Headers` before any fetch or
 * middleware of ours runs, where a bad one is fetch's bare TypeError. A `Headers` given is made, so
 * already good; `null` and `undefined` unset a header. A list of pairs (fetch's `HeadersInit`, which
 * openapi-fetch's types take) is judged pair by pair and handed on as a `Headers`: openapi-fetch reads
 * it as an object, and would send headers named `0`, `1`, … (decision 0233).
 */
function withCheckedHeaders(client: Client<paths>): Client<paths> {
  type Call = (...args: unknown[]) => Promise<unknown>;
  // The init is the argument after the URL: `GET(url, init)`, `request(method, url, init)`.
  const checked =
    (call: Call, initAt: number): Call =>
    async (...args) => {
      const init = args[initAt];
      if (typeof init === 'object' && init !== null) args[initAt] = checkedInit(init);
      return call(...args);
    };
  const methods = (['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as const).map(
    (method) => [method, checked(client[method] as unknown as Call, 1)],
  );
  return {
    ...client,
    ...Object.fromEntries(methods),
    request: checked(client.request as unknown as Call, 2),
  };
}

/** A call's init with its headers judged (each header given, or a list of pairs made a `Headers`). */
function checkedInit(init: CallHeaders): CallHeaders {
  const { headers, params } = init;
  return {
    ...init,
    ...(headers === undefined ? {} : { headers: checkedHeaders(headers) }),
    ...(params?.header === undefined ? {} : { params: { ...params, header: checkedHeaders(params.header) } }),
  };
}

function checkedHeaders(given: unknown): unknown {
  if (typeof given !== 'object' || given === null || given instanceof Headers) return given;
  if (Array.isArray(given)) {
    return new Headers(
      given.map((pair: unknown): [string, string] => {
        if (!Array.isArray(pair) || pair.length !== 2) {
          throw new PostdateInputError(
            'headers',
            'must be an object, a Headers or a list of [name, value] pairs',
          );
        }
        const [name, value] = pair.map(String) as [string, string];
        headerValueOf(name, value);
        return [name, value];
      }),
    );
  }
  for (const [name, value] of Object.entries(given)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== null && one !== undefined) headerValueOf(name, String(one));
    }
  }
  return given;
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'https:' || protocol === 'http:';
}

/** An https URL, or an http one whose host is loopback: what may carry the key. */
function isPrivateToThisMachine(value: string): boolean {
  const { protocol, hostname } = new URL(value);
  if (protocol === 'https:') return true;
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

function signalOf(options: { readonly signal?: AbortSignal }): { signal?: AbortSignal } {
  return options.signal === undefined ? {} : { signal: options.signal };
}

/** The signal of a call given none: a batch's wait between sends then ends only by its time. */
const NEVER_ABORTED = new AbortController().signal;

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done(): void {
      signal.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted(): void {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener('abort', aborted, { once: true });
  });
}
