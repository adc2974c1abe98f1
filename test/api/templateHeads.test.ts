/**
 * The template head an enqueue judges by (DESIGN §4 "No hot partitions", §10): a warm api function
 * keeps it briefly instead of a consistent read per templated enqueue, and what §10 promises still
 * holds within the stated bound — another function's archive refuses new enqueues and its new version
 * is the one pinned once TEMPLATE_HEAD_MAX_AGE_MS has passed; an enqueue naming a version the cached
 * head has not seen reads through; this function's own writes show at once. DynamoDB Local; the
 * clock is the test's.
 */

import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoTemplateStore, TEMPLATE_HEAD_MAX_AGE_MS } from '../../lambdas/store/templateStore.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const body = (template: Record<string, unknown>) => ({
  to: ['ada@example.com'],
  from: 'ops@example.com',
  template,
  data: { name: 'Ada' },
});
const CONTENT = { subject: 'Hi {{name}}', text: 'Hello {{name}}', html: null };

/** Counts the consistent head reads the harness's api makes (GetItem on `TPLS#…`). */
function countHeadReads(documents: DynamoDBDocumentClient) {
  let reads = 0;
  documents.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { Key?: { pk?: unknown } };
      if (String(input.Key?.pk ?? '').startsWith('TPLS#')) reads++;
      return next(args);
    },
    { step: 'initialize', name: `countHeadReads${Math.random()}` },
  );
  return () => reads;
}

describe('the template head an enqueue reads', () => {
  let api: Harness;
  /** Another warm api function: its own store over the same table. */
  let other: DynamoTemplateStore;
  let n = 0;
  const enqueue = (template: Record<string, unknown>) =>
    api.call(enqueueEvent(body(template), { key: `k-${n++}` }));

  beforeEach(async () => {
    api = await apiHarness();
    other = new DynamoTemplateStore(api.documents, api.tableName, api.clock.now);
    expect(
      (await api.call(apiEvent({ method: 'PUT', path: '/v1/templates/hello', body: CONTENT }))).status,
    ).toBe(201);
  });

  it('is read once per bound by a warm function, not once per enqueue', async () => {
    const reads = countHeadReads(api.documents);
    for (let i = 0; i < 5; i++) expect((await enqueue({ name: 'hello' })).status).toBe(202);
    expect(reads()).toBe(1);
    api.clock.advance(TEMPLATE_HEAD_MAX_AGE_MS);
    expect((await enqueue({ name: 'hello' })).status).toBe(202);
    expect(reads()).toBe(2);
  });

  it("shows another function's archive and new version within the bound, and never a version it has not read", async () => {
    expect((await enqueue({ name: 'hello' })).json.template).toMatchObject({ version: 1 });
    await other.putVersion({
      tenant: 'acme',
      name: 'hello',
      content: CONTENT,
      description: null,
      now: api.clock.now(),
    });
    // Named, the new version is read through at once.
    expect((await enqueue({ name: 'hello', version: 2 })).status).toBe(202);
    api.clock.advance(TEMPLATE_HEAD_MAX_AGE_MS);
    expect((await enqueue({ name: 'hello' })).json.template).toMatchObject({ version: 2 });

    await other.archive('acme', 'hello', api.clock.now());
    api.clock.advance(TEMPLATE_HEAD_MAX_AGE_MS);
    const refused = await enqueue({ name: 'hello' });
    expect(refused.status).toBe(422);
    expect(refused.json.errors).toEqual([
      { field: '/template/name', message: 'is archived: no new message may use it' },
    ]);
  });

  it("shows this function's own new version and archive at once", async () => {
    expect((await enqueue({ name: 'hello' })).status).toBe(202);
    await api.call(apiEvent({ method: 'PUT', path: '/v1/templates/hello', body: CONTENT }));
    expect((await enqueue({ name: 'hello' })).json.template).toMatchObject({ version: 2 });
    await api.call(apiEvent({ method: 'DELETE', path: '/v1/templates/hello' }));
    expect((await enqueue({ name: 'hello' })).status).toBe(422);
  });
});
