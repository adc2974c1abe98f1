import { describe, expect, it } from 'vitest';
import {
  type EnqueueContext,
  fingerprintSource,
  parseEnqueueRequest,
  parseGroupKey,
  parseGroupVersionRequest,
  parseRescheduleRequest,
  validateEnqueueRequest,
  validateGroupKey,
  validateGroupVersionRequest,
  validateRescheduleRequest,
} from '../../lambdas/core/messageSchema.js';
import { validationProblem } from '../../lambdas/core/problem.js';

const ctx: EnqueueContext = {
  now: new Date('2026-11-29T18:00:00.000Z'),
  allowedFrom: ['ops@example.com', '*@mail.example.org'],
  defaultFrom: 'ops@example.com',
  maxHorizonDays: 400,
};

const minimal = { to: ['ada@example.com'], subject: 'Hello', text: 'Hi Ada' };

function fieldsOf(body: unknown, context = ctx): string[] {
  const result = parseEnqueueRequest(body, context);
  if (result.ok) return [];
  return (result.problem.errors ?? []).map((error) => error.field);
}

describe('parseEnqueueRequest', () => {
  it('says "is required" for a missing field and names the type for a wrong one, echoing no value', () => {
    const errorsOf = (body: unknown) => {
      const result = parseEnqueueRequest(body, ctx);
      return result.ok ? [] : (result.problem.errors ?? []);
    };
    const { subject: _omitted, ...withoutSubject } = minimal;
    expect(errorsOf(withoutSubject)).toEqual([{ field: '/subject', message: 'is required' }]);
    expect(errorsOf({ ...minimal, subject: 4242 })).toEqual([
      { field: '/subject', message: 'must be a string' },
    ]);
    expect(JSON.stringify(parseEnqueueRequest({ ...minimal, subject: 4242 }, ctx))).not.toContain('4242');
  });

  it('refuses a simulator recipient: the outbox helper’s messages are live (decision 0192)', () => {
    expect(fieldsOf({ ...minimal, to: ['ada@example.com', '"Bounce"@SIMULATOR.postdate.test'] })).toEqual([
      '/to/1',
    ]);
  });

  it('accepts the minimal request and fills every default', () => {
    expect(parseEnqueueRequest(minimal, ctx)).toEqual({
      ok: true,
      value: {
        to: ['ada@example.com'],
        cc: [],
        bcc: [],
        from: 'ops@example.com',
        reply_to: null,
        subject: 'Hello',
        text: 'Hi Ada',
        html: null,
        headers: {},
        requested_send_at: null,
        delay_seconds: null,
        send_at: '2026-11-29T18:00:00.000Z',
        not_after: null,
        group: null,
        on_ambiguous: 'retry',
        tags: {},
        metadata: {},
      },
    });
  });

  it('accepts the DESIGN §3 example body', () => {
    const result = parseEnqueueRequest(
      {
        to: ['ada@example.com'],
        cc: [],
        bcc: [],
        from: 'Ops <ops@example.com>',
        reply_to: null,
        subject: 'Campaign approved',
        text: '…',
        html: '<p>…</p>',
        headers: { 'X-Campaign': '42' },
        send_at: '2026-12-01T09:00:00Z',
        not_after: '2026-12-01T10:00:00Z',
        group: { key: 'campaign:42:status', version: 7 },
        on_ambiguous: 'retry',
        tags: { kind: 'campaign-approved' },
        metadata: { campaign_id: '42' },
      },
      ctx,
    );
    expect(result.ok).toBe(true);
  });

  it('resolves the send time: send_at (normalized to UTC), delay_seconds, past = now', () => {
    const at = parseEnqueueRequest({ ...minimal, send_at: '2026-12-01T10:00:00.5+01:00' }, ctx);
    expect(at.ok && [at.value.send_at, at.value.requested_send_at]).toEqual([
      '2026-12-01T09:00:00.500Z',
      '2026-12-01T09:00:00.500Z',
    ]);
    const delayed = parseEnqueueRequest({ ...minimal, delay_seconds: 600 }, ctx);
    expect(delayed.ok && [delayed.value.send_at, delayed.value.delay_seconds]).toEqual([
      '2026-11-29T18:10:00.000Z',
      600,
    ]);
    const past = parseEnqueueRequest({ ...minimal, send_at: '2020-01-01T00:00:00Z' }, ctx);
    expect(past.ok && [past.value.send_at, past.value.requested_send_at]).toEqual([
      '2026-11-29T18:00:00.000Z',
      '2020-01-01T00:00:00.000Z',
    ]);
  });

  it('leaves the clock-derived send time out of the fingerprint source, so a later replay matches', () => {
    const early = parseEnqueueRequest({ ...minimal, delay_seconds: 60 }, ctx);
    const later = parseEnqueueRequest(
      { ...minimal, delay_seconds: 60 },
      { ...ctx, now: new Date('2026-11-29T18:05:00Z') },
    );
    if (!early.ok || !later.ok) throw new Error('expected valid requests');
    expect(early.value.send_at).not.toBe(later.value.send_at);
    expect(fingerprintSource(early.value)).toEqual(fingerprintSource(later.value));
  });

  it('accepts the horizon exactly and refuses one millisecond more', () => {
    const horizon = new Date(ctx.now.getTime() + 400 * 86_400_000);
    expect(fieldsOf({ ...minimal, send_at: horizon.toISOString() })).toEqual([]);
    expect(fieldsOf({ ...minimal, send_at: new Date(horizon.getTime() + 1).toISOString() })).toEqual([
      '/send_at',
    ]);
    expect(fieldsOf({ ...minimal, delay_seconds: 400 * 86_400 })).toEqual([]);
    expect(fieldsOf({ ...minimal, delay_seconds: 400 * 86_400 + 1 })).toEqual(['/delay_seconds']);
  });

  it('wants not_after strictly after the effective send time', () => {
    expect(
      fieldsOf({ ...minimal, send_at: '2026-12-01T09:00:00Z', not_after: '2026-12-01T09:00:00Z' }),
    ).toEqual(['/not_after']);
    expect(fieldsOf({ ...minimal, delay_seconds: 60, not_after: '2026-11-29T18:00:30Z' })).toEqual([
      '/not_after',
    ]);
    expect(fieldsOf({ ...minimal, not_after: '2026-11-29T18:00:01Z' })).toEqual([]);
  });

  it('checks from against POSTDATE_ALLOWED_FROM: exact address, *@domain, and the default', () => {
    expect(fieldsOf({ ...minimal, from: 'OPS@Example.com' })).toEqual([]);
    expect(fieldsOf({ ...minimal, from: 'Alerts <alerts@mail.example.org>' })).toEqual([]);
    expect(fieldsOf({ ...minimal, from: 'alerts@sub.mail.example.org' })).toEqual(['/from']);
    expect(fieldsOf({ ...minimal, from: 'other@example.com' })).toEqual(['/from']);
    expect(fieldsOf(minimal, { ...ctx, defaultFrom: 'nobody@elsewhere.test' })).toEqual(['/from']);
    expect(fieldsOf({ ...minimal, from: 'anyone@anywhere.test' }, { ...ctx, allowedFrom: ['*'] })).toEqual(
      [],
    );
  });

  it('names every offending field once, as a JSON Pointer', () => {
    expect(
      fieldsOf({
        to: ['ok@example.com', 'bad', 'also bad'],
        subject: '',
        headers: { 'X-A': 'a\nb', 'x-a': 'dup', From: 'x' },
        group: { key: '', version: 1.5 },
        extra: 1,
      }),
    ).toEqual([
      '/to/1',
      '/to/2',
      '/subject',
      '/headers/X-A',
      '/headers/x-a',
      '/headers/From',
      '/group/key',
      '/group/version',
      '/extra',
    ]);
  });

  it('refuses a header given twice in different cases', () => {
    expect(fieldsOf({ ...minimal, headers: { 'X-Trace': '1', 'x-trace': '2' } })).toEqual([
      '/headers/x-trace',
    ]);
  });

  it('refuses every header that steers a relay instead of describing the message, naming the field', () => {
    const steering = [
      'X-SES-CONFIGURATION-SET',
      'x-ses-message-tags',
      'X-SES-SOURCE-ARN',
      'X-SES-FROM-ARN',
      'X-SES-RETURN-PATH-ARN',
      'X-SMTPAPI',
      'X-Mailgun-Variables',
      'X-Mailgun-Drop-Message',
      'X-PM-Message-Stream',
      'X-PM-Tag',
      'X-MC-Subaccount',
      'X-MC-Track',
      'X-MSYS-API',
      'X-Mailjet-Campaign',
      'X-MJ-CustomID',
    ];
    for (const name of steering) {
      const result = parseEnqueueRequest({ ...minimal, headers: { [name]: 'x' } }, ctx);
      expect(result.ok, name).toBe(false);
      expect(result.ok ? [] : result.problem.errors, name).toEqual([
        { field: `/headers/${name}`, message: 'header controls the relay and may not be given' },
      ]);
      expect(result.ok ? 0 : result.problem.status).toBe(400);
    }
  });

  it('still accepts headers that only look like relay controls', () => {
    const headers = {
      'X-Sessions': '2',
      'X-PMO': 'a',
      'X-MCP': 'b',
      'X-Mailer-Info': 'c',
      'X-SMTPAPI-Note': 'd',
    };
    expect(parseEnqueueRequest({ ...minimal, headers }, ctx).ok).toBe(true);
  });

  it('limits tags and metadata (they live on the small, often written state record)', () => {
    const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`t${i}`, 'v']));
    expect(fieldsOf({ ...minimal, tags: many })).toEqual(['/tags']);
    expect(fieldsOf({ ...minimal, tags: { k: 'v'.repeat(129) } })).toEqual(['/tags/k']);
    const big = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`m${i}`, 'x'.repeat(500)]));
    expect(fieldsOf({ ...minimal, metadata: big })).toEqual(['/metadata']);
    expect(fieldsOf({ ...minimal, metadata: { note: 'line one\nline two' } })).toEqual([]);
  });

  it('treats null like an absent optional field', () => {
    expect(
      fieldsOf({ ...minimal, cc: null, from: null, headers: null, group: null, tags: null, send_at: null }),
    ).toEqual([]);
  });

  it.each([null, 42, 'text', [], true])('refuses a body that is not an object: %j', (body) => {
    expect(fieldsOf(body)).toEqual(['body']);
  });
});

describe('parseEnqueueRequest: the rules across fields', () => {
  it.each([
    ['no recipient in any list', { ...minimal, to: [], cc: [] }, '/to'],
    [
      '51 recipients across the lists',
      { ...minimal, to: Array(30).fill('a@example.com'), bcc: Array(21).fill('b@example.com') },
      '/to',
    ],
    ['neither text nor html', { to: ['a@example.com'], subject: 's', html: '' }, '/text'],
    [
      'send_at and delay_seconds together',
      { ...minimal, send_at: '2026-12-01T00:00:00Z', delay_seconds: 5 },
      '/delay_seconds',
    ],
    [
      '51 headers',
      { ...minimal, headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, 'v'])) },
      '/headers',
    ],
    [
      'a header value over 998 characters',
      { ...minimal, headers: { 'X-Long': 'v'.repeat(999) } },
      '/headers/X-Long',
    ],
    ['an unknown on_ambiguous', { ...minimal, on_ambiguous: 'maybe' }, '/on_ambiguous'],
    [
      'an address over 320 characters',
      { ...minimal, to: [`${'a'.repeat(60)}@${'b'.repeat(60)}.${'c'.repeat(250)}.com`] },
      '/to/0',
    ],
    [
      'a display name over 200 characters',
      { ...minimal, to: [`${'N'.repeat(201)} <a@example.com>`] },
      '/to/0',
    ],
    ['a quoted display name ending in a backslash', { ...minimal, to: ['"Ada\\" <a@example.com>'] }, '/to/0'],
    [
      'a quoted display name with an inner quote',
      { ...minimal, to: ['"Ada "the" Countess" <a@example.com>'] },
      '/to/0',
    ],
    [
      'a domain over 253 characters',
      { ...minimal, to: [`a@${Array(50).fill('abcdef').join('.')}.com`] },
      '/to/0',
    ],
    // No ASCII form for RCPT TO (IDNA's bidi rule), and an A-label of 69 octets (decision 0328).
    ['an IDN domain IDNA refuses', { ...minimal, cc: ['ada@\u05d0a.example'] }, '/cc/0'],
    ['an IDN label over 63 octets as A-label', { ...minimal, to: [`a@${'\u00fc'.repeat(63)}.com`] }, '/to/0'],
  ])('refuses %s', (_name, body, field) => {
    expect(fieldsOf(body)).toContain(field);
  });

  it('reports an invalid configured default sender on /from', () => {
    expect(fieldsOf(minimal, { ...ctx, defaultFrom: 'not an address', allowedFrom: ['*'] })).toEqual([
      '/from',
    ]);
  });

  it('never throws, even on a body whose getters throw', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('boom');
        },
        ownKeys() {
          throw new Error('boom');
        },
      },
    );
    const result = parseEnqueueRequest(hostile, ctx);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problem.errors?.[0]?.field).toBe('body');
  });
});

describe('the other request bodies', () => {
  it('parseRescheduleRequest wants exactly {send_at}, within the horizon; past means now', () => {
    const context = { now: ctx.now, maxHorizonDays: 400 };
    expect(parseRescheduleRequest({ send_at: '2026-12-01T09:00:00Z' }, context)).toEqual({
      ok: true,
      value: { send_at: '2026-12-01T09:00:00.000Z' },
    });
    expect(parseRescheduleRequest({ send_at: '2001-01-01T00:00:00Z' }, context)).toEqual({
      ok: true,
      value: { send_at: '2026-11-29T18:00:00.000Z' },
    });
    const problems = [
      {},
      { send_at: 'soon' },
      { send_at: '2030-01-01T00:00:00Z' },
      { send_at: '2026-12-01T09:00:00Z', rev: 2 },
    ];
    expect(problems.map((body) => parseRescheduleRequest(body, context).ok)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it('parseGroupVersionRequest wants a whole version ≥ 0', () => {
    expect(parseGroupVersionRequest({ version: 0 })).toEqual({ ok: true, value: { version: 0 } });
    for (const body of [{ version: -1 }, { version: 1.5 }, { version: '3' }, {}, { version: 1, key: 'x' }]) {
      expect(parseGroupVersionRequest(body).ok).toBe(false);
    }
  });

  it('parseGroupKey accepts 1–200 printable characters and names the key', () => {
    expect(parseGroupKey('campaign:42:status')).toEqual({ ok: true, value: 'campaign:42:status' });
    expect(parseGroupKey('ü'.repeat(200)).ok).toBe(true);
    for (const key of ['', ' padded', 'a\nb', 'x'.repeat(201)]) {
      const result = parseGroupKey(key);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.problem.errors?.[0]?.field).toBe('key');
    }
  });
});

describe('well-formed Unicode (found by the hostile-input run)', () => {
  const ctx = {
    now: new Date('2026-11-29T18:00:00Z'),
    allowedFrom: ['*'],
    defaultFrom: 'ops@example.com',
    maxHorizonDays: 400,
  };
  const body = (extra: Record<string, unknown>) => ({
    to: ['ada@example.com'],
    subject: 'Hello',
    text: 'Hi',
    ...extra,
  });

  it('refuses a lone surrogate in the subject, which DynamoDB would refuse as invalid UTF-8', () => {
    const parsed = parseEnqueueRequest(body({ subject: 'bad \ud800 subject' }), ctx);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok)
      expect(parsed.problem.errors).toContainEqual({
        field: '/subject',
        message: 'must be well-formed Unicode',
      });
  });

  it('refuses one in a nested value and in a field name, naming where', () => {
    const parsed = parseEnqueueRequest(body({ tags: { kind: '\udc00' }, metadata: { 'k\ud800': 'v' } }), ctx);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      const fields = parsed.problem.errors?.map((error) => error.field);
      expect(fields).toContain('/tags/kind');
      expect(fields).toContain('/metadata');
    }
  });

  it('accepts proper pairs such as emoji', () => {
    expect(parseEnqueueRequest(body({ subject: 'Shipped 📦' }), ctx).ok).toBe(true);
  });
});

describe('core validation answers field errors; the parsers wrap them in the 400 problem', () => {
  it('names the fields and reasons, with no HTTP status in the answer', () => {
    const result = validateEnqueueRequest({ to: ['ada@example.com'], subject: 'Hi', text: 'x', bcc: 7 }, ctx);
    expect(result).toEqual({
      ok: false,
      errors: [{ field: '/bcc', message: 'must be an array' }],
    });
  });

  it('gives the same answer through the public parsers, as validationProblem of those errors', () => {
    const bodies: unknown[] = [
      null,
      [],
      { to: ['not an address'], subject: '', text: 'x', extra: 1 },
      { to: ['ada@example.com'], subject: 'Hi', text: 'x', send_at: '2030-01-01T00:00:00Z' },
      { to: ['ada@example.com'], subject: 'Hi', text: 'x' },
    ];
    for (const body of bodies) {
      const validated = validateEnqueueRequest(body, ctx);
      const parsed = parseEnqueueRequest(body, ctx);
      expect(parsed).toEqual(
        validated.ok ? validated : { ok: false, problem: validationProblem(validated.errors) },
      );
      const reschedule = validateRescheduleRequest(body, ctx);
      expect(parseRescheduleRequest(body, ctx)).toEqual(
        reschedule.ok ? reschedule : { ok: false, problem: validationProblem(reschedule.errors) },
      );
      const version = validateGroupVersionRequest(body);
      expect(parseGroupVersionRequest(body)).toEqual(
        version.ok ? version : { ok: false, problem: validationProblem(version.errors) },
      );
    }
    for (const key of ['campaign:42', ' padded', '']) {
      const validated = validateGroupKey(key);
      expect(parseGroupKey(key)).toEqual(
        validated.ok ? validated : { ok: false, problem: validationProblem(validated.errors) },
      );
    }
  });
});
