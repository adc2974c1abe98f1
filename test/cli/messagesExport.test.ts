import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { type MessagesDeps, messagesShow } from '../../cli/messagesCommands.js';
import { type ExportedMessage, messagesExport, openLineSink } from '../../cli/messagesExport.js';
import { memoryOutput } from '../../cli/output.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { placeBody, storedBodyItem } from '../../lambdas/store/bodyContent.js';
import { byStatusPk, messagePk, shardOf } from '../../lambdas/store/messageRecord.js';
import { INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { messageId, type SeedMessage, seedMessages, stateRecord } from './cliFixtures.js';

/**
 * `postdate messages export` (DESIGN §6): every message created in [--since, --until), of the given
 * statuses, one JSON line each, read through the indexes of DynamoDB Local — exact counts.
 */

const NOW = new Date('2026-12-01T12:00:00.000Z');
const at = (hours: number) => new Date(NOW.getTime() - hours * 3_600_000).toISOString();
const STATUSES: readonly MessageStatus[] = ['scheduled', 'sent', 'dead', 'failed', 'cancelled', 'unknown'];
const SINCE = at(30);
const UNTIL = at(6);

/** 150 messages of two tenants, one every 20 minutes from 50 h ago, statuses in turn. */
const SEEDS: SeedMessage[] = Array.from({ length: 150 }, (_, n) => ({
  id: messageId(1000 + n),
  tenant: n % 3 === 0 ? 'globex' : 'acme',
  status: STATUSES[n % STATUSES.length] as MessageStatus,
  createdAt: new Date(NOW.getTime() - 50 * 3_600_000 + n * 20 * 60_000).toISOString(),
  attempts: n % STATUSES.length === 1 ? 1 : 0,
  history:
    n % STATUSES.length === 1
      ? [
          {
            at: new Date(NOW.getTime() - 50 * 3_600_000 + n * 20 * 60_000 + 1000).toISOString(),
            outcome: 'sent',
            code: '250',
            enhanced_code: '2.0.0',
            reply: '250 2.0.0 Ok: queued as 4BX',
            duration_ms: 42,
            provider_message_id: '4BX',
          },
        ]
      : [],
}));

const inRange = (seed: SeedMessage, statuses?: readonly MessageStatus[]) =>
  seed.createdAt >= SINCE &&
  seed.createdAt < UNTIL &&
  (statuses === undefined || statuses.includes(seed.status));

/** 'Hello', or for every fourth message a long text that the writers store compressed. */
const seedText = (id: string) =>
  (Number(id.slice(-4)) - 1000) % 4 === 0 ? `Hello ${id}. `.repeat(40) : 'Hello';

let deps: MessagesDeps;
let tableName: string;

beforeAll(async () => {
  ({ tableName } = await freshTable());
  const documents = documentClient();
  await seedMessages(documents, tableName, SEEDS);
  // Bodies for some of them (the others' bodies are gone, as after their TTL); every fourth one's
  // text is long enough to be stored compressed, as the api stores it (bodyContent.ts).
  for (const seed of SEEDS.filter((_, n) => n % 2 === 0)) {
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: storedBodyItem({
          pk: messagePk(seed.id),
          sk: 'BODY',
          fingerprint: 'f',
          created_at: seed.createdAt,
          from: 'ops@example.com',
          to: [`user-${seed.id}@example.org`],
          cc: [],
          bcc: [],
          reply_to: null,
          subject: `About ${seed.id}`,
          text: seedText(seed.id),
          html: null,
          headers: {},
        }),
      }),
    );
  }
  deps = {
    documents,
    tableName,
    store: new DynamoApiStore(documents, tableName),
    now: () => NOW,
    tenants: async () => ['acme', 'globex'],
    retentionDays: 30,
    maxAttempts: 8,
    messageIdDomain: 'mail.example.com',
  };
});

/** Runs the export into memory; answers the parsed lines, the report and the output sink. */
async function exportLines(options: Parameters<typeof messagesExport>[1]) {
  const lines: string[] = [];
  const out = memoryOutput();
  const report = await messagesExport(deps, options, { write: async (line) => void lines.push(line) }, out);
  return { messages: lines.map((line) => JSON.parse(line) as ExportedMessage), report, out };
}

describe('postdate messages export', () => {
  it('writes exactly the messages created in [since, until), each once, oldest first per tenant', async () => {
    const { messages, report, out } = await exportLines({ since: SINCE, until: UNTIL });
    const expected = SEEDS.filter((seed) => inRange(seed));
    expect(expected.length).toBe(72);
    expect(report).toMatchObject({ exported: 72, skipped: 0, since: SINCE, until: UNTIL });
    expect(messages.map((m) => m.id).sort()).toEqual(expected.map((seed) => seed.id).sort());
    for (const tenant of ['acme', 'globex']) {
      const created = messages.filter((m) => m.tenant === tenant).map((m) => m.created_at);
      expect(created).toEqual([...created].sort());
    }
    // The range's edges: a message created exactly at --since is in, one exactly at --until is out.
    expect(SEEDS.some((seed) => seed.createdAt === SINCE)).toBe(true);
    expect(messages.some((m) => m.created_at === SINCE)).toBe(true);
    expect(SEEDS.some((seed) => seed.createdAt === UNTIL)).toBe(true);
    expect(messages.some((m) => m.created_at === UNTIL)).toBe(false);
    // Progress counts up to the total it counted first; the count line goes to stderr.
    expect(out.progressSteps.at(-1)).toEqual({ label: 'exporting', done: 72, total: 72 });
    expect(out.warnings).toEqual([`exported 72 messages created in [${SINCE}, ${UNTIL})`]);
    expect(out.lines).toEqual([]);
  });

  it('narrows by status (several, comma-separated) and by tenant, with exact counts', async () => {
    const statuses: MessageStatus[] = ['sent', 'dead'];
    const { messages, report } = await exportLines({ since: SINCE, until: UNTIL, status: 'sent,dead' });
    const expected = SEEDS.filter((seed) => inRange(seed, statuses));
    expect(report.exported).toBe(expected.length);
    expect(messages.map((m) => m.id).sort()).toEqual(expected.map((seed) => seed.id).sort());

    const globex = await exportLines({ since: SINCE, until: UNTIL, tenant: 'globex' });
    expect(globex.report.exported).toBe(
      SEEDS.filter((seed) => inRange(seed) && seed.tenant === 'globex').length,
    );
    expect(globex.messages.every((m) => m.tenant === 'globex')).toBe(true);
  });

  it('carries state, attempts and replies, and no address and no body without --with-bodies', async () => {
    const { messages } = await exportLines({ since: SINCE, until: UNTIL, status: 'sent' });
    const sent = messages[0];
    expect(sent).toMatchObject({
      status: 'sent',
      attempts: 1,
      provider_message_id: null,
      history: [
        { outcome: 'sent', code: '250', reply: '250 2.0.0 Ok: queued as 4BX', provider_message_id: '4BX' },
      ],
    });
    expect(sent).not.toHaveProperty('body');
    expect(JSON.stringify(messages)).not.toContain('@');
  });

  it('adds each body with --with-bodies, null where the body is gone, stored compressed or not', async () => {
    const stored = await documentClient().send(
      new GetCommand({ TableName: tableName, Key: { pk: messagePk(messageId(1000)), sk: 'BODY' } }),
    );
    expect(stored.Item).toMatchObject({ content_encoding: 'br' });
    expect(stored.Item).not.toHaveProperty('text');
    const { messages } = await exportLines({ since: SINCE, until: UNTIL, withBodies: true });
    expect(messages).toHaveLength(72);
    for (const message of messages) {
      const n = Number(message.id.slice(-4)) - 1000;
      if (n % 2 === 0) {
        expect(message.body).toMatchObject({
          subject: `About ${message.id}`,
          to: [`user-${message.id}@example.org`],
          text: seedText(message.id),
          html: null,
        });
      } else {
        expect(message.body).toBeNull();
      }
    }
  });

  it('adds the body a small message carries inside its state record (docs/data-model.md)', async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    const state = stateRecord({ id: messageId(9100), status: 'sent', createdAt: at(10) });
    const body = {
      pk: state.pk,
      sk: 'BODY' as const,
      fingerprint: 'f',
      created_at: state.created_at,
      from: 'ops@example.com',
      to: ['ada@example.org'],
      cc: [],
      bcc: [],
      reply_to: null,
      subject: 'Your code',
      text: 'Your code is 424242.',
      html: null,
      headers: {},
    };
    const placed = placeBody(state, body);
    expect(placed.body).toBeUndefined();
    await documents.send(new PutCommand({ TableName: table, Item: placed.state }));
    const lines: string[] = [];
    await messagesExport(
      { ...deps, documents, tableName: table },
      { since: SINCE, until: UNTIL, withBodies: true },
      { write: async (line) => void lines.push(line) },
      memoryOutput(),
    );
    expect(lines).toHaveLength(1);
    expect((JSON.parse(lines[0] ?? '{}') as ExportedMessage).body).toMatchObject({
      subject: 'Your code',
      to: ['ada@example.org'],
      text: 'Your code is 424242.',
    });
  });

  it("counts recipients as the API's view does: a suppressed recipient is suppressed, not pending", async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    const state = {
      ...stateRecord({ id: messageId(9200), status: 'suppressed', createdAt: at(10) }),
      rcpt_total: 2,
      rcpt_accepted: [],
      rcpt_rejected: [],
      rcpt_suppressed: [0, 1],
    };
    await documents.send(new PutCommand({ TableName: table, Item: state }));
    const lines: string[] = [];
    const out = memoryOutput();
    await messagesExport(
      { ...deps, documents, tableName: table },
      { since: SINCE, until: UNTIL },
      { write: async (line) => void lines.push(line) },
      out,
    );
    const exported = JSON.parse(lines[0] ?? '{}') as ExportedMessage;
    // GET /v1/messages/{id} (DESIGN §3): recipients.suppressed counts those left out.
    expect(exported.recipients).toEqual({ accepted: 0, pending: 0, rejected: 0, suppressed: 2 });
  });

  it('with --with-bodies, a template message carries its template pin, its data and its attachments: what a restore needs (docs/recovery.md)', async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    const attachment = {
      filename: 'invoice.pdf',
      content_type: 'application/pdf',
      size: 6,
      sha256: 'a'.repeat(64),
      key: 'att/acme/01JQ5/0',
    };
    const state = {
      ...stateRecord({ id: messageId(9300), status: 'scheduled', createdAt: at(10) }),
      template: { name: 'welcome', version: 3 },
      attachments: [attachment],
    };
    await documents.send(new PutCommand({ TableName: table, Item: state }));
    await documents.send(
      new PutCommand({
        TableName: table,
        Item: storedBodyItem({
          pk: state.pk,
          sk: 'BODY',
          fingerprint: 'f',
          created_at: state.created_at,
          from: 'ops@example.com',
          to: ['ada@example.org'],
          cc: [],
          bcc: [],
          reply_to: null,
          subject: '',
          text: null,
          html: null,
          headers: {},
          template: { name: 'welcome', version: 3 },
          data_json: '{"name":"Ada","items":[1,2.5]}',
        }),
      }),
    );
    const lines: string[] = [];
    await messagesExport(
      { ...deps, documents, tableName: table },
      { since: SINCE, until: UNTIL, withBodies: true },
      { write: async (line) => void lines.push(line) },
      memoryOutput(),
    );
    const exported = JSON.parse(lines[0] ?? '{}') as Record<string, unknown> & {
      body: Record<string, unknown>;
    };
    expect(exported.template).toEqual({ name: 'welcome', version: 3 });
    expect(exported.attachments).toEqual([attachment]);
    expect(exported.body.data).toEqual({ name: 'Ada', items: [1, 2.5] });
  });

  it('skips, and counts, what the index lists but the record no longer matches', async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    const stale = stateRecord({ id: messageId(9001), status: 'sent', createdAt: at(10) });
    // Its by_status entry still says `dead` (the index has not caught up with the move to `sent`).
    await documents.send(
      new PutCommand({ TableName: table, Item: { ...stale, lst_pk: byStatusPk('acme', 'dead', stale.id) } }),
    );
    const lines: string[] = [];
    const out = memoryOutput();
    const report = await messagesExport(
      { ...deps, documents, tableName: table },
      { since: SINCE, until: UNTIL, status: 'dead' },
      { write: async (line) => void lines.push(line) },
      out,
    );
    expect(report).toMatchObject({ exported: 0, skipped: 1 });
    expect(lines).toEqual([]);
    expect(out.warnings[0]).toContain('1 listed by the index were gone or had moved on');
  });

  // DESIGN §6: the export is "for audit and recovery (by time range and status)": each message once.
  it('writes a message once when it moves between two listed statuses during the export', async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    // 101 dead messages and one retrying one, all in one by_status shard: a page of that shard's
    // dead entries holds 100, so the entry the move gives the retrying one is on a page read later.
    const shard = shardOf(messageId(20_000), INDEX_SHARDS.byStatus);
    const ids = Array.from({ length: 6_000 }, (_, n) => messageId(20_000 + n))
      .filter((id) => shardOf(id, INDEX_SHARDS.byStatus) === shard)
      .slice(0, 102);
    const created = (n: number) => new Date(Date.parse(at(20)) + n * 60_000).toISOString();
    const moving = ids[101] as string;
    await seedMessages(documents, table, [
      ...ids.slice(0, 101).map((id, n) => ({ id, status: 'dead' as const, createdAt: created(n) })),
      { id: moving, status: 'retrying', createdAt: created(99.5) },
    ]);
    const lines: string[] = [];
    const dies = async () => {
      const record = stateRecord({ id: moving, status: 'dead', createdAt: created(99.5) });
      await documents.send(new PutCommand({ TableName: table, Item: record }));
    };

    const report = await messagesExport(
      { ...deps, documents, tableName: table, tenants: async () => ['acme'] },
      { since: SINCE, until: UNTIL, status: 'retrying,dead' },
      {
        write: async (line) => {
          // The retrying message dies while the export runs (its first line is written).
          if (lines.push(line) === 1) await dies();
        },
      },
      memoryOutput(),
    );

    const written = lines.map((line) => (JSON.parse(line) as ExportedMessage).id);
    expect(written.filter((id) => id === moving)).toHaveLength(1);
    expect(new Set(written)).toEqual(new Set(ids));
    expect(report.exported).toBe(102);
  });

  it("keeps a tenant's test side apart (DESIGN §14): --tenant acme exports none of acme.test's, and the other way round", async () => {
    const fresh = await freshTable();
    const documents = documentClient();
    const sides = ['acme', testSideOf('acme')];
    await seedMessages(
      documents,
      fresh.tableName,
      Array.from({ length: 8 }, (_, n) => ({
        id: messageId(5000 + n),
        tenant: sides[n % 2] as string,
        status: STATUSES[n % STATUSES.length] as MessageStatus,
        createdAt: at(20 - n),
      })),
    );
    const sideDeps = { ...deps, documents, tableName: fresh.tableName, tenants: async () => sides };
    for (const [n, tenant] of sides.entries()) {
      const lines: string[] = [];
      const sink = { write: async (line: string) => void lines.push(line) };
      const report = await messagesExport(sideDeps, { since: SINCE, tenant }, sink, memoryOutput());
      const messages = lines.map((line) => JSON.parse(line) as ExportedMessage);
      expect(report.exported).toBe(4);
      expect(messages.map((m) => [m.id, m.tenant])).toEqual(
        [0, 1, 2, 3].map((k) => [messageId(5000 + 2 * k + n), tenant]),
      );
    }
  });

  it('refuses a range that ends before it starts and an unknown status, before reading anything', async () => {
    await expect(exportLines({ since: UNTIL, until: SINCE })).rejects.toThrow(
      /--until .* must be after --since/,
    );
    await expect(exportLines({ since: SINCE, status: 'sent,lost' })).rejects.toThrow(
      'unknown status "lost" (one of scheduled, sending, retrying, sent, failed, dead, cancelled, superseded, expired, unknown, suppressed)',
    );
    await expect(exportLines({ since: SINCE, until: 'tomorrow' })).rejects.toThrow(/--until: "tomorrow"/);
  });

  it('writes to a file with --out', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'postdate-export-')), 'export.jsonl');
    const lines = openLineSink(file);
    const report = await messagesExport(deps, { since: SINCE, until: UNTIL }, lines.sink, memoryOutput());
    await lines.close();
    const written = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(written).toHaveLength(report.exported);
    expect(written.map((line) => (JSON.parse(line) as ExportedMessage).id)).toHaveLength(72);
  });

  it('runs as `postdate messages export` against a table, with a plain count line on stderr', async () => {
    const run = promisify(execFile);
    const file = join(mkdtempSync(join(tmpdir(), 'postdate-export-')), 'out.jsonl');
    const { stdout, stderr } = await run(
      'npx',
      [
        'tsx',
        'cli/postdate.ts',
        '--table',
        tableName,
        'messages',
        'export',
        '--since',
        SINCE,
        '--until',
        UNTIL,
        '--status',
        'dead',
        '--tenant',
        'acme',
        '--out',
        file,
      ],
      {
        env: {
          ...process.env,
          NO_COLOR: '1',
          AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_REGION: 'us-east-1',
        },
        timeout: 60_000,
      },
    ).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`export failed: ${error.stderr ?? ''}`);
    });
    const expected = SEEDS.filter((seed) => inRange(seed, ['dead']) && seed.tenant === 'acme');
    expect(expected.length).toBeGreaterThan(0);
    expect(stdout).toBe('');
    expect(stderr.trim()).toBe(`exported ${expected.length} messages created in [${SINCE}, ${UNTIL})`);
    const ids = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as ExportedMessage).id);
    expect(ids).toEqual(expected.map((seed) => seed.id));
  }, 60_000);
});

describe('postdate messages show', () => {
  it('prints the relay and its id, of the message and of each attempt (DESIGN §15: together)', async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    const [record] = await seedMessages(documents, table, [
      {
        id: messageId(7001),
        status: 'sent',
        createdAt: at(1),
        attempts: 1,
        history: [
          {
            at: at(1),
            outcome: 'sent',
            code: '250',
            enhanced_code: null,
            reply: '250 Ok 01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
            duration_ms: 80,
            provider_message_id: '01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
            relay: 'ses-eu-west-1',
          },
        ],
      },
    ]);
    await documents.send(
      new PutCommand({
        TableName: table,
        Item: {
          ...record,
          provider_message_id: '01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
          relay: 'ses-eu-west-1',
        },
      }),
    );
    const out = memoryOutput();
    const report = await messagesShow({ ...deps, documents, tableName: table }, messageId(7001), out);
    expect(report.message.provider_message_id).toBe(
      '01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
    );
    expect(out.text()).toMatch(/relay id:\s+01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000/);
    expect(report.message.relay).toBe('ses-eu-west-1');
    expect(out.text()).toMatch(/^relay:\s+ses-eu-west-1$/m);
    const [header, row] = out.lines.slice(out.lines.findIndex((line) => line.includes('RELAY ID')));
    expect(header).toMatch(/RELAY\s+RELAY ID/);
    expect(row).toMatch(/ses-eu-west-1\s+01000154dc729264/);

    const json = memoryOutput({ json: true });
    await messagesShow({ ...deps, documents, tableName: table }, messageId(7001), json);
    expect(json.documents[0]).toMatchObject({
      message: { relay: 'ses-eu-west-1', provider_message_id: expect.any(String) },
    });
    const lines: string[] = [];
    const sink = { write: async (line: string) => void lines.push(line) };
    await messagesExport({ ...deps, documents, tableName: table }, { since: at(2) }, sink, memoryOutput());
    expect(lines.map((line) => JSON.parse(line))).toMatchObject([
      { relay: 'ses-eu-west-1', provider_message_id: expect.any(String) },
    ]);
  });
  it('lists the recipients an attempt had refused, each with its own outcome and code (DESIGN §3: per-recipient replies)', async () => {
    const { tableName: table } = await freshTable();
    const documents = documentClient();
    await seedMessages(documents, table, [
      {
        id: messageId(7002),
        status: 'retrying',
        createdAt: at(1),
        attempts: 1,
        history: [
          {
            at: at(1),
            outcome: 'transient',
            code: '250',
            enhanced_code: null,
            reply: '250 Ok',
            duration_ms: 80,
            relay: 'default',
            recipients: [
              {
                position: 1,
                domain: 'example.org',
                outcome: 'deferred',
                code: '451',
                enhanced_code: '4.7.1',
                reply: '451 try later',
              },
              {
                position: 2,
                domain: 'example.net',
                outcome: 'rejected',
                code: '550',
                enhanced_code: '5.1.1',
                reply: '550 no such user',
              },
            ],
            recipients_omitted: 3,
          },
        ],
      },
    ]);
    const out = memoryOutput();
    await messagesShow({ ...deps, documents, tableName: table }, messageId(7002), out);
    const [header, row] = out.lines.slice(out.lines.findIndex((line) => line.includes('REFUSED')));
    expect(header).toMatch(/REFUSED/);
    expect(row).toMatch(/#1 example\.org deferred 451, #2 example\.net rejected 550, \+3 more/);
  });
});
