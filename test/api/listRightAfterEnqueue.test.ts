/**
 * A message listed right after its enqueue, as docs/api.md's examples and a newcomer's script do it
 * (`POST /v1/messages`, then at once `GET /v1/messages?status=scheduled&limit=1`): the api handler
 * on DynamoDB Local, whose indexes are written with the item. Covers lambdas/store/apiStore.ts
 * (`listMessages`) and lambdas/core/listPages.ts through the route. Decision 0255: once, on a loaded
 * machine, such a listing answered `{"items":[],"next_cursor":null}` for a message due in 5 s.
 */
import { describe, expect, it } from 'vitest';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;
interface Page {
  readonly items: { id: string; status: string }[];
  readonly next_cursor: string | null;
}

let keys = 0;
/** Enqueues as api.md's example does: the request, then the same again (200, replayed) and a GET. */
async function enqueue(api: Harness, overrides: Record<string, unknown>): Promise<string> {
  api.clock.advance(1);
  const event = enqueueEvent(validBody(overrides), { key: `right-after-${++keys}` });
  const answer = await api.call(event);
  expect(answer.status, JSON.stringify(answer.json)).toBe(202);
  const id = answer.json.id as string;
  expect((await api.call(event)).status).toBe(200);
  expect((await api.call(getEvent(id))).json).toMatchObject({ id, status: 'scheduled' });
  return id;
}

async function list(api: Harness, query: Record<string, string>): Promise<Page> {
  const answer = await api.call(
    apiEvent({ method: 'GET', path: '/v1/messages', routeKey: 'GET /v1/messages', query }),
  );
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json as unknown as Page;
}

const inAnHour = (api: Harness) => new Date(api.clock.now().getTime() + 3_600_000).toISOString();

describe('a message listed right after its enqueue', () => {
  it('is the first of `status=scheduled&limit=1` and of the unfiltered listing every time, while other messages of the tenant are cancelled and moved', async () => {
    const api = await apiHarness();
    // Ten rounds, not the forty of decision 0255 (26 s; decision 0263): the race those looked for
    // cannot happen here, DynamoDB Local writing an index with its item, and the breaks that this
    // test catches (the merge sorting oldest first) fail it at round 0. Ten still cancel five older
    // messages and move five beside a listing.
    const ROUNDS = 10;
    // Older messages whose status changes run beside each listing (their index entries move).
    const older: string[] = [];
    for (let i = 0; i < ROUNDS; i++) older.push(await enqueue(api, { send_at: inAnHour(api) }));

    const missed: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const id = await enqueue(api, { delay_seconds: 5 });
      const other = older[round] as string;
      const [scheduled, all] = await Promise.all([
        list(api, { status: 'scheduled', limit: '1' }),
        list(api, { limit: '1' }),
        round % 2 === 0
          ? api.call(
              apiEvent({
                method: 'DELETE',
                path: `/v1/messages/${other}`,
                routeKey: 'DELETE /v1/messages/{id}',
                pathParameters: { id: other },
              }),
            )
          : api.call(
              apiEvent({
                method: 'PATCH',
                path: `/v1/messages/${other}`,
                routeKey: 'PATCH /v1/messages/{id}',
                pathParameters: { id: other },
                body: { send_at: inAnHour(api) },
              }),
            ),
      ]);
      if (scheduled.items[0]?.id !== id) missed.push(`round ${round}: ${JSON.stringify(scheduled)}`);
      if (all.items[0]?.id !== id) missed.push(`round ${round}, unfiltered: ${JSON.stringify(all)}`);
      expect(scheduled.next_cursor).not.toBeNull();
    }
    expect(missed).toEqual([]);
  });

  it('is gone from `status=scheduled` once the sender has claimed it at its send time: with nothing else scheduled the page is `{"items":[],"next_cursor":null}`, the answer the newcomer saw', async () => {
    const api = await apiHarness();
    const id = await enqueue(api, { delay_seconds: 5 });
    expect((await list(api, { status: 'scheduled', limit: '1' })).items.map((item) => item.id)).toEqual([id]);

    // Five seconds on, the sender receives the copy SQS delayed and claims the message.
    api.clock.advance(5_000);
    const observed = await readStateRecord(api.documents, api.tableName, id);
    if (observed === undefined || !('status' in observed)) throw new Error('no record');
    const now = api.clock.now();
    const claim = await new DynamoSenderStore(api.documents, api.tableName).claim({
      observed,
      owner: 'sender',
      now,
      leaseUntil: new Date(now.getTime() + 300_000),
    });
    expect(claim.outcome).toBe('applied');

    expect(await list(api, { status: 'scheduled', limit: '1' })).toEqual({ items: [], next_cursor: null });
    expect((await list(api, { status: 'sending', limit: '1' })).items.map((item) => item.id)).toEqual([id]);
  });
});
