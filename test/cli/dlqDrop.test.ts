import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DropDeps, dlqDrop, dropDecision } from '../../cli/dlqCommands.js';
import { type MessagesDeps, messagesRetry, readState } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import {
  isTerminal,
  isWaitingForOperator,
  MESSAGE_STATUSES,
  type MessageStatus,
} from '../../lambdas/core/messageStatus.js';
import { redrivesDeath } from '../../lambdas/core/sendDecision.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { countWaiting } from '../../lambdas/sweeper/waitingGauge.js';
import { seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { bodyUpdatesFailing } from '../support/failingBodyWrites.js';
import { senderOutcomes } from '../sweeper/waitingMessages.js';
import { deadLetter, drainIds, visibleCount } from './cliFixtures.js';

/**
 * `postdate dlq drop` (runbook §1 step 5): an operator gives up on a dead message. DESIGN §2: `dead`
 * waits "until redrive" with no TTL, and "only a terminal status starts the retention clock" — an
 * operator's giving up is that end (core/messageLifetime.ts, decision 0083), the same one `messages
 * discard` makes. So a drop must end the message as a discard does — out of the waiting gauge (the
 * `DeadMessages` alarm can clear), its record and body on the retention — and only then take its copy
 * off the DLQ. A copy whose message moved on (a retry gave it a new rev, or it ended) is only deleted.
 */
const RETENTION_DAYS = 30;

async function setUp() {
  const t0 = wholeSecondNow();
  const now = seconds(t0, 60);
  const { tableName } = await freshTable('dlq-drop');
  const { urls } = await freshQueues(1);
  const documents = documentClient();
  const sqs = sqsClient();
  const store = new DynamoApiStore(documents, tableName);
  const deps: DropDeps = {
    sqs,
    dlqUrl: urls.sendDeadLetter,
    now: () => now,
    waitSeconds: 0,
    table: { documents, tableName },
    store,
    retentionDays: RETENTION_DAYS,
  };
  const messages: MessagesDeps = {
    documents,
    tableName,
    store,
    now: () => now,
    tenants: async () => ['acme'],
    retentionDays: RETENTION_DAYS,
    maxAttempts: 8,
    messageIdDomain: 'mail.example.com',
  };
  const body = async (id: string) =>
    (await documents.send(new GetCommand({ TableName: tableName, Key: { pk: messagePk(id), sk: 'BODY' } })))
      .Item;
  const waiting = async () => (await countWaiting(new DynamoDueIndex(documents, tableName), 16)).counts;
  const state = (id: string) => readState({ documents, tableName, now: () => now }, id);
  return { deps, messages, now, urls, sqs, endedAs: senderOutcomes(tableName, t0), body, waiting, state };
}

describe('postdate dlq drop', () => {
  it('ends a dead message as a discard does — out of the waiting gauge, record and body on the retention — then deletes its copy', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const other = await t.endedAs('dead');
    await deadLetter(t.sqs, t.urls, [dead, other]);
    expect(await t.waiting()).toMatchObject({ dead: 2 });
    const out = memoryOutput({ json: true });

    const report = await dlqDrop(t.deps, { ids: [dead.id] }, out);

    expect(report.ok).toBe(true);
    expect(report.results).toEqual([
      expect.objectContaining({ id: dead.id, rev: 1, outcome: 'discarded', status: 'dead' }),
    ]);
    const expiresAt = Math.floor(t.now.getTime() / 1000) + RETENTION_DAYS * 86_400;
    expect(await t.state(dead.id)).toMatchObject({
      status: 'dead',
      expires_at: expiresAt,
      discarded_at: t.now.toISOString(),
    });
    expect((await t.state(dead.id))?.due_pk).toBeUndefined();
    expect((await t.body(dead.id))?.expires_at).toBe(expiresAt);
    expect(await t.waiting()).toMatchObject({ dead: 1 });
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual([{ id: other.id, rev: other.rev }]);
    // --json: one parseable document, nothing else on stdout.
    expect(out.lines).toEqual([]);
    expect(JSON.parse(JSON.stringify(out.documents))).toEqual([
      expect.objectContaining({ results: [expect.objectContaining({ id: dead.id, outcome: 'discarded' })] }),
    ]);
  });

  it('only deletes the copy of a message that moved on: retried (a newer rev) or already discarded', async () => {
    const t = await setUp();
    const retried = await t.endedAs('dead');
    const discarded = await t.endedAs('dead');
    await deadLetter(t.sqs, t.urls, [retried, discarded]);
    await messagesRetry(t.messages, [retried.id], memoryOutput());
    const expiresAt = Math.floor(t.now.getTime() / 1000) + 86_400;
    await t.deps.store.discard({ tenant: discarded.tenant, id: discarded.id, now: t.now, expiresAt });
    const before = [await t.state(retried.id), await t.state(discarded.id)];
    const out = memoryOutput();

    const report = await dlqDrop(t.deps, { ids: [retried.id, discarded.id] }, out);

    expect(report.ok).toBe(true);
    const byId = new Map(report.results.map((row) => [row.id, row]));
    expect(byId.get(retried.id)).toMatchObject({ outcome: 'dropped', status: 'scheduled', rev: 1 });
    expect(byId.get(retried.id)?.reason).toMatch(/rev 2/);
    expect(byId.get(discarded.id)).toMatchObject({ outcome: 'dropped', status: 'dead' });
    // The records are as they were: the retried message is still live and due, with no TTL.
    expect([await t.state(retried.id), await t.state(discarded.id)]).toEqual(before);
    expect(before[0]?.expires_at).toBeUndefined();
    expect(await visibleCount(t.sqs, t.urls.sendDeadLetter)).toBe(0);
    expect(out.text()).toContain(retried.id);
    expect(out.text()).toContain('dropped');
  });

  it('finishes the body’s TTL on the next drop when the first one’s body write failed (decision 0145)', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    await deadLetter(t.sqs, t.urls, [dead]);
    const faulty = bodyUpdatesFailing(1);
    const deps = { ...t.deps, store: new DynamoApiStore(faulty.documents, t.deps.table.tableName) };
    await expect(dlqDrop(deps, { ids: [dead.id], hideSeconds: 0 }, memoryOutput())).rejects.toThrow(
      'throttled',
    );
    const expiresAt = Math.floor(t.now.getTime() / 1000) + RETENTION_DAYS * 86_400;
    expect(await t.state(dead.id)).toMatchObject({ status: 'dead', expires_at: expiresAt });
    expect((await t.body(dead.id))?.expires_at).toBeUndefined();

    // The copy is still in the DLQ; the operator drops it again: discarded already, the copy goes,
    // and the body now goes with its record.
    const again = await eventually('the copy visible again and dropped', async () => {
      const report = await dlqDrop(deps, { ids: [dead.id], hideSeconds: 0 }, memoryOutput());
      return report.notFound.length === 0 && report;
    });
    expect(again.results).toEqual([
      expect.objectContaining({ id: dead.id, outcome: 'dropped', status: 'dead' }),
    ]);
    expect((await t.body(dead.id))?.expires_at).toBe(expiresAt);
    expect(await visibleCount(t.sqs, t.urls.sendDeadLetter)).toBe(0);
  });

  it('changes nothing in a dry run and says what it would do', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    await deadLetter(t.sqs, t.urls, [dead]);
    const before = await t.state(dead.id);
    const out = memoryOutput();

    const report = await dlqDrop(t.deps, { ids: [dead.id], dryRun: true }, out);

    expect(report.results).toEqual([expect.objectContaining({ id: dead.id, outcome: 'discarded' })]);
    expect(await t.state(dead.id)).toEqual(before);
    expect(await t.waiting()).toMatchObject({ dead: 1 });
    await eventually(
      '1 visible on the send DLQ',
      async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 1,
    );
    expect(out.text()).toContain('would');
  });

  it('keeps the copy of a message still live at that rev (the backstop), and fails saying to cancel it first', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    await messagesRetry(t.messages, [dead.id], memoryOutput());
    const live = await t.state(dead.id);
    if (live === null) throw new Error('the retried message exists');
    await deadLetter(t.sqs, t.urls, [{ id: live.id, rev: live.rev }]);

    const report = await dlqDrop(t.deps, { ids: [live.id] }, memoryOutput());

    expect(report.ok).toBe(false);
    expect(report.results).toEqual([
      expect.objectContaining({ id: live.id, outcome: 'kept', status: 'scheduled' }),
    ]);
    expect(report.results[0]?.reason).toMatch(/messages cancel/);
    expect(await t.state(live.id)).toEqual(live);
    await eventually(
      '1 visible on the send DLQ',
      async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 1,
    );
  });

  it('gives the message up even when the walk meets a copy of an earlier death first (decision 0149): that copy is deleted and the walk looks on for the current one', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    expect(dead.death).toBe(1);
    const others = await Promise.all(Array.from({ length: 10 }, () => t.endedAs('dead')));
    // A copy naming another death than its current one (as a duplicate of an earlier redrive does,
    // moved there after the message died again), met first; its current copy a receive later.
    await deadLetter(t.sqs, t.urls, [
      { id: dead.id, rev: dead.rev, death: 0 },
      ...others,
      { id: dead.id, rev: dead.rev, death: dead.death },
    ]);

    const report = await dlqDrop(t.deps, { ids: [dead.id] }, memoryOutput({ json: true }));

    expect(report.ok).toBe(true);
    expect(report.results.map((row) => row.outcome).sort()).toEqual(['discarded', 'dropped']);
    expect(await t.state(dead.id)).toMatchObject({ status: 'dead', discarded_at: t.now.toISOString() });
    expect(await t.waiting()).toMatchObject({ dead: 10 });
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toHaveLength(10);
  });

  it("gives the message up even when the walk meets first the plain copy the queue's backstop parked at its first death (decision 0167): that copy is deleted and the walk looks on for the copy naming its death", async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const others = await Promise.all(Array.from({ length: 10 }, () => t.endedAs('dead')));
    const copies = [
      { id: dead.id, rev: dead.rev },
      ...others.map((other) => ({ id: other.id, rev: other.rev, dlq: true, death: other.death })),
      { id: dead.id, rev: dead.rev, dlq: true, death: dead.death },
    ];
    for (const copy of copies)
      await t.sqs.send(
        new SendMessageCommand({ QueueUrl: t.urls.sendDeadLetter, MessageBody: encodeDispatchPayload(copy) }),
      );
    await eventually(
      '12 copies visible',
      async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 12,
    );

    const report = await dlqDrop(t.deps, { ids: [dead.id] }, memoryOutput({ json: true }));

    expect(report.ok).toBe(true);
    expect(report.results.map((row) => row.outcome).sort()).toEqual(['discarded', 'dropped']);
    expect(await t.state(dead.id)).toMatchObject({ status: 'dead', discarded_at: t.now.toISOString() });
    expect((await drainIds(t.sqs, t.urls.sendDeadLetter)).map((copy) => copy.id)).not.toContain(dead.id);
  });

  it('reports ids that are not in the DLQ and fails', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');

    const out = memoryOutput();
    const report = await dlqDrop(t.deps, { ids: [dead.id] }, out);

    expect(report).toMatchObject({ ok: false, notFound: [dead.id], results: [] });
    expect(await t.waiting()).toMatchObject({ dead: 1 });
    // What to do next (docs/runbook.md §1, step 6): the sweeper makes a dead message's missing copy.
    expect(out.warnings.join('\n')).toContain(
      `not in the DLQ: ${dead.id}; postdate messages show <id> says where each is: the sweeper makes a dead one's missing copy once it has been dead 15 minutes: run again after the next sweep, or postdate messages discard <id> (docs/runbook.md §1)`,
    );
  });

  it('says of a requested message that is not dead its status and that there is nothing to drop, as redrive does, not how the sweeper remakes a dead copy (decisions 0253, 0255)', async () => {
    const t = await setUp();
    const sent = await t.endedAs('sent');
    const failed = await t.endedAs('failed');
    const deadWithoutCopy = await t.endedAs('dead');
    const unknownId = '01JQ5000000000000000000099';
    const ids = [sent.id, failed.id, deadWithoutCopy.id, unknownId];

    const report = await dlqDrop(t.deps, { ids, dryRun: true }, memoryOutput({ json: true }));
    expect(report).toMatchObject({
      ok: false,
      notFound: ids,
      notDead: [
        { id: sent.id, status: 'sent' },
        { id: failed.id, status: 'failed' },
      ],
    });

    const people = memoryOutput();
    await dlqDrop(t.deps, { ids }, people);
    const said = people.warnings.join('\n');
    expect(said).toContain(`${sent.id} is sent, ${failed.id} is failed: not dead, nothing to drop`);
    expect(said).toContain(`not in the DLQ: ${deadWithoutCopy.id}, ${unknownId}; postdate messages show`);
    expect(said).not.toContain(`not in the DLQ: ${sent.id}`);
    expect(await t.state(sent.id)).toMatchObject({ status: 'sent' });
  });
});

describe('dropDecision', () => {
  const NOW = new Date('2026-12-04T10:00:00Z');
  const status = fc.constantFrom(...MESSAGE_STATUSES);
  const death = fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined });
  const record = fc.option(
    fc.record({
      status,
      rev: fc.integer({ min: 1, max: 5 }),
      attempts: fc.integer({ min: 1, max: 4 }),
      death,
      expires_at: fc.option(fc.nat(), { nil: undefined }),
    }),
    { nil: null },
  );
  const copyRev = fc.integer({ min: 1, max: 5 });

  it("ends the message only when the copy is its current one — a dead message's: the copy a redrive would send (decisions 0149, 0167) — and it still waits for an operator", () => {
    fc.assert(
      fc.property(copyRev, fc.boolean(), death, record, (rev, marked, carried, current) => {
        const step = dropDecision({ rev, dlq: marked, death: carried }, current, NOW);
        const waits =
          current !== null &&
          current.rev === rev &&
          isWaitingForOperator(current.status) &&
          (current.status !== 'dead' ||
            redrivesDeath({ fromDeadLetters: marked, death: carried }, current)) &&
          current.expires_at === undefined;
        expect(step.kind === 'discard').toBe(waits);
      }),
    );
  });

  it("never deletes the current copy of a live message (it may be the message's only copy)", () => {
    fc.assert(
      fc.property(copyRev, record, (rev, current) => {
        const step = dropDecision({ rev }, current, NOW);
        const liveHere = current !== null && current.rev === rev && !isTerminal(current.status);
        expect(step.kind === 'keep').toBe(liveHere);
      }),
    );
  });

  it('gives a dead message up only for a marked copy of its current death; a copy of an earlier one (decision 0149) or an unmarked one the backstop parked (decision 0167) is only deleted, and the walk looks on', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        fc.boolean(),
        (attempts, carried, named, marked) => {
          const dead = { status: 'dead' as const, rev: 1, attempts, ...(named ? { death: attempts } : {}) };
          const step = dropDecision({ rev: 1, dlq: marked, death: carried }, dead, NOW);
          if (marked && carried === attempts) expect(step).toEqual({ kind: 'discard' });
          else expect(step).toMatchObject({ kind: 'delete', earlier: true });
        },
      ),
    );
  });

  it('deletes a stale copy whatever its message is doing', () => {
    for (const s of MESSAGE_STATUSES as readonly MessageStatus[]) {
      expect(dropDecision({ rev: 1 }, { status: s, rev: 2 }, NOW).kind).toBe('delete');
    }
    expect(dropDecision({ rev: 1 }, null, NOW).kind).toBe('delete');
  });
});
