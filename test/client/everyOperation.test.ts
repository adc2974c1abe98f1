/**
 * The typed client covers the whole API (issue 29): one method per operation of docs/openapi.json,
 * named by its `operationId`, and the routes beyond messages answer through their methods on the
 * local stack as the API documents them.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostdateClient, type PostdateClient } from '../../lambdas/client/index.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';

const API_KEY = 'pd_client-every-operation-01';

function operationIds(): string[] {
  const document = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  return Object.values(document.paths).flatMap((item) =>
    Object.values(item).map((operation) => operation.operationId ?? '(an operation without an id)'),
  );
}

describe('postdate/client: every operation', () => {
  it('has a method for every operationId of the OpenAPI document', () => {
    const client = createPostdateClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'pd_x' });
    const methods = Object.keys(client).filter(
      (key) => typeof (client as unknown as Record<string, unknown>)[key] === 'function',
    );
    const ids = operationIds();
    expect(ids.length).toBeGreaterThan(20);
    expect(ids.filter((id) => !methods.includes(id))).toEqual([]);
  });

  describe('against the local stack', () => {
    let stack: LocalStack;
    let postdate: PostdateClient;

    beforeAll(async () => {
      const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
      stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
      postdate = createPostdateClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
    }, 120_000);

    afterAll(async () => {
      await stack?.stop();
    });

    it('health and the document', async () => {
      expect(await postdate.health()).toEqual({ status: 'ok' });
      expect(await postdate.openapi()).toMatchObject({ openapi: expect.any(String) });
    });

    it('templates: put, get, a version, render, list, archive', async () => {
      const stored = await postdate.putTemplate('hello', { subject: 'Hi {{name}}', text: 'Hello {{name}}' });
      expect(stored).toMatchObject({ name: 'hello', version: 1 });
      expect(await postdate.getTemplate('hello')).toMatchObject({ version: 1 });
      expect(await postdate.getTemplateVersion('hello', 1)).toMatchObject({ subject: 'Hi {{name}}' });
      expect(await postdate.renderTemplate('hello', { data: { name: 'Ada' } })).toMatchObject({
        subject: 'Hi Ada',
        text: 'Hello Ada',
      });
      expect((await postdate.listTemplates()).items.map((item) => item.name)).toContain('hello');
      expect(await postdate.archiveTemplate('hello')).toMatchObject({ name: 'hello' });
    });

    it('suppressions: put, list, delete', async () => {
      await postdate.putSuppression('gone@example.com', { reason: 'manual' });
      expect((await postdate.listSuppressions()).items.map((item) => item.address)).toContain(
        'gone@example.com',
      );
      expect(await postdate.deleteSuppression('gone@example.com')).toMatchObject({
        address: 'gone@example.com',
      });
    });

    it('webhooks: create, get, list, test, deliveries, rotate, delete', async () => {
      const created = await postdate.createWebhook({ url: 'https://hooks.example.com/postdate' });
      expect(created.secret).toMatch(/^whsec_/);
      expect(await postdate.getWebhook(created.id)).toMatchObject({ id: created.id });
      expect((await postdate.listWebhooks()).items.map((item) => item.id)).toContain(created.id);
      const delivery = await postdate.testWebhook(created.id);
      expect((await postdate.listWebhookDeliveries(created.id)).items.map((item) => item.id)).toContain(
        delivery.id,
      );
      expect((await postdate.rotateWebhookSecret(created.id)).secret).not.toBe(created.secret);
      expect(await postdate.deleteWebhook(created.id)).toEqual({ id: created.id, deleted: true });
    });
  });
});
