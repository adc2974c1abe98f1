/**
 * `postdate messages list --json` as a script reads it (cli/messagesCommands.ts over the API's
 * listing, lambdas/store/apiStore.ts): every message once across many pages of the index, `truncated`
 * exactly when more matched than `--limit`, and mail enqueued while it pages left out. Decision 0247.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ListReport, type MessagesDeps, messagesList } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { byStatusPk } from '../../lambdas/store/messageRecord.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { messageId, type SeedMessage, seedMessages, stateRecord } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const at = (seconds: number) => new Date(NOW.getTime() - 86_400_000 + seconds * 1000).toISOString();
const COUNT = 230;

const seeds: SeedMessage[] = Array.from({ length: COUNT }, (_, i) => ({
  id: messageId(i + 1),
  status: i % 4 === 0 ? 'sent' : 'scheduled',
  createdAt: at(i),
}));
const newestFirst = [...seeds].reverse().map((seed) => seed.id);

let deps: MessagesDeps;
let arrivals = 0;

beforeAll(async () => {
  const { tableName } = await freshTable();
  const documents = documentClient();
  await seedMessages(documents, tableName, seeds);
  // The newest 120 `sent` entries of by_status are stale (the index is eventually consistent): their
  // records say scheduled, so the listing drops them and its first pages come short.
  const stale = seeds.filter((seed) => seed.status === 'scheduled').slice(-120);
  for (let start = 0; start < stale.length; start += 25) {
    const items = stale
      .slice(start, start + 25)
      .map((seed) => ({ ...stateRecord(seed), lst_pk: byStatusPk('acme', 'sent', seed.id) }));
    await documents.send(
      new BatchWriteCommand({
        RequestItems: { [tableName]: items.map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
  }
  const store = new DynamoApiStore(documents, tableName);
  // Mail keeps coming while the command pages: one new message after every page it reads.
  const arriving: ApiStore = Object.assign(Object.create(store) as ApiStore, {
    listMessages: async (query: Parameters<ApiStore['listMessages']>[0]) => {
      const page = await store.listMessages(query);
      arrivals += 1;
      await seedMessages(documents, tableName, [
        { id: messageId(10_000 + arrivals), status: 'scheduled', createdAt: at(COUNT + arrivals) },
      ]);
      return page;
    },
  });
  deps = {
    documents,
    tableName,
    store: arriving,
    now: () => NOW,
    tenants: async () => ['acme'],
    retentionDays: 30,
    maxAttempts: 8,
    messageIdDomain: 'mail.example.com',
  };
});

/** Every message there is now, newest first: the seeds and the arrivals of earlier runs. */
function existing(): string[] {
  const arrived = Array.from({ length: arrivals }, (_, i) => messageId(10_000 + arrivals - i));
  return [...arrived, ...newestFirst];
}

async function listJson(options: Parameters<typeof messagesList>[1]): Promise<ListReport> {
  const out = memoryOutput({ json: true });
  await messagesList(deps, options, out);
  expect(out.documents).toHaveLength(1);
  return out.documents[0] as ListReport;
}

describe('postdate messages list --json over many pages', () => {
  it('prints every message that existed when it started, once, newest first, and says nothing was left out', async () => {
    const before = existing();
    const report = await listJson({ limit: 10_000 });
    expect(report.items.map((row) => row.id)).toEqual(before);
    expect(report.truncated).toBe(false);
    expect(Object.keys(report.items[0] ?? {}).sort()).toEqual(
      [
        'attempts',
        'created_at',
        'discarded_at',
        'id',
        'last_error',
        'rev',
        'send_at',
        'status',
        'tags',
        'tenant',
        'updated_at',
      ].sort(),
    );
  });

  it('by status, the same across the by_status shards, past pages the stale index entries made short', async () => {
    const report = await listJson({ status: 'sent', limit: 10_000 });
    expect(report.items.map((row) => row.id)).toEqual(
      newestFirst.filter((id) => seeds.find((seed) => seed.id === id)?.status === 'sent'),
    );
  });

  it('says truncated exactly when more matched than --limit, a page boundary included', async () => {
    for (const [more, truncated] of [
      [0, false],
      [-1, true],
      [100 - COUNT, true],
    ] as const) {
      const before = existing();
      const limit = before.length + more;
      const report = await listJson({ limit });
      expect(report.items.map((row) => row.id)).toEqual(before.slice(0, limit));
      expect([limit, report.truncated]).toEqual([limit, truncated]);
    }
  });
});
