import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

interface HostileCase {
  readonly name: string;
  readonly event: () => ApiEvent;
  readonly status: number;
  /** The field the problem must name (in `errors[].field`), or null when the problem is about the route. */
  readonly field: string | null;
}

const enqueue =
  (overrides: Record<string, unknown>, key = 'hostile') =>
  () =>
    enqueueEvent(validBody(overrides), { key });
const without = (field: string) => () => {
  const body = validBody();
  delete body[field];
  return enqueueEvent(body, { key: 'hostile' });
};
const fiftyOne = Array.from({ length: 51 }, (_, i) => `r${i}@example.com`);

/**
 * Every case must answer problem+json, name its field, and write nothing. Each one is an attack or a
 * mistake a real client makes.
 */
const CASES: readonly HostileCase[] = [
  // Transport: media type, size, encoding, JSON.
  {
    name: 'text/plain body',
    event: () => enqueueEvent('{}', { headers: { 'content-type': 'text/plain' } }),
    status: 415,
    field: 'Content-Type',
  },
  {
    name: 'no Content-Type',
    event: () => ({ ...enqueueEvent(validBody()), headers: { 'idempotency-key': 'k' } }),
    status: 415,
    field: 'Content-Type',
  },
  {
    name: 'form-encoded body',
    event: () => enqueueEvent('to=a', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    status: 415,
    field: 'Content-Type',
  },
  {
    name: 'JSON in a non-UTF-8 charset',
    event: () =>
      enqueueEvent(validBody(), { headers: { 'content-type': 'application/json; charset=latin1' } }),
    status: 415,
    field: 'Content-Type',
  },
  {
    name: 'body over 256 KiB',
    event: enqueue({ text: 'x'.repeat(256 * 1024) }),
    status: 413,
    field: 'body',
  },
  {
    name: 'base64 body over 256 KiB once decoded',
    event: () => enqueueEvent(validBody({ html: 'y'.repeat(300 * 1024) }), { base64: true }),
    status: 413,
    field: 'body',
  },
  {
    name: 'truncated JSON',
    event: () => enqueueEvent('{"to": ["a@example.com"', {}),
    status: 400,
    field: 'body',
  },
  { name: 'empty body', event: () => enqueueEvent('', {}), status: 400, field: 'body' },
  {
    name: 'invalid UTF-8 bytes',
    event: () => ({
      ...enqueueEvent('x'),
      body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64'),
      isBase64Encoded: true,
    }),
    status: 400,
    field: 'body',
  },
  {
    name: 'a JSON array instead of an object',
    event: () => enqueueEvent([validBody()]),
    status: 400,
    field: 'body',
  },
  // Idempotency-Key.
  {
    name: 'Idempotency-Key over 255 characters',
    event: enqueue({}, 'k'.repeat(256)),
    status: 400,
    field: 'Idempotency-Key',
  },
  {
    name: 'Idempotency-Key with a non-ASCII character',
    event: enqueue({}, 'clé'),
    status: 400,
    field: 'Idempotency-Key',
  },
  {
    name: 'Idempotency-Key with a broken quote',
    event: enqueue({}, '"abc'),
    status: 400,
    field: 'Idempotency-Key',
  },
  // Recipients.
  { name: 'no recipient at all', event: enqueue({ to: [], cc: [], bcc: [] }), status: 400, field: '/to' },
  {
    name: 'to is a string, not a list',
    event: enqueue({ to: 'ada@example.com' }),
    status: 400,
    field: '/to',
  },
  { name: '51 recipients in to', event: enqueue({ to: fiftyOne }), status: 400, field: '/to' },
  {
    name: '51 recipients across to, cc and bcc',
    event: enqueue({ to: fiftyOne.slice(0, 20), cc: fiftyOne.slice(20, 40), bcc: fiftyOne.slice(40) }),
    status: 400,
    field: '/to',
  },
  { name: 'an address without @', event: enqueue({ to: ['ada.example.com'] }), status: 400, field: '/to/0' },
  {
    name: 'Bcc injection through a recipient (LF)',
    event: enqueue({ to: ['a@example.com', 'b@example.com\nBcc: victim@evil.test'] }),
    status: 400,
    field: '/to/1',
  },
  {
    name: 'injection through cc (CRLF)',
    event: enqueue({ cc: ['c@example.com\r\nX-Evil: 1'] }),
    status: 400,
    field: '/cc/0',
  },
  {
    name: 'injection through bcc (CR)',
    event: enqueue({ bcc: ['d@example.com\rX: 1'] }),
    status: 400,
    field: '/bcc/0',
  },
  {
    name: 'injection through a display name',
    event: enqueue({ to: ['"Ada\r\nBcc: x@evil.test" <ada@example.com>'] }),
    status: 400,
    field: '/to/0',
  },
  {
    name: 'two addresses in one entry',
    event: enqueue({ to: ['a@example.com, b@example.com'] }),
    status: 400,
    field: '/to/0',
  },
  // Sender.
  {
    name: 'from outside POSTDATE_ALLOWED_FROM',
    event: enqueue({ from: 'ceo@evil.test' }),
    status: 400,
    field: '/from',
  },
  {
    name: 'injection through from',
    event: enqueue({ from: 'ops@example.com\nBcc: x@evil.test' }),
    status: 400,
    field: '/from',
  },
  {
    name: 'injection through reply_to',
    event: enqueue({ reply_to: 'r@example.com\r\n' }),
    status: 400,
    field: '/reply_to',
  },
  // Subject and content.
  {
    name: 'injection through the subject',
    event: enqueue({ subject: 'Hi\r\nBcc: x@evil.test' }),
    status: 400,
    field: '/subject',
  },
  {
    name: 'a NUL in the subject',
    event: enqueue({ subject: 'Hi\u0000there' }),
    status: 400,
    field: '/subject',
  },
  { name: 'no subject', event: without('subject'), status: 400, field: '/subject' },
  { name: 'neither text nor html', event: enqueue({ text: null, html: '' }), status: 400, field: '/text' },
  // Headers.
  {
    name: 'injection through a header value',
    event: enqueue({ headers: { 'X-Campaign': '42\r\nBcc: x@evil.test' } }),
    status: 400,
    field: '/headers/X-Campaign',
  },
  {
    name: 'injection through a header name',
    event: enqueue({ headers: { 'X-A\r\nBcc': 'x@evil.test' } }),
    status: 400,
    field: '/headers/X-A\r\nBcc',
  },
  {
    name: 'a header name with a colon',
    event: enqueue({ headers: { 'X-A:B': '1' } }),
    status: 400,
    field: '/headers/X-A:B',
  },
  {
    name: 'a reserved Bcc header',
    event: enqueue({ headers: { bcc: 'x@evil.test' } }),
    status: 400,
    field: '/headers/bcc',
  },
  {
    name: 'a reserved Message-ID header',
    event: enqueue({ headers: { 'Message-ID': '<x@y>' } }),
    status: 400,
    field: '/headers/Message-ID',
  },
  {
    name: 'a Content-* header',
    event: enqueue({ headers: { 'Content-Transfer-Encoding': 'base64' } }),
    status: 400,
    field: '/headers/Content-Transfer-Encoding',
  },
  // Headers that steer the relay (a configuration set belongs to the key, set by an operator).
  {
    name: 'an SES configuration set header',
    event: enqueue({ headers: { 'X-SES-CONFIGURATION-SET': 'other-tenant' } }),
    status: 400,
    field: '/headers/X-SES-CONFIGURATION-SET',
  },
  {
    name: 'an SES source ARN header',
    event: enqueue({ headers: { 'x-ses-source-arn': 'arn:aws:ses:eu-west-1:111122223333:identity/x' } }),
    status: 400,
    field: '/headers/x-ses-source-arn',
  },
  {
    name: "SendGrid's X-SMTPAPI header",
    event: enqueue({ headers: { 'X-SMTPAPI': '{"to":["x@evil.test"]}' } }),
    status: 400,
    field: '/headers/X-SMTPAPI',
  },
  {
    name: "Postmark's message stream header",
    event: enqueue({ headers: { 'X-PM-Message-Stream': 'broadcast' } }),
    status: 400,
    field: '/headers/X-PM-Message-Stream',
  },
  {
    name: 'a __proto__ header',
    event: () =>
      enqueueEvent(`{"to":["a@example.com"],"subject":"s","text":"t","headers":{"__proto__":"x"}}`, {
        key: 'p',
      }),
    status: 400,
    field: '/headers/__proto__',
  },
  // Time.
  {
    name: 'send_at without a zone',
    event: enqueue({ send_at: '2026-12-01T09:00:00' }),
    status: 400,
    field: '/send_at',
  },
  {
    name: 'send_at on 30 February',
    event: enqueue({ send_at: '2027-02-30T09:00:00Z' }),
    status: 400,
    field: '/send_at',
  },
  {
    name: 'send_at beyond the horizon',
    event: enqueue({ send_at: '2028-06-01T00:00:00Z' }),
    status: 400,
    field: '/send_at',
  },
  {
    name: 'delay_seconds beyond the horizon',
    event: enqueue({ delay_seconds: 401 * 86_400 }),
    status: 400,
    field: '/delay_seconds',
  },
  {
    name: 'negative delay_seconds',
    event: enqueue({ delay_seconds: -1 }),
    status: 400,
    field: '/delay_seconds',
  },
  {
    name: 'fractional delay_seconds',
    event: enqueue({ delay_seconds: 1.5 }),
    status: 400,
    field: '/delay_seconds',
  },
  {
    name: 'both send_at and delay_seconds',
    event: enqueue({ send_at: '2026-12-01T09:00:00Z', delay_seconds: 60 }),
    status: 400,
    field: '/delay_seconds',
  },
  {
    name: 'not_after before send_at',
    event: enqueue({ send_at: '2026-12-01T09:00:00Z', not_after: '2026-12-01T08:00:00Z' }),
    status: 400,
    field: '/not_after',
  },
  // Group, policy, labels, unknown fields.
  {
    name: 'a negative group version',
    event: enqueue({ group: { key: 'g', version: -1 } }),
    status: 400,
    field: '/group/version',
  },
  {
    name: 'a group key with LF',
    event: enqueue({ group: { key: 'g\nx', version: 1 } }),
    status: 400,
    field: '/group/key',
  },
  {
    name: 'a group key over 200 characters',
    event: enqueue({ group: { key: 'g'.repeat(201), version: 1 } }),
    status: 400,
    field: '/group/key',
  },
  {
    name: 'an unknown on_ambiguous policy',
    event: enqueue({ on_ambiguous: 'pray' }),
    status: 400,
    field: '/on_ambiguous',
  },
  {
    name: 'a tag value with CRLF',
    event: enqueue({ tags: { kind: 'a\r\nb' } }),
    status: 400,
    field: '/tags/kind',
  },
  {
    name: 'a non-string metadata value',
    event: enqueue({ metadata: { n: 1 } }),
    status: 400,
    field: '/metadata/n',
  },
  {
    name: 'an unknown top-level field',
    event: enqueue({ priority: 'high' }),
    status: 400,
    field: '/priority',
  },
  {
    name: 'a tenant smuggled in the body',
    event: enqueue({ tenant: 'globex' }),
    status: 400,
    field: '/tenant',
  },
  // Other routes.
  {
    name: 'reschedule with send_at beyond the horizon',
    event: () =>
      apiEvent({
        method: 'PATCH',
        path: '/v1/messages/01JDQ1T8Z6J5V1Y5M6Z8K4W2QX',
        body: { send_at: '2030-01-01T00:00:00Z' },
      }),
    status: 400,
    field: '/send_at',
  },
  {
    name: 'group version as a string',
    event: () => apiEvent({ method: 'PUT', path: '/v1/groups/g1', body: { version: '7' } }),
    status: 400,
    field: '/version',
  },
  {
    name: 'list with an unknown status',
    event: () => apiEvent({ method: 'GET', path: '/v1/messages', query: { status: 'lost' } }),
    status: 400,
    field: 'status',
  },
  {
    name: 'list with limit 0',
    event: () => apiEvent({ method: 'GET', path: '/v1/messages', query: { limit: '0' } }),
    status: 400,
    field: 'limit',
  },
  {
    name: 'list with a forged cursor',
    event: () => apiEvent({ method: 'GET', path: '/v1/messages', query: { cursor: 'eyJ2IjoxfQ' } }),
    status: 400,
    field: 'cursor',
  },
  {
    name: 'an unknown route',
    event: () => apiEvent({ method: 'GET', path: '/v1/nothing' }),
    status: 404,
    field: null,
  },
  {
    name: 'a wrong method',
    event: () => apiEvent({ method: 'PUT', path: '/v1/messages', body: {} }),
    status: 405,
    field: null,
  },
];

describe('hostile input: problem+json, the field named, nothing written', () => {
  let api: Harness;
  let itemsBefore: number;
  beforeAll(async () => {
    api = await apiHarness();
    // Something to protect: one message already stored.
    await api.call(enqueueEvent(validBody(), { key: 'existing' }));
    itemsBefore = (await api.scanAll()).length;
  });

  it('has at least 30 distinct cases', () => {
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  it.each(CASES)('$name → $status', async ({ event, status, field }) => {
    const response = await api.call(event());
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ status, type: expect.stringMatching(/^urn:postdate:problem:/) });
    expect(typeof response.json.title).toBe('string');
    expect(typeof response.json.detail).toBe('string');
    if (field !== null) {
      const fields = (response.json.errors as { field: string }[] | undefined)?.map((error) => error.field);
      expect(fields).toContain(field);
    }
    expect(await api.scanAll()).toHaveLength(itemsBefore);
  });

  it('answers 405 with an Allow header naming the methods the path accepts', async () => {
    const response = await api.call(apiEvent({ method: 'DELETE', path: '/v1/messages' }));
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe('POST, GET');
  });

  it('says that a relay-control header controls the relay, in a 400 validation problem', async () => {
    const response = await api.call(enqueue({ headers: { 'X-Mailgun-Variables': '{}' } }, 'relay-control')());
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({
      type: 'urn:postdate:problem:validation',
      status: 400,
      errors: [
        { field: '/headers/X-Mailgun-Variables', message: 'header controls the relay and may not be given' },
      ],
    });
  });

  it('never echoes a submitted value in a problem (values may be addresses)', async () => {
    const response = await api.call(enqueue({ to: ['secret.person@example.com\nBcc: x@evil.test'] })());
    expect(JSON.stringify(response.json)).not.toContain('secret.person');
  });
});
