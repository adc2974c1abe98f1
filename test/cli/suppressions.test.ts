import { beforeAll, describe, expect, inject, it } from 'vitest';
import { memoryOutput } from '../../cli/output.js';
import {
  type SuppressionsDeps,
  suppressionsAdd,
  suppressionsDeps,
  suppressionsList,
  suppressionsRemove,
  suppressionsRemoveAddedBy,
} from '../../cli/suppressionsCommands.js';
import { DynamoSuppressionList } from '../../lambdas/store/suppressionList.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { runMain } from './cliFixtures.js';

/** `postdate suppressions list | add | remove` (DESIGN §6, §12), on DynamoDB Local. */

let deps: SuppressionsDeps;
let tableName: string;
const clock = new Date('2026-12-01T10:00:00.000Z');

beforeAll(async () => {
  ({ tableName } = await freshTable('cli'));
  deps = suppressionsDeps(documentClient(), tableName, () => clock);
});

describe('postdate suppressions', () => {
  it('adds a quoted local part unquoted, and removes an entry stored quoted before decision 0184', async () => {
    const added = await suppressionsAdd(
      deps,
      { tenant: 'quoted', address: '"Ada"@example.com' },
      memoryOutput(),
    );
    expect(added.address).toBe('ada@example.com');
    // What the CLI wrote before decision 0184: the local part lower-cased as written, quotes and all.
    await new DynamoSuppressionList(documentClient(), tableName).put({
      tenant: 'quoted',
      address: '"eve"@example.com',
      reason: 'manual',
      now: clock,
    });
    const removed = await suppressionsRemove(
      deps,
      { tenant: 'quoted', address: '"Eve"@example.com' },
      memoryOutput(),
    );
    expect(removed.address).toBe('"eve"@example.com');
    const left = await suppressionsList(deps, { tenant: 'quoted', limit: 50 }, memoryOutput());
    expect(left.items.map((entry) => entry.address)).toEqual(['ada@example.com']);
  });

  it('adds an address normalised, lists it, and removes it', async () => {
    const out = memoryOutput();
    const added = await suppressionsAdd(deps, { tenant: 'acme', address: 'Ada@Example.com' }, out);
    expect(added).toEqual({
      address: 'ada@example.com',
      reason: 'manual',
      message_id: null,
      created_at: clock.toISOString(),
    });
    expect(out.text()).toContain('suppressed ada@example.com for tenant acme');
    await suppressionsAdd(
      deps,
      { tenant: 'acme', address: 'bob@example.com', reason: 'complaint' },
      memoryOutput(),
    );

    const listed = memoryOutput();
    const report = await suppressionsList(deps, { tenant: 'acme', limit: 50 }, listed);
    expect(report.items.map((entry) => [entry.address, entry.reason])).toEqual([
      ['ada@example.com', 'manual'],
      ['bob@example.com', 'complaint'],
    ]);
    expect(listed.text()).toMatch(/ADDRESS\s+REASON/);

    const removed = await suppressionsRemove(
      deps,
      { tenant: 'acme', address: 'ADA@example.com' },
      memoryOutput(),
    );
    expect(removed.address).toBe('ada@example.com');
    expect(
      await new DynamoSuppressionList(documentClient(), tableName).suppressedAmong('acme', [
        'ada@example.com',
      ]),
    ).toEqual(new Set());
  });

  it('pages with --limit and --after, or reads everything with --all', async () => {
    for (let i = 0; i < 7; i++) {
      await suppressionsAdd(deps, { tenant: 'paged', address: `p${i}@example.org` }, memoryOutput());
    }
    const first = await suppressionsList(deps, { tenant: 'paged', limit: 3 }, memoryOutput());
    expect(first.items.map((entry) => entry.address)).toEqual([
      'p0@example.org',
      'p1@example.org',
      'p2@example.org',
    ]);
    expect(first.next).toBe('p2@example.org');
    const second = await suppressionsList(
      deps,
      { tenant: 'paged', limit: 3, after: first.next ?? '' },
      memoryOutput(),
    );
    expect(second.items[0]?.address).toBe('p3@example.org');
    const all = await suppressionsList(
      deps,
      { tenant: 'paged', limit: 3, all: true },
      memoryOutput({ json: true }),
    );
    expect(all.items).toHaveLength(7);
    expect(all.next).toBeNull();
  });

  it('refuses a bad address, tenant or reason as usage (exit 2), and an absent address as not found (exit 4)', async () => {
    await expect(
      suppressionsAdd(deps, { tenant: 'acme', address: 'nobody' }, memoryOutput()),
    ).rejects.toMatchObject({
      name: 'UsageError',
      exitCode: 2,
    });
    await expect(
      suppressionsAdd(deps, { tenant: 'Not A Tenant', address: 'a@example.com' }, memoryOutput()),
    ).rejects.toMatchObject({ exitCode: 2 });
    await expect(
      suppressionsAdd(deps, { tenant: 'acme', address: 'a@example.com', reason: 'spam' }, memoryOutput()),
    ).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringContaining('hard_bounce, complaint, manual'),
    });
    await expect(
      suppressionsRemove(deps, { tenant: 'acme', address: 'never@example.com' }, memoryOutput()),
    ).rejects.toMatchObject({ name: 'NotFoundError', exitCode: 4 });
  });

  it("reads and removes a test side's own list (DESIGN §14: `acme.test`), apart from the live one", async () => {
    // What a test key's PUT writes (DESIGN §14): the test side's list, keyed by its tenant id.
    const list = new DynamoSuppressionList(documentClient(), tableName);
    await list.put({ tenant: 'wonka.test', address: 'sim@example.com', reason: undefined, now: clock });
    const listed = await suppressionsList(deps, { tenant: 'wonka.test', limit: 50 }, memoryOutput());
    expect(listed.items.map((entry) => entry.address)).toEqual(['sim@example.com']);
    expect((await suppressionsList(deps, { tenant: 'wonka', limit: 50 }, memoryOutput())).items).toEqual([]);
    const removed = await suppressionsRemove(
      deps,
      { tenant: 'wonka.test', address: 'sim@example.com' },
      memoryOutput(),
    );
    expect(removed.address).toBe('sim@example.com');
    expect((await list.list('wonka.test', { limit: 10, after: null })).items).toEqual([]);
    // Only the test side's suffix is taken: any other dot is still no tenant.
    await expect(
      suppressionsList(deps, { tenant: 'wonka.prod', limit: 50 }, memoryOutput()),
    ).rejects.toMatchObject({ exitCode: 2 });
  });

  it('undoes what one message added (--message): counts first with --dry-run, then removes only its entries', async () => {
    const list = new DynamoSuppressionList(documentClient(), tableName);
    const now = new Date('2026-12-01T09:00:00.000Z');
    // A relay that refused our sender as if the recipients were bad: many entries, one message.
    for (let i = 0; i < 120; i++) {
      await list.addReported({
        tenant: 'undo',
        address: `r${String(i).padStart(3, '0')}@example.com`,
        reason: 'hard_bounce',
        messageId: 'msg-mistake',
        now,
      });
    }
    await list.addReported({
      tenant: 'undo',
      address: 'real@example.com',
      reason: 'hard_bounce',
      messageId: 'msg-real',
      now,
    });
    await suppressionsAdd(deps, { tenant: 'undo', address: 'manual@example.com' }, memoryOutput());
    await list.addReported({
      tenant: 'other',
      address: 'r000@example.com',
      reason: 'hard_bounce',
      messageId: 'msg-mistake',
      now,
    });

    const dry = memoryOutput({ json: true });
    const counted = await suppressionsRemoveAddedBy(
      deps,
      { tenant: 'undo', messageId: 'msg-mistake', dryRun: true },
      dry,
    );
    expect(counted).toMatchObject({ tenant: 'undo', message_id: 'msg-mistake', dry_run: true, count: 120 });
    expect(dry.documents).toEqual([expect.objectContaining({ count: 120, dry_run: true })]);
    expect(
      (await suppressionsList(deps, { tenant: 'undo', limit: 100, all: true }, memoryOutput())).items,
    ).toHaveLength(122);

    const done = await suppressionsRemoveAddedBy(
      deps,
      { tenant: 'undo', messageId: 'msg-mistake', dryRun: false },
      memoryOutput(),
    );
    expect(done).toMatchObject({ dry_run: false, count: 120 });
    expect(done.addresses).toContain('r119@example.com');
    const left = await suppressionsList(deps, { tenant: 'undo', limit: 100, all: true }, memoryOutput());
    expect(left.items.map((entry) => entry.address)).toEqual(['manual@example.com', 'real@example.com']);
    // Another tenant's entry of the same message id is not this tenant's to remove.
    expect(await list.suppressedAmong('other', ['r000@example.com'])).toEqual(new Set(['r000@example.com']));
    await expect(
      suppressionsRemoveAddedBy(
        deps,
        { tenant: 'undo', messageId: 'msg-mistake', dryRun: false },
        memoryOutput(),
      ),
    ).rejects.toMatchObject({ name: 'NotFoundError', exitCode: 4 });
    await expect(
      suppressionsRemoveAddedBy(
        deps,
        { tenant: 'undo', messageId: 'not an id', dryRun: true },
        memoryOutput(),
      ),
    ).rejects.toMatchObject({ exitCode: 2 });
  });

  it('keeps tenants apart', async () => {
    await suppressionsAdd(deps, { tenant: 'one', address: 'shared@example.com' }, memoryOutput());
    expect((await suppressionsList(deps, { tenant: 'two', limit: 50 }, memoryOutput())).items).toEqual([]);
    await expect(
      suppressionsRemove(deps, { tenant: 'two', address: 'shared@example.com' }, memoryOutput()),
    ).rejects.toMatchObject({ exitCode: 4 });
  });
});

/**
 * The real entry, the CLI's main with its argv, in this process (`runMain`), against the emulators
 * of this test run; never rejects. The bin as a process is test/cli/entry.test.ts's.
 */
const postdate = (args: string[]) =>
  runMain(args, {
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
  });

describe('postdate suppressions, through the entry point against the local target', () => {
  it('adds, lists and removes for the local tenant by default', async () => {
    const local = ['--local', '--table', tableName];
    const added = await postdate([
      ...local,
      '--json',
      'suppressions',
      'add',
      'Eve@Example.net',
      '--reason',
      'complaint',
    ]);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ address: 'eve@example.net', reason: 'complaint' });

    const listed = await postdate([...local, '--json', 'suppressions', 'list']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      tenant: 'local',
      items: [{ address: 'eve@example.net', reason: 'complaint', message_id: null }],
      next: null,
    });

    const removed = await postdate([...local, 'suppressions', 'remove', 'eve@example.net']);
    expect(removed).toMatchObject({ code: 0 });
    expect(removed.stdout).toContain('removed eve@example.net');
    const absent = await postdate([...local, 'suppressions', 'remove', 'eve@example.net']);
    expect(absent.code).toBe(4);
    expect(absent.stderr).toContain('is not on the suppression list of tenant local');
    const bad = await postdate([...local, 'suppressions', 'add', 'not-an-address']);
    expect(bad.code).toBe(2);

    await new DynamoSuppressionList(documentClient(), tableName).addReported({
      tenant: 'local',
      address: 'bounced@example.net',
      reason: 'hard_bounce',
      messageId: 'msg-1',
      now: new Date(),
    });
    const dry = await postdate([
      ...local,
      '--json',
      'suppressions',
      'remove',
      '--message',
      'msg-1',
      '--dry-run',
    ]);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({
      tenant: 'local',
      message_id: 'msg-1',
      dry_run: true,
      count: 1,
      addresses: ['bounced@example.net'],
    });
    const undone = await postdate([...local, 'suppressions', 'remove', '--message', 'msg-1']);
    expect(undone.code).toBe(0);
    expect(undone.stdout).toContain('removed 1 address');
    const both = await postdate([...local, 'suppressions', 'remove', 'a@example.net', '--message', 'msg-1']);
    expect(both.code).toBe(2);
    const neither = await postdate([...local, 'suppressions', 'remove']);
    expect(neither.code).toBe(2);
  }, 120_000);
});
