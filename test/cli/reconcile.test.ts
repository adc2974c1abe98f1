import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonStyle, type MemoryOutput, memoryOutput, terminalOutput } from '../../cli/output.js';
import {
  type ReconcileDeps,
  type ReconcileReport,
  reconcile,
  reconcileClean,
} from '../../cli/reconcileCommand.js';
import { relaysDeps } from '../../cli/relaysCommands.js';
import type { ShardPosition } from '../../lambdas/core/listPages.js';
import { MESSAGE_STATUSES } from '../../lambdas/core/messageStatus.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { byStatusPk } from '../../lambdas/store/messageRecord.js';
import { documentClient, emulatorEnv, freshTable } from '../support/awsLocal.js';
import { messageId, runMain, type SeedMessage, seedMessages, stateRecord } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const minutesAgo = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000).toISOString();

/** 14 messages of two tenants; #20 was created before the window; #4 and #5 are stuck. */
const SEEDS: SeedMessage[] = [
  { id: messageId(1), status: 'sent', createdAt: minutesAgo(100), tags: { kind: 'invoice' } },
  { id: messageId(2), status: 'sent', createdAt: minutesAgo(90), tags: { kind: 'invoice' } },
  { id: messageId(3), status: 'dead', createdAt: minutesAgo(80), tags: { kind: 'welcome' } },
  // scheduled, due 30 min ago: overdue beyond the 5-minute grace
  { id: messageId(4), status: 'scheduled', createdAt: minutesAgo(70), sendAt: minutesAgo(30) },
  // sending, its lease ran out 20 min ago
  {
    id: messageId(5),
    status: 'sending',
    createdAt: minutesAgo(60),
    dueAt: minutesAgo(20),
    tags: { kind: 'invoice' },
  },
  // retrying, due again in 1 min: not stuck
  { id: messageId(6), status: 'retrying', createdAt: minutesAgo(50), dueAt: minutesAgo(-1) },
  // scheduled for tomorrow: not stuck
  { id: messageId(7), status: 'scheduled', createdAt: minutesAgo(40), sendAt: minutesAgo(-1440) },
  { id: messageId(8), status: 'cancelled', createdAt: minutesAgo(30) },
  { id: messageId(9), status: 'unknown', createdAt: minutesAgo(20) },
  { id: messageId(10), status: 'failed', createdAt: minutesAgo(10), tags: { kind: 'welcome' } },
  { id: messageId(11), tenant: 'globex', status: 'sent', createdAt: minutesAgo(15) },
  { id: messageId(12), tenant: 'globex', status: 'expired', createdAt: minutesAgo(14) },
  { id: messageId(13), tenant: 'globex', status: 'superseded', createdAt: minutesAgo(13) },
  { id: messageId(20), status: 'sent', createdAt: minutesAgo(3000) },
];

let deps: ReconcileDeps;
let store: DynamoApiStore;
/** One run over the last 24 hours (the default window), shared by the tests that only read it. */
let day: { report: ReconcileReport; out: MemoryOutput };
/**
 * One run of globex's last 14 minutes, shared by the two tests that read it: a run is some 430
 * index queries a tenant, and the report does not depend on the sink (decision 0300).
 */
let globex: { report: ReconcileReport; out: MemoryOutput };

beforeAll(async () => {
  const { tableName } = await freshTable();
  const documents = documentClient();
  await seedMessages(documents, tableName, SEEDS);
  store = new DynamoApiStore(documents, tableName);
  deps = {
    documents,
    tableName,
    dueIndex: new DynamoDueIndex(documents, tableName),
    now: () => NOW,
    tenants: async () => ['acme', 'globex'],
    graceSeconds: 300,
    retentionDays: 30,
    relays: relaysDeps({ documents, tableName, names: ['default'], namesFrom: 'stack', now: () => NOW }),
  };
  const out = memoryOutput();
  day = { report: await reconcile(deps, {}, out), out };
  const one = memoryOutput();
  globex = { report: await reconcile(deps, { tenant: 'globex', since: '14m' }, one), out: one };
});

/** The API's view: how many messages GET /v1/messages?status= lists for a tenant, page after page. */
async function apiCount(
  tenant: string,
  status: (typeof MESSAGE_STATUSES)[number],
  since: string,
): Promise<number> {
  let positions: readonly ShardPosition[] = [];
  let count = 0;
  for (;;) {
    const page = await store.listMessages({ tenant, status, limit: 100, positions, now: NOW });
    count += page.items.filter((item) => item.created_at >= since).length;
    positions = page.positions;
    if (positions.every((position) => position.kind === 'done')) return count;
  }
}

describe('postdate reconcile', () => {
  it('counts accepted, pending, in flight, dispatched and terminal messages in the window', async () => {
    const { report } = day;
    expect(report.since).toBe(minutesAgo(24 * 60));
    expect(report.totals).toEqual({
      accepted: 13,
      pending: 2,
      inFlight: 2,
      dispatched: 2 + 3 + 1 + 1 + 1, // sending, retrying, sent ×3, failed, dead, unknown
      terminal: 9,
      byStatus: {
        scheduled: 2,
        sending: 1,
        retrying: 1,
        sent: 3,
        failed: 1,
        dead: 1,
        cancelled: 1,
        superseded: 1,
        expired: 1,
        unknown: 1,
        suppressed: 0,
      },
    });
    expect(report.byTenant.globex).toMatchObject({ accepted: 3, terminal: 3, dispatched: 1 });
    expect(report.byTag['kind=invoice']).toMatchObject({ accepted: 3, dispatched: 3, terminal: 2 });
    expect(report.byTag['kind=welcome']?.byStatus).toMatchObject({ dead: 1, failed: 1 });
  });

  it("agrees with the API's listing for every tenant and status", async () => {
    const { report } = day;
    const pairs = ['acme', 'globex'].flatMap((tenant) =>
      MESSAGE_STATUSES.map((status) => ({ tenant, status })),
    );
    const apiView = await Promise.all(
      pairs.map(({ tenant, status }) => apiCount(tenant, status, report.since)),
    );
    expect(pairs.map(({ tenant, status }) => report.byTenant[tenant]?.byStatus[status])).toEqual(apiView);
    expect(report.indexCheck.consistent).toBe(true);
  });

  it('lists exactly the non-terminal messages overdue beyond the sweep grace, oldest first', async () => {
    const { report, out } = day;
    expect(report.stuck.map((row) => [row.id, row.tenant, row.status])).toEqual([
      [messageId(4), 'acme', 'scheduled'],
      [messageId(5), 'acme', 'sending'],
    ]);
    expect(report.stuck[0]?.overdueMs).toBe(30 * 60_000);
    expect(reconcileClean(report)).toBe(false);
    expect(out.text()).toContain('stuck (non-terminal, overdue by more than 300 s)');
    expect(out.text()).toContain(messageId(4));
  });

  it('says which tenants it read, and how to reach one that only enqueues through the outbox helper', async () => {
    // Every tenant here has an API key: a tenant writing only through postdate/outbox has none.
    expect(day.out.text()).toContain(
      'acme, globex (every tenant with an API key; --tenant T for one that enqueues only through postdate/outbox)',
    );
    expect(globex.out.text()).toMatch(/^tenants: globex$/m);
  });

  it('narrows to one tenant and a shorter window', async () => {
    const { report } = globex;
    expect(report.tenants).toEqual(['globex']);
    expect(report.totals.accepted).toBe(2);
    expect(report.stuck).toEqual([]);
    expect(reconcileClean(report)).toBe(true);
  });

  it('does not list a message being sent (live lease) whose due entry the claim left at its send time', async () => {
    const { tableName } = await freshTable();
    const documents = documentClient();
    const claimed = stateRecord({
      id: messageId(31),
      status: 'sending',
      createdAt: minutesAgo(60),
      sendAt: minutesAgo(60),
    });
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...claimed, lease_owner: 'sender-1', lease_until: minutesAgo(-2) },
      }),
    );
    const isolated = {
      ...deps,
      documents,
      tableName,
      dueIndex: new DynamoDueIndex(documents, tableName),
      tenants: async () => ['acme'],
    };
    expect((await reconcile(isolated, {}, memoryOutput())).stuck).toEqual([]);
    // Its lease ran out 20 minutes ago: stuck, overdue since the lease's end.
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...claimed, lease_owner: 'sender-1', lease_until: minutesAgo(20) },
      }),
    );
    const stuck = (await reconcile(isolated, {}, memoryOutput())).stuck;
    expect(stuck.map((row) => [row.id, row.overdueMs])).toEqual([[messageId(31), 20 * 60_000]]);
  });

  it('reports a record whose by_status key disagrees with its status', async () => {
    const { tableName } = await freshTable();
    const documents = documentClient();
    const record = stateRecord({ id: messageId(30), status: 'sent', createdAt: minutesAgo(5) });
    // A writer that changed the status but not the index key.
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...record, lst_pk: byStatusPk('acme', 'retrying', record.id) },
      }),
    );
    const out = memoryOutput();
    const report = await reconcile({ ...deps, documents, tableName, tenants: async () => ['acme'] }, {}, out);
    expect(report.indexCheck.mismatches).toEqual([
      { tenant: 'acme', status: 'retrying', records: 0, index: 1 },
      { tenant: 'acme', status: 'sent', records: 1, index: 0 },
    ]);
    expect(reconcileClean(report)).toBe(false);
    expect(out.warnings.join('\n')).toContain('by_status acme/retrying: index 1, records 0');
  });

  // Decision 0205: a record past its retention is gone from every read, whenever DynamoDB deletes it.
  it('counts no record past its retention, on either side of the index check (through the entry)', async () => {
    const { tableName } = await freshTable();
    const documents = documentClient();
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();
    const [, cancelled, sent] = await seedMessages(documents, tableName, [
      { id: messageId(40), status: 'scheduled', createdAt: hoursAgo(3), sendAt: hoursAgo(-24) },
      { id: messageId(41), status: 'cancelled', createdAt: hoursAgo(2) },
      { id: messageId(42), status: 'sent', createdAt: hoursAgo(1) },
    ]);
    const ttlNow = Math.floor(Date.now() / 1000);
    // The cancelled one's retention ran out a minute ago (DynamoDB has not deleted it yet); the sent
    // one's runs a day more.
    for (const [record, expiresAt] of [
      [cancelled, ttlNow - 60],
      [sent, ttlNow + 86_400],
    ] as const) {
      await documents.send(
        new PutCommand({ TableName: tableName, Item: { ...record, expires_at: expiresAt } }),
      );
    }
    // The entry (the CLI's main, in this process): the settings as the bin reads them.
    const run = await runMain(
      ['--table', tableName, '--json', 'reconcile', '--tenant', 'acme'],
      emulatorEnv(),
    );
    expect(run.stderr).toBe('');
    // The CLI's JSON style: snake_case keys (cli/output.ts).
    const report = JSON.parse(run.stdout);
    expect(report.totals).toMatchObject({
      accepted: 2,
      pending: 1,
      terminal: 1,
      by_status: { scheduled: 1, sent: 1, cancelled: 0 },
    });
    expect(report.index_check).toEqual({ consistent: true, mismatches: [], missing_records: [] });
    expect(run.code).toBe(0);
  }, 90_000);

  // Decision 0212: once DynamoDB's TTL deleted a record, its indexes name it a moment more.
  it('calls an id without a record gone when it was created more than the retention ago, else missing (through the entry)', async () => {
    const { tableName } = await freshTable();
    const documents = documentClient();
    const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
    await seedMessages(documents, tableName, [{ id: messageId(50), status: 'sent', createdAt: daysAgo(1) }]);
    // The index keys a deleted record leaves behind until the indexes catch up (DynamoDB Local's
    // never lag): an item of the message's partition that is not its state record.
    const lingering = async (seed: SeedMessage) => {
      const { pk, tnt_pk, tnt_sk, lst_pk, lst_sk } = stateRecord(seed);
      await documents.send(
        new PutCommand({
          TableName: tableName,
          Item: { pk, sk: 'INDEX-LAG', tnt_pk, tnt_sk, lst_pk, lst_sk },
        }),
      );
    };
    await lingering({ id: messageId(51), status: 'sent', createdAt: daysAgo(31) });
    const reconcileBin = () =>
      runMain(['--table', tableName, '--json', 'reconcile', '--tenant', 'acme', '--since', '60d'], {
        ...emulatorEnv(),
        POSTDATE_RETENTION_DAYS: '30',
      });
    const gone = await reconcileBin();
    expect(gone.stderr).toBe('');
    const report = JSON.parse(gone.stdout);
    expect(report.totals).toMatchObject({ accepted: 1, by_status: { sent: 1 } });
    expect(report.index_check).toEqual({ consistent: true, mismatches: [], missing_records: [] });
    expect(gone.code).toBe(0);

    // Created less than the retention ago, its record cannot have expired: a defect, still reported.
    await lingering({ id: messageId(52), status: 'sent', createdAt: daysAgo(29) });
    const missing = await reconcileBin();
    expect(JSON.parse(missing.stdout).index_check).toMatchObject({
      consistent: false,
      missing_records: [messageId(52)],
    });
    expect(missing.code).toBe(1);
  }, 90_000);
});

/** A stream that keeps what is written to it; `isTTY` as a terminal's or a pipe's. */
function capturedStream(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const stream = {
    isTTY,
    write(chunk: string) {
      text += chunk;
      return true;
    },
  };
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}

describe('postdate reconcile while it reads (decision 0268)', () => {
  /** 250 messages of one tenant in the window: three BatchGets' worth of records. */
  let many: ReconcileDeps;
  beforeAll(async () => {
    const { tableName } = await freshTable();
    const documents = documentClient();
    const seeds = Array.from({ length: 250 }, (_, n) => ({
      id: messageId(1000 + n),
      status: 'sent' as const,
      createdAt: minutesAgo(60 + (n % 50)),
    }));
    await seedMessages(documents, tableName, seeds);
    many = {
      ...deps,
      documents,
      tableName,
      dueIndex: new DynamoDueIndex(documents, tableName),
      tenants: async () => ['acme'],
      relays: relaysDeps({ documents, tableName, names: ['default'], namesFrom: 'stack', now: () => NOW }),
    };
  });

  /** One run through the terminal sink the bin uses, stdout a pipe, stderr a terminal or not. */
  async function run(options: { json: boolean; stderrIsTTY: boolean }) {
    const stdout = capturedStream(false);
    const stderr = capturedStream(options.stderrIsTTY);
    const out = terminalOutput({ json: options.json, stdout: stdout.stream, stderr: stderr.stream, env: {} });
    const report = await reconcile(many, {}, out);
    return { stdout: stdout.text(), stderr: stderr.text(), report };
  }

  it("shows on a terminal's stderr what it has counted so far, as export's bar does; stdout unchanged", async () => {
    const quiet = memoryOutput();
    await reconcile(many, {}, quiet);
    const { stdout, stderr } = await run({ json: false, stderrIsTTY: true });
    const steps = [...stderr.matchAll(/\] (\d+)\/250 messages counted/g)].map((match) => Number(match[1]));
    expect(steps).toEqual([0, 100, 200, 250]);
    // The bar is cleared at the end, and stdout holds the report only, line for line.
    expect(stderr.endsWith('\r\x1b[2K')).toBe(true);
    expect(stdout.trimEnd().split('\n')).toEqual(quiet.lines);
    expect(stdout).toContain('acme');
  });

  it('draws nothing with --json, and stdout is the one document; nothing on a stderr that is no terminal', async () => {
    const json = await run({ json: true, stderrIsTTY: true });
    expect(json.stderr).toBe('');
    // The run's own report, as every sink styles it (cli/output.ts): no second read of 250 records.
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(JSON.stringify(jsonStyle(json.report))));
    expect(JSON.parse(json.stdout)).toMatchObject({ totals: { accepted: 250, terminal: 250 } });
    const piped = await run({ json: false, stderrIsTTY: false });
    expect(piped.stderr).toBe('');
  });
});
