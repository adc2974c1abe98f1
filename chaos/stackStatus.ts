import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { messagePk } from '../lambdas/store/messageRecord.js';
import { KEY } from '../lambdas/store/tableLayout.js';
import { callApi } from './callApi.js';
import type { ChaosTenant } from './client.js';
import type { CurrentStack } from './currentStack.js';

/*
 * What the stack holds now, as the run looks at it from outside: which non-terminal statuses are
 * left (the wait for the end), how many messages each status holds (before a kill), and what the
 * table itself holds for a message the API does not show.
 */

/**
 * For a message the API does not know: what the table itself holds under its partition (item kinds
 * and the state record's status), read past the API, so that a loss tells "never stored" apart from
 * "stored, but the API does not show it".
 */
export async function itemsInTable(stacks: CurrentStack, id: string): Promise<string> {
  const stack = await stacks.get();
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: stack.endpoints.dynamodbEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const { Items = [] } = await client.send(
      new QueryCommand({
        TableName: stack.endpoints.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': KEY.partition },
        ExpressionAttributeValues: { ':pk': { S: messagePk(id) } },
        ConsistentRead: true,
      }),
    );
    if (Items.length === 0) return 'nothing';
    return Items.map(
      (item) => `${item[KEY.sort]?.S ?? '?'}${item.status?.S ? ` (${item.status.S})` : ''}`,
    ).join(', ');
  } catch (error) {
    return `unreadable (${error instanceof Error ? error.name : String(error)})`;
  } finally {
    client.destroy();
  }
}

const NON_TERMINAL = ['scheduled', 'sending', 'retrying'] as const;

/**
 * The non-terminal statuses that still hold a message, from a one-item page of the API's listing of
 * each: the wait only needs to know when none is left, and counting (a listing fans out over every
 * index shard for each page) every 2 s would load the stack it waits for.
 */
export async function nonTerminal(
  stacks: CurrentStack,
  tenants: readonly ChaosTenant[] = [{ name: 'local' }],
): Promise<string[]> {
  const left = new Set<string>();
  for (const tenant of tenants) {
    for (const status of NON_TERMINAL) {
      const answer = await callApi(
        stacks,
        'GET',
        `/v1/messages?status=${status}&limit=1`,
        undefined,
        keyHeader(tenant),
      );
      const items = Array.isArray(answer.body.items) ? answer.body.items.length : 0;
      if (items > 0 || typeof answer.body.next_cursor === 'string') left.add(status);
    }
  }
  return NON_TERMINAL.filter((status) => left.has(status));
}

/** The message count of each status, summed over the tenants (each counted up to 500). */
export async function statesNow(
  stacks: CurrentStack,
  tenants: readonly ChaosTenant[] = [{ name: 'local' }],
): Promise<Record<string, number>> {
  const states: Record<string, number> = {};
  for (const status of [...NON_TERMINAL, 'sent']) {
    states[status] = 0;
    for (const tenant of tenants) states[status] += await countStatus(stacks, tenant, status, 500);
  }
  return states;
}

/** The header of a tenant's own key (none: the key the stack seeds). */
function keyHeader(tenant: ChaosTenant): Record<string, string> {
  return tenant.apiKey === undefined ? {} : { authorization: `Bearer ${tenant.apiKey}` };
}

async function countStatus(
  stacks: CurrentStack,
  tenant: ChaosTenant,
  status: string,
  atMost: number,
): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const query = `status=${status}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const answer = await callApi(stacks, 'GET', `/v1/messages?${query}`, undefined, keyHeader(tenant));
    const items = answer.body.items;
    count += Array.isArray(items) ? items.length : 0;
    cursor = typeof answer.body.next_cursor === 'string' ? answer.body.next_cursor : undefined;
  } while (cursor && count < atMost);
  return count;
}

export function describeStates(states: Record<string, number>): string {
  return Object.entries(states)
    .map(([status, count]) => `${status} ${count >= 500 ? '500+' : count}`)
    .join(', ');
}
