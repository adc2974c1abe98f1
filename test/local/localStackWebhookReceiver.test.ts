/**
 * Webhooks from the receiver's side (DESIGN §11, §14; decision 0243): the whole local stack — api,
 * relay, sender, event producer and delivery function — POSTing to a real HTTP server on 127.0.0.1,
 * which checks each request as a team receiving Postdate's webhooks would: over the body's raw bytes,
 * with the reference verifier (`standardwebhooks`) and with the Standard Webhooks spec's own check
 * written out here (HMAC-SHA256 of `id.timestamp.body`, base64, `v1,`, space-separated), never with
 * Postdate's signer; the body against the served OpenAPI document's `webhooks` entry and against the
 * message's GET; retries, a rotation, a filter, and a test-side message's events in their order
 * (docs/api-resources.md: "Events are not ordered; order by `created_at`").
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { SIMULATOR_DOMAIN } from '../../lambdas/core/testSide.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { createLocalStackTestKey } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { webhookRequestChecker } from '../support/openApiResponses.js';
import { type Answer, type Received, startReceiver } from '../webhooks/webhookHarness.js';

const LIVE_KEY = 'pd_webhook-receiver-live-01';
const TEST_KEY = 'pd_test_webhook-receiver-01';

/** The three Standard Webhooks headers of a request, as a receiver reads them. */
const signedHeaders = (request: Received) => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});

/** The reference implementation's check; false where it throws. */
function referenceVerifies(secret: string, request: Received): boolean {
  try {
    new Webhook(secret).verify(request.raw, signedHeaders(request));
    return true;
  } catch {
    return false;
  }
}

/**
 * The spec's check, written from the spec: the secret is the base64 after `whsec_`; the signed content
 * is `{webhook-id}.{webhook-timestamp}.{body bytes}`; a signature is `v1,` + base64 of its
 * HMAC-SHA256; the header lists several, space-separated, any one of which may match; the timestamp
 * is within 5 minutes of the receiver's clock.
 */
function specVerifies(secret: string, request: Received): boolean {
  const headers = signedHeaders(request);
  const timestamp = Number(headers['webhook-timestamp']);
  if (!Number.isSafeInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key)
    .update(
      Buffer.concat([Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`), request.raw]),
    )
    .digest();
  return headers['webhook-signature'].split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || signature === undefined) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const verifiesWith = (secret: string, request: Received): boolean =>
  referenceVerifies(secret, request) && specVerifies(secret, request);

/** The parsed event of a request. */
// biome-ignore lint/suspicious/noExplicitAny: a receiver reads the event by its documented shape
const eventOf = (request: Received): Record<string, any> => JSON.parse(request.raw.toString('utf8'));

describe('webhooks as a receiver checks them (DESIGN §11)', () => {
  let stack: LocalStack;
  let hook: Awaited<ReturnType<typeof startReceiver>>;
  /** How each path answers the n-th POST (from 1) of one webhook-id; absent: 200. */
  const policies = new Map<string, (request: Received, attempt: number) => Answer>();
  const attemptsOf = new Map<string, number>();

  const call = async (key: string, method: string, path: string, body?: unknown, extra = {}) => {
    const response = await fetch(`${stack.apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the test reads answers by their documented shape
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };
  const subscribe = async (path: string, extra: Record<string, unknown> = {}, key = LIVE_KEY) => {
    const created = await call(key, 'POST', '/v1/webhooks', { url: hook.url(path), ...extra });
    expect(created.status).toBe(201);
    return { id: String(created.json.id), secret: String(created.json.secret) };
  };
  const receivedAt = (path: string) => hook.received.filter((request) => request.path === path);
  const deliveries = async (endpointId: string, key = LIVE_KEY) =>
    (await call(key, 'GET', `/v1/webhooks/${endpointId}/deliveries`)).json.items as {
      event_id: string;
      status: string;
      history: { status_code: number | null }[];
    }[];

  beforeAll(async () => {
    hook = await startReceiver((_, request) => {
      const id = `${request.path} ${String(request.headers['webhook-id'])}`;
      const attempt = (attemptsOf.get(id) ?? 0) + 1;
      attemptsOf.set(id, attempt);
      return policies.get(request.path)?.(request, attempt) ?? 200;
    });
    stack = await startLocalStack({
      // A short message backoff, so that the simulator's `defer@` (451, then accepted) ends soon.
      config: loadConfig({ POSTDATE_API_KEY: LIVE_KEY, POSTDATE_RETRY_BASE_SECONDS: '1' }, 'local'),
      ports: ANY_FREE_PORTS,
      quiet: true,
      // Retries after 0–0.5 s, 0–1 s, … instead of 0–5 s, 0–10 s: the two retry tests prove what a
      // retry carries (its id, body, signatures), not how long the backoff is (decision 0273).
      webhookRetryBaseMs: 500,
    });
    await createLocalStackTestKey(stack, TEST_KEY);
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await hook?.close();
  });

  it('signs the very bytes it sends: non-ASCII arrives unnormalised, each event verifies by the spec and matches its OpenAPI entry and the GET', async () => {
    const all = await subscribe('/all');
    const sentOnly = await subscribe('/sent-only', { events: ['message.sent'] });
    // Precomposed and decomposed é, CJK, an emoji (4 bytes), right-to-left text, U+2028, a quote and a
    // backslash: any re-serialisation or normalisation between signing and sending breaks a signature.
    const metadata = {
      note: 'Grüße — café / cafe\u0301 — 日本語 — 🎉 — עברית — \u2028 — "quoted" \\ end',
      filler: 'ü'.repeat(400),
    };
    const enqueued = await call(
      LIVE_KEY,
      'POST',
      '/v1/messages',
      { to: ['ada@example.com'], subject: 'Grüße', text: 'Hallo', tags: { kind: 'grüße-🎉' }, metadata },
      { 'idempotency-key': 'receiver-bytes-1' },
    );
    expect(enqueued.status).toBe(202);
    const id = String(enqueued.json.id);
    await eventually(
      'both events delivered to /all and message.sent to /sent-only',
      async () =>
        receivedAt('/sent-only').length >= 1 &&
        (await deliveries(all.id)).filter((delivery) => delivery.status === 'delivered').length >= 2,
      { withinMs: 60_000, everyMs: 200 },
    );
    const document = (await (await fetch(`${stack.apiUrl}/openapi.json`)).json()) as object;
    const checkAgainstDocument = webhookRequestChecker(document);
    const requests = [...receivedAt('/all'), ...receivedAt('/sent-only')];
    for (const request of requests) {
      const secret = request.path === '/all' ? all.secret : sentOnly.secret;
      expect(verifiesWith(secret, request), request.path).toBe(true);
      expect(verifiesWith(request.path === '/all' ? sentOnly.secret : all.secret, request)).toBe(false);
      expect(request.headers['content-type']).toBe('application/json');
      expect(Number(request.headers['content-length'])).toBe(request.raw.length);
      expect(checkAgainstDocument(request)).toEqual([]);
      const event = eventOf(request);
      expect(event.data.metadata).toEqual(metadata);
      expect(event.data.tags).toEqual({ kind: 'grüße-🎉' });
      // The body is the event's JSON, minified, byte for byte (UTF-8, nothing escaped that need not be).
      expect(request.raw.equals(Buffer.from(JSON.stringify(event), 'utf8'))).toBe(true);
    }
    expect(
      receivedAt('/all')
        .map((request) => eventOf(request).type)
        .sort(),
    ).toEqual(['message.scheduled', 'message.sent']);
    expect(receivedAt('/sent-only').map((request) => eventOf(request).type)).toEqual(['message.sent']);

    // `data` is the message as its GET shows it after the change, without history, plus previous_status.
    const sent = eventOf(
      receivedAt('/all').find((request) => eventOf(request).type === 'message.sent') as Received,
    );
    const { history: _history, ...got } = (await call(LIVE_KEY, 'GET', `/v1/messages/${id}`)).json;
    const { previous_status, ...data } = sent.data;
    expect(data).toEqual(got);
    // The old image's status: `sending` for every sender outcome (decision 0036), an event of none.
    expect(previous_status).toBe('sending');
    expect(sent).toMatchObject({ tenant: 'local', created_at: got.updated_at });
    expect(signedHeaders(receivedAt('/sent-only')[0] as Received)['webhook-id']).toBe(sent.id);
  }, 90_000);

  it('sends the largest event a message can make (10 attachments of 255-character names, full labels) whole and verifiable', async () => {
    const endpoint = await subscribe('/largest');
    const names = Array.from({ length: 10 }, (_, index) => `${'請求書'.repeat(83)}${index}.pdf`);
    // 2 KiB of tags and metadata as JSON, the limit, most of it three-byte characters.
    const metadata = { note: '日'.repeat(330), more: '本'.repeat(330) };
    const enqueued = await call(
      LIVE_KEY,
      'POST',
      '/v1/messages',
      {
        to: ['ada@example.com'],
        subject: 'Invoices',
        text: 'Attached.',
        send_at: new Date(Date.now() + 3_600_000).toISOString(),
        group: { key: 'g'.repeat(200), version: 1 },
        metadata,
        attachments: names.map((filename) => ({
          filename,
          content: Buffer.from('%PDF-1.4').toString('base64'),
        })),
      },
      { 'idempotency-key': 'receiver-largest-1' },
    );
    expect(enqueued.status, JSON.stringify(enqueued.json)).toBe(202);
    await eventually(
      'its message.scheduled delivered',
      async () => (await deliveries(endpoint.id))[0]?.status === 'delivered',
      { withinMs: 60_000, everyMs: 200 },
    );
    const [request] = receivedAt('/largest') as [Received];
    expect(request.raw.length).toBeGreaterThan(11_000);
    expect(verifiesWith(endpoint.secret, request)).toBe(true);
    const { history: _history, ...got } = (await call(LIVE_KEY, 'GET', `/v1/messages/${enqueued.json.id}`))
      .json;
    const { previous_status: _previous, ...data } = eventOf(request).data;
    expect(data).toEqual(got);
    expect(data.attachments.map((attachment: { filename: string }) => attachment.filename)).toEqual(names);
  }, 90_000);

  it('retries a 500, a 410 and a 302 with the same webhook-id and body, each attempt freshly timestamped and verifiable', async () => {
    const answers: Record<string, Answer> = { '/flaky': 500, '/gone': 410, '/moved': 302 };
    const endpoints: Record<string, { id: string; secret: string }> = {};
    for (const [path, first] of Object.entries(answers)) {
      policies.set(path, (_, attempt) => (attempt === 1 ? first : 200));
      endpoints[path] = await subscribe(path);
      expect((await call(LIVE_KEY, 'POST', `/v1/webhooks/${endpoints[path]?.id}/test`)).status).toBe(202);
    }
    await eventually(
      'each test event delivered on its second attempt',
      async () => {
        for (const { id } of Object.values(endpoints)) {
          const [delivery] = await deliveries(id);
          if (delivery?.status !== 'delivered') return false;
        }
        return true;
      },
      { withinMs: 60_000, everyMs: 250 },
    );
    for (const [path, first] of Object.entries(answers)) {
      const endpoint = endpoints[path] as { id: string; secret: string };
      const posts = receivedAt(path);
      expect(posts, path).toHaveLength(2);
      const [one, two] = posts as [Received, Received];
      expect(signedHeaders(two)['webhook-id']).toBe(signedHeaders(one)['webhook-id']);
      expect(two.raw.equals(one.raw)).toBe(true);
      expect(Number(signedHeaders(two)['webhook-timestamp'])).toBeGreaterThanOrEqual(
        Number(signedHeaders(one)['webhook-timestamp']),
      );
      for (const post of posts) expect(verifiesWith(endpoint.secret, post)).toBe(true);
      const [delivery] = await deliveries(endpoint.id);
      expect(delivery?.event_id).toBe(signedHeaders(one)['webhook-id']);
      expect(delivery?.history.map((attempt) => attempt.status_code)).toEqual([first, 200]);
    }
  }, 90_000);

  it('during a rotation every delivery verifies with the old secret, and a retry of an event sent before it verifies with the new one too', async () => {
    const endpoint = await subscribe('/rotating');
    let rotated: string | undefined;
    // Before the rotation every POST fails; after it, only one the new secret verifies is taken: so the
    // event is delivered by a retry that carries the new secret's signature.
    policies.set('/rotating', (request) => (rotated && verifiesWith(rotated, request) ? 200 : 500));
    expect((await call(LIVE_KEY, 'POST', `/v1/webhooks/${endpoint.id}/test`)).status).toBe(202);
    await eventually('the first attempt', async () => receivedAt('/rotating').length >= 1, {
      withinMs: 30_000,
    });
    const rotation = await call(LIVE_KEY, 'POST', `/v1/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotation.status).toBe(200);
    rotated = String(rotation.json.secret);
    expect(rotated).not.toBe(endpoint.secret);
    await eventually(
      'the event delivered by a retry',
      async () => (await deliveries(endpoint.id))[0]?.status === 'delivered',
      { withinMs: 90_000, everyMs: 250 },
    );
    const posts = receivedAt('/rotating');
    expect(new Set(posts.map((post) => signedHeaders(post)['webhook-id'])).size).toBe(1);
    for (const post of posts) expect(verifiesWith(endpoint.secret, post)).toBe(true);
    const last = posts.at(-1) as Received;
    expect(verifiesWith(rotated, last)).toBe(true);
    expect(signedHeaders(last)['webhook-signature'].split(' ')).toHaveLength(2);

    // A new event after the rotation: both secrets verify it.
    expect((await call(LIVE_KEY, 'POST', `/v1/webhooks/${endpoint.id}/test`)).status).toBe(202);
    await eventually(
      'the second test event delivered',
      async () =>
        (await deliveries(endpoint.id)).filter((delivery) => delivery.status === 'delivered').length === 2,
      { withinMs: 60_000, everyMs: 250 },
    );
    const second = receivedAt('/rotating').at(-1) as Received;
    expect(verifiesWith(rotated, second) && verifiesWith(endpoint.secret, second)).toBe(true);
  }, 150_000);

  it("waits before each retry no longer than the stack's webhookRetryBaseMs allows (500 ms · 2^(n−1)), not WEBHOOK_BACKOFF's 5 s", async () => {
    // What each failed attempt decided, read from its pending delivery: the next attempt's time less the
    // attempt's end (its `at` and `duration_ms`). A stack that dropped the option would draw each delay
    // from 0–5 s · 2^(n−1): within this bound once in ten, all of three once in a thousand.
    policies.set('/always-failing', () => 500);
    const endpoint = await subscribe('/always-failing');
    expect((await call(LIVE_KEY, 'POST', `/v1/webhooks/${endpoint.id}/test`)).status).toBe(202);
    const decided = new Map<number, { delayMs: number; boundMs: number }>();
    try {
      await eventually(
        'three retries decided',
        async () => {
          const [delivery] = (await deliveries(endpoint.id)) as unknown as {
            status: string;
            next_attempt_at: string | null;
            history: { at: string; duration_ms: number }[];
          }[];
          const last = delivery?.history.at(-1);
          if (delivery?.status === 'pending' && delivery.next_attempt_at !== null && last !== undefined) {
            const n = delivery.history.length;
            const endedAt = Date.parse(last.at) + last.duration_ms;
            decided.set(n, {
              delayMs: Date.parse(delivery.next_attempt_at) - endedAt,
              boundMs: 500 * 2 ** (n - 1),
            });
          }
          return decided.size >= 3;
        },
        { withinMs: 60_000, everyMs: 50 },
      );
    } finally {
      await call(LIVE_KEY, 'DELETE', `/v1/webhooks/${endpoint.id}`);
    }
    expect([...decided].filter(([, { delayMs, boundMs }]) => delayMs < 0 || delayMs > boundMs)).toEqual([]);
  }, 90_000);

  it("gives a test-side message's events (scheduled, retrying, sent) to the test side's endpoint only, in order by created_at", async () => {
    const testSide = await subscribe('/test-side', {}, TEST_KEY);
    const enqueued = await call(
      TEST_KEY,
      'POST',
      '/v1/messages',
      { to: [`defer@${SIMULATOR_DOMAIN}`], subject: 'Later', text: 'Hello' },
      { 'idempotency-key': 'receiver-order-1' },
    );
    expect(enqueued.status).toBe(202);
    const id = String(enqueued.json.id);
    const ofMessage = (path: string) =>
      receivedAt(path)
        .map(eventOf)
        .filter((event) => event.data?.id === id);
    await eventually(
      'the three events delivered',
      async () =>
        ofMessage('/test-side').length >= 3 &&
        (await deliveries(testSide.id, TEST_KEY)).filter((delivery) => delivery.status === 'delivered')
          .length >= 3,
      { withinMs: 60_000, everyMs: 250 },
    );
    for (const request of receivedAt('/test-side')) expect(verifiesWith(testSide.secret, request)).toBe(true);
    const events = ofMessage('/test-side').sort((a, b) => a.created_at.localeCompare(b.created_at));
    expect(events.map((event) => event.type)).toEqual([
      'message.scheduled',
      'message.retrying',
      'message.sent',
    ]);
    expect(events.map((event) => event.data.previous_status)).toEqual([null, 'sending', 'sending']);
    for (const [index, event] of events.entries()) {
      expect(event).toMatchObject({ tenant: 'local', data: { test: true } });
      if (index > 0) expect(event.created_at > events[index - 1]?.created_at).toBe(true);
    }
    expect(new Set(events.map((event) => event.id)).size).toBe(3);
    for (const path of ['/all', '/sent-only', '/largest', '/flaky', '/gone', '/moved', '/rotating'])
      expect(ofMessage(path), path).toEqual([]);
  }, 90_000);
});
