import fc from 'fast-check';
import { EnqueueBodySchema, LIMITS } from '../lambdas/core/messageSchema.js';

/**
 * The hostile requests: every one is wrong in at least one way that the API must refuse with a
 * 4xx and without writing anything. Generated bodies come from the enqueue schema itself: its
 * fields are enumerated from `EnqueueBodySchema.shape`, and the schema is the oracle that keeps
 * only bodies it rejects (so that a "never a write" check is meaningful). Hand-made attacks cover
 * what a schema cannot express: raw bytes, header splitting, sizes, keys and tenants.
 */

/** Who the request authenticates as. */
export type Auth = 'own' | 'other-tenant' | 'forged' | 'none' | 'empty' | 'basic' | 'raw';

export interface HostileRequest {
  /** A short label of the attack family, for the report. */
  readonly attack: string;
  readonly method: string;
  /** Already percent-encoded where needed; sent as is on the request line. */
  readonly path: string;
  readonly auth: Auth;
  /** Raw header lines to add (name, value); values may hold any bytes (sent verbatim). */
  readonly headers: readonly (readonly [string, string | Buffer])[];
  readonly body?: Buffer;
}

/** Ids the attacks refer to: a message of the own tenant that must stay untouched. */
export interface HostileTargets {
  /** A `scheduled` message of the key's tenant (far in the future). */
  readonly ownMessageId: string;
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
const JSON_TYPE = ['Content-Type', 'application/json'] as const;

let keyCounter = 0;
/** A fresh, valid Idempotency-Key, so that the body is what makes an enqueue invalid. */
function freshKey(): readonly [string, string] {
  keyCounter += 1;
  return ['Idempotency-Key', `hostile-${process.pid}-${Date.now()}-${keyCounter}`];
}

const VALID_BODY = {
  to: ['ada@example.com'],
  subject: 'Hostile suite',
  text: 'hello',
} as const;

const enqueue = (attack: string, body: Buffer, auth: Auth = 'own', extra: HostileRequest['headers'] = []) =>
  ({
    attack,
    method: 'POST',
    path: '/v1/messages',
    auth,
    headers: [JSON_TYPE, freshKey(), ...extra],
    body,
  }) satisfies HostileRequest;

const INJECTION = fc.constantFrom(
  '\r\nBcc: victim@attacker.test',
  '\nBcc: victim@attacker.test',
  '\r',
  '\r\n\r\n<html>injected</html>',
  '%0d%0aBcc: victim@attacker.test\r\n',
  '\u0000',
  '\u0085',
);

/** Inserts an injection at a random place of a string. */
const injected = (base: string) =>
  fc
    .tuple(fc.nat({ max: base.length }), INJECTION)
    .map(([at, attack]) => base.slice(0, at) + attack + base.slice(at));

/** A value of the wrong JSON type for any field. */
const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.string(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/** CRLF (and other control characters) injected into every header-bound field in turn. */
const crlfBodies = fc.oneof(
  injected('ada@example.com').map((to) => ({ attack: 'crlf:to', body: { ...VALID_BODY, to: [to] } })),
  injected('bob@example.com').map((cc) => ({ attack: 'crlf:cc', body: { ...VALID_BODY, cc: [cc] } })),
  injected('eve@example.com').map((bcc) => ({ attack: 'crlf:bcc', body: { ...VALID_BODY, bcc: [bcc] } })),
  injected('Ops <ops@example.com>').map((from) => ({ attack: 'crlf:from', body: { ...VALID_BODY, from } })),
  injected('Ops <ops@example.com>').map((reply_to) => ({
    attack: 'crlf:reply_to',
    body: { ...VALID_BODY, reply_to },
  })),
  injected('Campaign approved').map((subject) => ({
    attack: 'crlf:subject',
    body: { ...VALID_BODY, subject },
  })),
  injected('42').map((value) => ({
    attack: 'crlf:header-value',
    body: { ...VALID_BODY, headers: { 'X-Campaign': value } },
  })),
  injected('X-Campaign').map((name) => ({
    attack: 'crlf:header-name',
    body: { ...VALID_BODY, headers: { [name]: '42' } },
  })),
  injected('campaign').map((value) => ({
    attack: 'crlf:tag',
    body: { ...VALID_BODY, tags: { kind: value } },
  })),
  injected('campaign:42').map((key) => ({
    attack: 'crlf:group-key',
    body: { ...VALID_BODY, group: { key, version: 1 } },
  })),
);

/** Every field of the schema, given a value of the wrong type. */
const FIELDS = Object.keys(EnqueueBodySchema.shape);
const wrongTypeBodies = fc
  .tuple(fc.constantFrom(...FIELDS), wrongType)
  .map(([field, value]) => ({ attack: `wrong-type:${field}`, body: { ...VALID_BODY, [field]: value } }));

/** Fields the schema does not know (strictObject), including prototype tricks. */
const unknownFieldBodies = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 20 }).filter((key) => !FIELDS.includes(key)),
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'status', 'tenant', 'rev'),
  )
  .map((key) => ({
    attack: 'unknown-field',
    body: JSON.parse(
      `{${JSON.stringify(key)}:{"polluted":true},"to":["ada@example.com"],"subject":"x","text":"y"}`,
    ),
  }));

/** More recipients than allowed, spread over to/cc/bcc. */
const recipientFloodBodies = fc
  .tuple(
    fc.integer({ min: LIMITS.maxRecipients + 1, max: 5000 }),
    fc.constantFrom('to', 'cc', 'bcc', 'spread'),
  )
  .map(([count, where]) => {
    const addresses = Array.from({ length: count }, (_, index) => `r${index}@example.com`);
    const body =
      where === 'spread'
        ? {
            ...VALID_BODY,
            to: addresses.slice(0, 20),
            cc: addresses.slice(20, 40),
            bcc: addresses.slice(40),
          }
        : { ...VALID_BODY, [where]: addresses };
    return { attack: `recipients:${count > 1000 ? 'huge' : 'over-limit'}`, body };
  });

/** Dates and delays at and beyond the edges. */
const dateBodies = fc.oneof(
  fc
    .constantFrom(
      '2026-02-30T09:00:00Z',
      '2026-13-01T09:00:00Z',
      '2026-12-01T24:00:00Z',
      '2026-12-01T09:60:00Z',
      '2026-12-01T09:00:00',
      '2026-12-01',
      '2026-12-01T09:00:00+25:00',
      '+275760-09-13T00:00:01Z',
      '9999-12-31T23:59:59Z',
      '10000-01-01T00:00:00Z',
      'tomorrow',
      '',
      '1764579600',
    )
    .map((send_at) => ({ attack: 'date:send_at', body: { ...VALID_BODY, send_at } })),
  fc.integer({ min: 401, max: 100_000 }).map((days) => ({
    attack: 'date:beyond-horizon',
    body: { ...VALID_BODY, send_at: new Date(Date.now() + days * 86_400_000).toISOString() },
  })),
  fc.integer({ min: 0, max: 86_400 }).map((before) => {
    const sendAt = Date.now() + 3_600_000;
    return {
      attack: 'date:not_after-not-after-send_at',
      body: {
        ...VALID_BODY,
        send_at: new Date(sendAt).toISOString(),
        not_after: new Date(sendAt - before * 1000).toISOString(),
      },
    };
  }),
  fc
    .oneof(
      fc.integer({ max: -1 }),
      fc.double({ noInteger: true, noNaN: true }),
      fc.integer({ min: 401 * 86_400, max: Number.MAX_SAFE_INTEGER }),
      fc.constant(1e308),
    )
    .map((delay_seconds) => ({ attack: 'date:delay_seconds', body: { ...VALID_BODY, delay_seconds } })),
  fc.constant({
    attack: 'date:both-send_at-and-delay',
    body: { ...VALID_BODY, send_at: new Date(Date.now() + 60_000).toISOString(), delay_seconds: 5 },
  }),
);

/** Everything else the schema refuses: empty lists, bad addresses, missing content, oversize fields. */
const schemaBodies = fc.oneof(
  fc.constant({ attack: 'no-recipient', body: { subject: 'x', text: 'y' } }),
  fc.constant({ attack: 'no-content', body: { to: ['ada@example.com'], subject: 'x' } }),
  fc
    .constantFrom(
      '',
      'ada',
      '@example.com',
      'ada@',
      'a b@example.com',
      '<ada@example.com',
      'ada@@example.com',
    )
    .map((to) => ({ attack: 'bad-address', body: { ...VALID_BODY, to: [to] } })),
  fc.constant({ attack: 'empty-subject', body: { ...VALID_BODY, subject: '' } }),
  fc.constant({
    attack: 'long-subject',
    body: { ...VALID_BODY, subject: 'x'.repeat(LIMITS.maxSubjectLength + 1) },
  }),
  fc.constant({
    attack: 'too-many-headers',
    body: {
      ...VALID_BODY,
      headers: Object.fromEntries(Array.from({ length: 60 }, (_, index) => [`X-H${index}`, 'v'])),
    },
  }),
  fc.constant({
    attack: 'big-labels',
    body: {
      ...VALID_BODY,
      metadata: Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`k${index}`, 'v'.repeat(400)])),
    },
  }),
  fc
    .constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER + 2)
    .map((version) => ({ attack: 'group-version', body: { ...VALID_BODY, group: { key: 'g', version } } })),
  fc.constant({ attack: 'on_ambiguous', body: { ...VALID_BODY, on_ambiguous: 'maybe' } }),
);

/** The generated enqueue bodies; the schema rejects each one (asserted as they are built). */
const generatedBodies = fc.oneof(
  { weight: 4, arbitrary: crlfBodies },
  { weight: 3, arbitrary: wrongTypeBodies },
  { weight: 1, arbitrary: unknownFieldBodies },
  { weight: 1, arbitrary: recipientFloodBodies },
  { weight: 2, arbitrary: dateBodies },
  { weight: 2, arbitrary: schemaBodies },
);

/** Whether a body is refused before any clock or configuration rule (the schema's own verdict). */
export function schemaRejects(body: unknown): boolean {
  return !EnqueueBodySchema.safeParse(body).success;
}

/** Attacks on the envelope of the request: bytes, sizes, headers, keys, routes. */
function handMadeAttacks(targets: HostileTargets): HostileRequest[] {
  const own = targets.ownMessageId;
  const invalid = json({ subject: 'no recipient', text: 'x' });
  const attacks: HostileRequest[] = [
    // Bytes that are not (valid) JSON.
    enqueue(
      'invalid-utf8',
      Buffer.from([0x7b, 0x22, 0x74, 0x6f, 0x22, 0x3a, 0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d, 0x7d]),
    ),
    enqueue(
      'invalid-utf8:subject',
      Buffer.concat([
        Buffer.from('{"to":["ada@example.com"],"text":"x","subject":"'),
        Buffer.from([0xc3, 0x28, 0xa0, 0xa1]),
        Buffer.from('"}'),
      ]),
    ),
    enqueue(
      'invalid-utf8:lone-surrogate',
      Buffer.from('{"to":["ada@example.com"],"text":"x","subject":"\\ud800"}'),
    ),
    enqueue('not-json', Buffer.from('to=ada@example.com&subject=x')),
    enqueue('empty-body', Buffer.alloc(0)),
    enqueue('json-null', Buffer.from('null')),
    enqueue('json-array', json([VALID_BODY])),
    enqueue('json-number', Buffer.from('1e400')),
    enqueue('json-string', json('hello')),
    enqueue('truncated-json', Buffer.from('{"to":["ada@example.com"],"subject":"x","text":')),
    enqueue(
      'duplicate-keys',
      Buffer.from('{"to":["ada@example.com"],"subject":"x","text":"y","to":"nobody"}'),
    ),
    enqueue('deep-array', Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)),
    enqueue('deep-object', Buffer.from(`${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`)),
    enqueue(
      'deep-in-field',
      Buffer.from(
        `{"to":["ada@example.com"],"subject":"x","text":"y","metadata":${'['.repeat(20_000)}${']'.repeat(20_000)}}`,
      ),
    ),
    // Sizes.
    enqueue('oversized:just-over-256KiB', json({ ...VALID_BODY, text: 'x'.repeat(LIMITS.maxBodyBytes + 1) })),
    enqueue('oversized:2MiB-html', json({ ...VALID_BODY, html: `<p>${'x'.repeat(2 * 1024 * 1024)}</p>` })),
    enqueue('oversized:11MB', Buffer.alloc(11 * 1024 * 1024, 0x20)),
    // Headers: content types, keys, header splitting (raw CR/LF on the wire).
    { ...enqueue('content-type:text', invalid), headers: [['Content-Type', 'text/plain'], freshKey()] },
    { ...enqueue('content-type:none', invalid), headers: [freshKey()] },
    {
      attack: 'idempotency-key:missing',
      method: 'POST',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE],
      body: json(VALID_BODY),
    },
    {
      attack: 'idempotency-key:empty',
      method: 'POST',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE, ['Idempotency-Key', '']],
      body: json(VALID_BODY),
    },
    {
      attack: 'idempotency-key:too-long',
      method: 'POST',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE, ['Idempotency-Key', 'k'.repeat(256)]],
      body: json(VALID_BODY),
    },
    {
      attack: 'idempotency-key:control',
      method: 'POST',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE, ['Idempotency-Key', 'abc\u0001def']],
      body: json(VALID_BODY),
    },
    {
      attack: 'idempotency-key:non-ascii',
      method: 'POST',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE, ['Idempotency-Key', Buffer.from([0x6b, 0xff, 0xfe, 0x6b])]],
      body: json(VALID_BODY),
    },
    {
      attack: 'header-splitting:idempotency-key',
      method: 'POST',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE, ['Idempotency-Key', 'abc\r\nX-Injected: 1']],
      body: invalid,
    },
    {
      attack: 'header-splitting:authorization',
      method: 'POST',
      path: '/v1/messages',
      auth: 'raw',
      headers: [JSON_TYPE, freshKey(), ['Authorization', 'Bearer pd_forged_key_0000\r\nX-Tenant: local']],
      body: json(VALID_BODY),
    },
    // Authentication: none, empty, forged, wrong scheme, the other tenant.
    enqueue('auth:none', json(VALID_BODY), 'none'),
    enqueue('auth:empty', json(VALID_BODY), 'empty'),
    enqueue('auth:forged', json(VALID_BODY), 'forged'),
    enqueue('auth:basic', json(VALID_BODY), 'basic'),
    { attack: 'auth:forged-get', method: 'GET', path: `/v1/messages/${own}`, auth: 'forged', headers: [] },
    { attack: 'auth:none-list', method: 'GET', path: '/v1/messages', auth: 'none', headers: [] },
    // `/openapi.json` is public (DESIGN §3); the template list is not.
    { attack: 'auth:none-templates', method: 'GET', path: '/v1/templates', auth: 'none', headers: [] },
    {
      attack: 'other-tenant:get',
      method: 'GET',
      path: `/v1/messages/${own}`,
      auth: 'other-tenant',
      headers: [],
    },
    {
      attack: 'other-tenant:cancel',
      method: 'DELETE',
      path: `/v1/messages/${own}`,
      auth: 'other-tenant',
      headers: [],
    },
    {
      attack: 'other-tenant:reschedule',
      method: 'PATCH',
      path: `/v1/messages/${own}`,
      auth: 'other-tenant',
      headers: [JSON_TYPE],
      body: json({ send_at: new Date(Date.now() + 7_200_000).toISOString() }),
    },
    {
      attack: 'other-tenant:retry',
      method: 'POST',
      path: `/v1/messages/${own}/retry`,
      auth: 'other-tenant',
      headers: [],
    },
    // The other routes, with bad parameters.
    {
      attack: 'route:unknown-id',
      method: 'GET',
      path: '/v1/messages/01JZZZZZZZZZZZZZZZZZZZZZZZ',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:long-id',
      method: 'GET',
      path: `/v1/messages/${'A'.repeat(5000)}`,
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:encoded-traversal',
      method: 'GET',
      path: '/v1/messages/..%2F..%2Fapikeys',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:encoded-crlf-id',
      method: 'DELETE',
      path: '/v1/messages/abc%0d%0aX-Evil:%201',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:cancel-unknown',
      method: 'DELETE',
      path: '/v1/messages/01JZZZZZZZZZZZZZZZZZZZZZZZ',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:retry-scheduled',
      method: 'POST',
      path: `/v1/messages/${own}/retry`,
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:reschedule-bad-date',
      method: 'PATCH',
      path: `/v1/messages/${own}`,
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ send_at: '2026-02-30T00:00:00Z' }),
    },
    {
      attack: 'route:reschedule-beyond-horizon',
      method: 'PATCH',
      path: `/v1/messages/${own}`,
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ send_at: '9999-12-31T23:59:59Z' }),
    },
    {
      attack: 'route:reschedule-extra-field',
      method: 'PATCH',
      path: `/v1/messages/${own}`,
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ send_at: new Date(Date.now() + 7_200_000).toISOString(), status: 'sent' }),
    },
    {
      attack: 'route:reschedule-deep',
      method: 'PATCH',
      path: `/v1/messages/${own}`,
      auth: 'own',
      headers: [JSON_TYPE],
      body: Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`),
    },
    {
      attack: 'route:reschedule-unknown',
      method: 'PATCH',
      path: '/v1/messages/01JZZZZZZZZZZZZZZZZZZZZZZZ',
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ send_at: new Date(Date.now() + 7_200_000).toISOString() }),
    },
    {
      attack: 'route:group-negative',
      method: 'PUT',
      path: '/v1/groups/campaign%3A1',
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ version: -1 }),
    },
    {
      attack: 'route:group-float',
      method: 'PUT',
      path: '/v1/groups/campaign%3A1',
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ version: 1.5 }),
    },
    {
      attack: 'route:group-string',
      method: 'PUT',
      path: '/v1/groups/campaign%3A1',
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ version: '7' }),
    },
    {
      attack: 'route:group-crlf-key',
      method: 'PUT',
      path: '/v1/groups/a%0d%0ab',
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ version: 1 }),
    },
    {
      attack: 'route:group-long-key',
      method: 'PUT',
      path: `/v1/groups/${'k'.repeat(201)}`,
      auth: 'own',
      headers: [JSON_TYPE],
      body: json({ version: 1 }),
    },
    {
      attack: 'route:group-no-body',
      method: 'PUT',
      path: '/v1/groups/campaign%3A1',
      auth: 'own',
      headers: [JSON_TYPE],
    },
    {
      attack: 'route:list-bad-status',
      method: 'GET',
      path: '/v1/messages?status=delivered',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:list-bad-limit',
      method: 'GET',
      path: '/v1/messages?limit=-5',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:list-huge-limit',
      method: 'GET',
      path: '/v1/messages?limit=100000000',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:list-forged-cursor',
      method: 'GET',
      path: `/v1/messages?cursor=${Buffer.from('{"pk":"apikeys","sk":"x"}').toString('base64url')}`,
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:list-garbage-cursor',
      method: 'GET',
      path: '/v1/messages?cursor=%FF%FE%00',
      auth: 'own',
      headers: [],
    },
    {
      attack: 'route:no-such-route',
      method: 'POST',
      path: '/v1/admin',
      auth: 'own',
      headers: [JSON_TYPE],
      body: invalid,
    },
    {
      attack: 'route:wrong-method',
      method: 'PUT',
      path: '/v1/messages',
      auth: 'own',
      headers: [JSON_TYPE],
      body: invalid,
    },
  ];
  return attacks;
}

/**
 * `count` hostile requests (at least the hand-made ones), reproducible by `seed`: the hand-made
 * attacks first, then bodies generated from the schema, each checked to be refused by it.
 */
export function hostileRequests(count: number, seed: number, targets: HostileTargets): HostileRequest[] {
  const handMade = handMadeAttacks(targets);
  const generatedCount = Math.max(0, count - handMade.length);
  const generated = fc
    .sample(generatedBodies, { numRuns: generatedCount * 3, seed })
    // Judged in its wire form: JSON turns NaN and ±Infinity into null, which may be valid.
    .filter(
      (candidate) =>
        schemaRejects(JSON.parse(JSON.stringify(candidate.body))) ||
        candidate.attack.startsWith('date:beyond-horizon'),
    )
    .slice(0, generatedCount)
    .map((candidate) => enqueue(candidate.attack, json(candidate.body)));
  return [...handMade, ...generated];
}
