import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createApiKey } from '../lambdas/keys/apiKeys.js';
import { callApi } from './callApi.js';
import type { ChaosTenant } from './client.js';
import type { CurrentStack } from './currentStack.js';
import type { WebhookReceiver } from './webhookReceiver.js';

/**
 * The chaos run's tenants and their webhook endpoints: the stack's own key (tenant `local`) and a
 * second tenant whose key the harness writes into the table as `postdate keys create` would; each
 * tenant subscribes its own path of the receiver to every event type. Done once, after the first
 * start: the keys and endpoints are in the table, which every restart keeps.
 */
export const SECOND_TENANT = { name: 'chaos-b', apiKey: 'pd_chaos-run-key-tenant-b-0001' } as const;

export async function setUpWebhookTenants(
  stacks: CurrentStack,
  receiver: WebhookReceiver,
): Promise<readonly ChaosTenant[]> {
  const stack = await stacks.get();
  const dynamodb = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: stack.endpoints.dynamodbEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await createApiKey(DynamoDBDocumentClient.from(dynamodb), stack.endpoints.tableName, {
      tenant: SECOND_TENANT.name,
      secret: SECOND_TENANT.apiKey,
      now: new Date(),
    });
  } finally {
    dynamodb.destroy();
  }
  const tenants: ChaosTenant[] = [{ name: 'local' }, SECOND_TENANT];
  for (const tenant of tenants) {
    const auth: Record<string, string> =
      tenant.apiKey === undefined ? {} : { authorization: `Bearer ${tenant.apiKey}` };
    const created = await callApi(stacks, 'POST', '/v1/webhooks', { url: receiver.url(tenant.name) }, auth);
    if (created.status !== 201) {
      throw new Error(`POST /v1/webhooks for ${tenant.name} answered ${created.status}`);
    }
    receiver.setSecret(tenant.name, String(created.body.secret));
    // A POST retried after a lost answer may have made a second endpoint whose secret nobody saw:
    // remove every endpoint but the one whose secret the receiver holds.
    const listed = await callApi(stacks, 'GET', '/v1/webhooks', undefined, auth);
    const items = Array.isArray(listed.body.items) ? (listed.body.items as { id: string }[]) : [];
    for (const item of items) {
      if (item.id !== created.body.id)
        await callApi(stacks, 'DELETE', `/v1/webhooks/${item.id}`, undefined, auth);
    }
  }
  return tenants;
}
