import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { RECORD_LAYOUT } from '../../lambdas/core/recordLayout.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { apiHarness } from './apiHarness.js';
import { enqueueEvent, getEvent, validBody } from './events.js';

/**
 * Decision 0166: an application's outbox helper newer than its stack writes records this stack
 * refuses (a newer layout, a status it does not know). The message exists: GET must not answer 404
 * as for one that does not, nor show it by rules this stack does not have, but say that the stack
 * must be upgraded — to the message's own tenant only.
 */
type Harness = Awaited<ReturnType<typeof apiHarness>>;

describe('GET /v1/messages/{id} of a message a newer writer made', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  async function madeNewer(key: string, change: Record<string, unknown>): Promise<string> {
    const created = await api.call(enqueueEvent(validBody(), { key, tenant: 'acme' }));
    const id = String(created.json.id);
    const names = Object.fromEntries(Object.keys(change).map((name) => [`#${name}`, name]));
    const values = Object.fromEntries(Object.entries(change).map(([name, value]) => [`:${name}`, value]));
    await api.documents.send(
      new UpdateCommand({
        TableName: api.tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
        UpdateExpression: `SET ${Object.keys(change)
          .map((name) => `#${name} = :${name}`)
          .join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return id;
  }

  it('answers 501 newer-writer naming the upgrade, for a newer layout and for an unknown status', async () => {
    const newer = await madeNewer('newer-layout', { layout: RECORD_LAYOUT + 1 });
    const held = await madeNewer('unknown-status', { status: 'held' });

    for (const [id, reason] of [
      [newer, `layout ${RECORD_LAYOUT + 1} is newer than this stack's ${RECORD_LAYOUT}`],
      [held, 'status "held" is not one this stack knows'],
    ] as const) {
      const response = await api.call(getEvent(id, 'acme'));
      expect(response.status).toBe(501);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.json).toMatchObject({ type: 'urn:postdate:problem:newer-writer', status: 501 });
      expect(response.json.detail).toContain(reason);
      expect(response.json.detail).toMatch(/upgrade the stack/i);
    }
  });

  it('answers 404 to another tenant, as for any message that is not theirs', async () => {
    const held = await madeNewer('unknown-status-theirs', { status: 'held' });
    expect((await api.call(getEvent(held, 'globex'))).status).toBe(404);
  });
});
