/**
 * The document's request schemas say what the validating zod schemas check, where JSON Schema can:
 * every body the server accepts, the document accepts; every body refused for a rule the document
 * encodes, the document refuses too. The two rules it cannot say are checked to be in its words.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import {
  EnqueueBodySchema,
  GroupKeySchema,
  validateEnqueueRequest,
} from '../../lambdas/core/messageSchema.js';
import { buildOpenApiDocument } from '../../lib/openapi/openApiDocument.js';
import { validBody } from './events.js';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

const document = JSON.parse(JSON.stringify(buildOpenApiDocument())) as {
  components: { schemas: Record<string, { description?: string }> };
  paths: Record<string, Record<string, { parameters?: { name: string; schema: object }[] }>>;
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(document, 'openapi.json', undefined, false);
const documentAccepts = ajv.compile({ $ref: 'openapi.json#/components/schemas/EnqueueRequest' });

const repeat = (count: number, make: (i: number) => [string, string]) =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => make(i)));

describe('the enqueue request schema of the document', () => {
  const accepted: [string, Record<string, unknown>][] = [
    ['the docs body', validBody()],
    ['only bcc', validBody({ to: null, bcc: ['ada@example.com'] })],
    ['only cc, to empty', validBody({ to: [], cc: ['ada@example.com'] })],
    ['only html', validBody({ text: null })],
    ['only text', validBody({ html: undefined })],
    ['delay_seconds only', validBody({ delay_seconds: 60 })],
    ['send_at with a null delay', validBody({ send_at: '2026-12-01T09:00:00Z', delay_seconds: null })],
    ['a TAB in the subject and a header value', validBody({ subject: 'a\tb', headers: { 'X-A': 'a\tb' } })],
    ['caps reached exactly', validBody({ tags: repeat(10, (i) => [`t${i}`, 'v'.repeat(128)]) })],
    ['a group', validBody({ group: { key: 'campaign:42:status', version: 7 } })],
    ['nulls everywhere optional', validBody({ cc: null, headers: null, tags: null, group: null })],
  ];

  it.each(accepted)('accepts what the server accepts: %s', (_, body) => {
    expect(EnqueueBodySchema.safeParse(body).success).toBe(true);
    expect(documentAccepts(body), ajv.errorsText(documentAccepts.errors)).toBe(true);
  });

  const refused: [string, Record<string, unknown>][] = [
    ['no recipient at all', validBody({ to: undefined })],
    ['only empty lists', validBody({ to: [], cc: [], bcc: null })],
    ['neither text nor html', validBody({ text: undefined, html: undefined })],
    ['an empty text and no html', validBody({ text: '', html: null })],
    ['send_at and delay_seconds', validBody({ send_at: '2026-12-01T09:00:00Z', delay_seconds: 60 })],
    ['11 tags', validBody({ tags: repeat(11, (i) => [`t${i}`, 'v']) })],
    ['a tag key of 65 characters', validBody({ tags: { ['k'.repeat(65)]: 'v' } })],
    ['a tag value of 129 characters', validBody({ tags: { kind: 'v'.repeat(129) } })],
    ['a tag value with LF', validBody({ tags: { kind: 'a\nb' } })],
    ['21 metadata entries', validBody({ metadata: repeat(21, (i) => [`m${i}`, 'v']) })],
    ['an empty metadata key', validBody({ metadata: { '': 'v' } })],
    ['a metadata value of 513 characters', validBody({ metadata: { m: 'v'.repeat(513) } })],
    ['51 headers', validBody({ headers: repeat(51, (i) => [`X-H${i}`, 'v']) })],
    ['a header name with a space', validBody({ headers: { 'X Bad': 'v' } })],
    ['a header value with CR LF', validBody({ headers: { 'X-A': 'a\r\nBcc: eve@example.com' } })],
    ['a header value of 999 characters', validBody({ headers: { 'X-A': 'v'.repeat(999) } })],
    ['a subject with LF', validBody({ subject: 'Hello\nBcc: eve@example.com' })],
    ['a subject with BEL', validBody({ subject: 'Hello\u0007' })],
    ['an address with CR LF', validBody({ to: ['ada@example.com\r\nBcc: eve@example.com'] })],
    ['a group key with a leading space', validBody({ group: { key: ' campaign', version: 1 } })],
    ['a group key of 201 characters', validBody({ group: { key: 'g'.repeat(201), version: 1 } })],
    ['a negative delay', validBody({ delay_seconds: -1 })],
    ['an unknown field', validBody({ priority: 'high' })],
  ];

  it.each(refused)('refuses what the server refuses for a rule it encodes: %s', (_, body) => {
    expect(EnqueueBodySchema.safeParse(body).success).toBe(false);
    expect(documentAccepts(body)).toBe(false);
  });

  it('says in words the two rules JSON Schema cannot: 50 recipients in all, and the tags+metadata bytes', () => {
    const fiftyOne = validBody({
      to: Array.from({ length: 30 }, (_, i) => `a${i}@example.com`),
      cc: Array.from({ length: 21 }, (_, i) => `c${i}@example.com`),
    });
    expect(EnqueueBodySchema.safeParse(fiftyOne).success).toBe(false);
    expect(documentAccepts(fiftyOne)).toBe(true);
    const description = document.components.schemas.EnqueueRequest?.description ?? '';
    expect(description).toContain('At most 50 recipients in to, cc and bcc together');
    expect(description).toContain('2048 bytes');
  });

  it('says on tags that neither a tag key nor a tag value may be __proto__ (tags.kind keys a pause)', () => {
    const protoValue = validBody({ tags: { kind: '__proto__' } });
    expect(EnqueueBodySchema.safeParse(protoValue).success).toBe(false);
    // An own key named __proto__, as JSON.parse makes it from a request body: the schema cannot see
    // it, the enqueue's validation refuses it beside the schema (core/problem.ts prototypeKeyErrors).
    const protoKey = validBody({ tags: JSON.parse('{"__proto__": "x"}') });
    expect(Object.keys(protoKey.tags as object)).toEqual(['__proto__']);
    const context = { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 };
    expect(validateEnqueueRequest(protoKey, { ...context, now: new Date() })).toMatchObject({
      ok: false,
      errors: [{ field: '/tags/__proto__', message: 'is not an allowed name' }],
    });
    const tags = document.components.schemas.InlineEnqueueRequest as {
      properties: Record<string, { description?: string }>;
    };
    expect(tags.properties.tags?.description).toContain('Neither a key nor a value may be `__proto__`');
  });

  it('has the group key rules on the PUT /v1/groups/{key} path parameter', () => {
    const parameter = document.paths['/v1/groups/{key}']?.put?.parameters?.find((p) => p.name === 'key');
    const keyAccepts = ajv.compile(parameter?.schema ?? {});
    for (const key of ['campaign:42:status', 'a', 'g'.repeat(200), 'with inner space']) {
      expect(GroupKeySchema.safeParse(key).success, key).toBe(true);
      expect(keyAccepts(key), key).toBe(true);
    }
    for (const key of ['', ' lead', 'trail ', 'g'.repeat(201), 'bell\u0007']) {
      expect(GroupKeySchema.safeParse(key).success, key).toBe(false);
      expect(keyAccepts(key), key).toBe(false);
    }
  });
});
