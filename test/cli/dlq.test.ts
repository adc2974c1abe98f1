import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { dlqRedrive, dlqShow, type RedriveDeps, redriveSucceeded } from '../../cli/dlqCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { deadLetter, drainIds, messageId, seedMessages, stateRecord, visibleCount } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');

/** Copies in the DLQ, each the current one of a message that waits in `dead` at its rev. */
async function deadLetteredCopies(count: number) {
  const sqs = sqsClient();
  const { urls } = await freshQueues(1);
  const { tableName } = await freshTable();
  const documents = documentClient();
  const copies = Array.from({ length: count }, (_, i) => ({ id: messageId(i + 1), rev: i + 1 }));
  await seedMessages(
    documents,
    tableName,
    copies.map((copy) => ({ id: copy.id, status: 'dead', rev: copy.rev, createdAt: NOW.toISOString() })),
  );
  await deadLetter(sqs, urls, copies);
  const deps: RedriveDeps = {
    sqs,
    dlqUrl: urls.sendDeadLetter,
    sendQueueUrl: urls.send,
    now: () => NOW,
    waitSeconds: 0,
    table: { documents, tableName },
  };
  return { sqs, urls, copies, tableName, documents, deps };
}

/** Puts one copy, as given, on the DLQ. */
function copyTo(t: Awaited<ReturnType<typeof deadLetteredCopies>>) {
  return (body: { id: string; rev: number; dlq?: boolean; death?: number }) =>
    t.sqs.send(
      new SendMessageCommand({
        QueueUrl: t.urls.sendDeadLetter,
        MessageBody: JSON.stringify({ v: 1, ...body }),
      }),
    );
}

describe('postdate dlq show', () => {
  it('counts the DLQ, samples copies with their record status, and leaves every copy visible', async () => {
    const { sqs, urls, copies, tableName, documents } = await deadLetteredCopies(3);
    const out = memoryOutput();

    const report = await dlqShow(
      {
        sqs,
        dlqUrl: urls.sendDeadLetter,
        now: () => new Date(),
        waitSeconds: 0,
        table: { documents, tableName },
      },
      { sample: 10 },
      out,
    );

    expect(report.count).toBe(3);
    expect(report.sample.map((entry) => entry.id).sort()).toEqual(copies.map((copy) => copy.id));
    expect(report.sample.every((entry) => entry.status === 'dead')).toBe(true);
    expect(report.sample.every((entry) => entry.receivesBeforePeek !== null && entry.ageMs !== null)).toBe(
      true,
    );
    expect(report.oldestSampledAgeMs).not.toBeNull();
    // The peek put every copy back at once (hidden 30 s otherwise); the emulator applies a release on
    // a 0 ms timer, so the count is waited for.
    await eventually(
      '3 visible on the send DLQ',
      async () => (await visibleCount(sqs, urls.sendDeadLetter)) === 3,
    );
    expect(out.text()).toContain('messages:');
    expect(out.text()).toContain(copies[0]?.id);
  });

  it('prints one JSON document with --json', async () => {
    const { sqs, urls } = await deadLetteredCopies(1);
    const out = memoryOutput({ json: true });

    // Copies are received only when asked for (`--peek`): SQS has no true peek (test/cli/dlqShow.test.ts).
    await dlqShow(
      { sqs, dlqUrl: urls.sendDeadLetter, now: () => new Date(), waitSeconds: 0 },
      { sample: 1 },
      out,
    );

    expect(out.lines).toEqual([]);
    expect(out.documents).toHaveLength(1);
    expect(out.documents[0]).toMatchObject({
      count: 1,
      sample: [{ id: messageId(1), rev: 1, status: null }],
    });
  });
});

describe('postdate dlq redrive --ids', () => {
  it('moves exactly the chosen ids to the send queue and leaves every other copy in the DLQ', async () => {
    const { sqs, urls, copies, deps } = await deadLetteredCopies(12);
    const chosen = [messageId(2), messageId(7), messageId(11)];
    const out = memoryOutput();

    const report = await dlqRedrive(deps, { ids: chosen }, out);

    expect(report.mode).toBe('ids');
    expect(redriveSucceeded(report)).toBe(true);
    expect(await drainIds(sqs, urls.send)).toEqual(copies.filter((copy) => chosen.includes(copy.id)));
    expect(await drainIds(sqs, urls.sendDeadLetter)).toEqual(
      copies.filter((copy) => !chosen.includes(copy.id)),
    );
    expect(out.text()).toContain('moved 3 of 3');
  });

  it('keeps the "dlq": true mark, without which the sender drops a dead message\'s copy', async () => {
    const { sqs, urls, deps } = await deadLetteredCopies(1);

    await dlqRedrive(deps, { ids: [messageId(1)] }, memoryOutput());

    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: urls.send, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect((Messages ?? []).map((message) => JSON.parse(message.Body ?? ''))).toEqual([
      { v: 1, id: messageId(1), rev: 1, dlq: true },
    ]);
  });

  it('says of a requested message that is not dead its status and that there is nothing to redrive, not how the sweeper remakes a dead copy (decision 0253)', async () => {
    // README: `dlq redrive --ids "$ID" --dry-run` right after the first message was sent. The id is
    // not in the DLQ because the message is `sent`; the sweeper advice is for a dead one.
    const t = await deadLetteredCopies(1);
    const sent = messageId(40);
    const scheduled = messageId(41);
    const deadWithoutCopy = messageId(42);
    await seedMessages(t.documents, t.tableName, [
      { id: sent, status: 'sent', rev: 1, createdAt: NOW.toISOString() },
      { id: scheduled, status: 'scheduled', rev: 2, createdAt: NOW.toISOString() },
      { id: deadWithoutCopy, status: 'dead', rev: 1, createdAt: NOW.toISOString() },
    ]);
    const ids = [sent, scheduled, deadWithoutCopy, messageId(99)];

    const json = memoryOutput({ json: true });
    const report = await dlqRedrive(t.deps, { ids, dryRun: true }, json);
    expect(report).toMatchObject({
      notFound: ids,
      notDead: [
        { id: sent, status: 'sent' },
        { id: scheduled, status: 'scheduled' },
      ],
    });
    expect(redriveSucceeded(report)).toBe(false);

    const people = memoryOutput();
    await dlqRedrive(t.deps, { ids, dryRun: true }, people);
    const said = people.warnings.join('\n');
    expect(said).toContain(`${sent} is sent, ${scheduled} is scheduled: not dead, nothing to redrive`);
    expect(said).toContain(`not in the DLQ: ${deadWithoutCopy}, ${messageId(99)}; postdate messages show`);
    expect(said).not.toContain(`not in the DLQ: ${sent}`);
  });

  it('reports ids that are not in the DLQ and fails, moving the ones that are', async () => {
    const { sqs, urls, deps } = await deadLetteredCopies(2);
    const out = memoryOutput({ json: true });

    const report = await dlqRedrive(deps, { ids: [messageId(1), messageId(99)] }, out);

    expect(report).toMatchObject({ notFound: [messageId(99)], moved: [{ id: messageId(1), rev: 1 }] });
    expect(redriveSucceeded(report)).toBe(false);
    // What to do next (docs/runbook.md §1, step 6): the sweeper makes a dead message's missing copy.
    const people = memoryOutput();
    await dlqRedrive(deps, { ids: [messageId(99)] }, people);
    expect(people.warnings.join('\n')).toContain(
      `not in the DLQ: ${messageId(99)}; postdate messages show <id> says where each is: the sweeper makes a dead one's missing copy once it has been dead 15 minutes: run again after the next sweep, or postdate messages retry <id> (docs/runbook.md §1)`,
    );
    await eventually(
      '1 visible on the send DLQ',
      async () => (await visibleCount(sqs, urls.sendDeadLetter)) === 1,
    );
  });

  it('moves nothing in a dry run and says what it would move', async () => {
    const { sqs, urls, deps } = await deadLetteredCopies(3);
    const out = memoryOutput();

    const report = await dlqRedrive(deps, { ids: [messageId(3)], dryRun: true }, out);

    expect(report).toMatchObject({ dryRun: true, moved: [{ id: messageId(3), rev: 3 }] });
    expect(await visibleCount(sqs, urls.send)).toBe(0);
    await eventually(
      '3 visible on the send DLQ',
      async () => (await visibleCount(sqs, urls.sendDeadLetter)) === 3,
    );
    expect(out.text()).toContain('would move 1 of 1');
  });

  // DESIGN §2: `dead` is "terminal, until redrive"; §6 the CLI redrives "selected ids". A copy that
  // would not redrive the message (decisions 0149, 0167: of an earlier death, or the backstop's plain
  // copy) is dropped by the sender, so moving it and saying "moved" leaves the message dead.
  it('moves only the copy that redrives the message: a stale one met first is deleted and reported, and the walk looks on', async () => {
    const t = await deadLetteredCopies(11);
    const [dead] = await seedMessages(t.documents, t.tableName, [
      { id: messageId(50), status: 'dead', rev: 2, attempts: 4, createdAt: NOW.toISOString() },
    ]);
    const death = dead?.attempts ?? 0;
    const sendCopy = copyTo(t);
    // Met first: an earlier death's copy and the backstop's plain one; its current copy a receive later.
    await sendCopy({ id: messageId(50), rev: 2, dlq: true, death: 1 });
    await sendCopy({ id: messageId(50), rev: 2 });
    await sendCopy({ id: messageId(50), rev: 1, dlq: true });
    await eventually('14 visible', async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 14);
    await sendCopy({ id: messageId(50), rev: 2, dlq: true, death });
    const out = memoryOutput({ json: true });

    const report = await dlqRedrive(t.deps, { ids: [messageId(50)] }, out);

    expect(report).toMatchObject({ moved: [{ id: messageId(50), rev: 2 }], notFound: [] });
    expect(report.mode === 'ids' && report.stale.map((copy) => copy.rev).sort()).toEqual([1, 2, 2]);
    expect(redriveSucceeded(report)).toBe(true);
    const { Messages } = await t.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: t.urls.send, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect((Messages ?? []).map((message) => JSON.parse(message.Body ?? ''))).toEqual([
      { v: 1, id: messageId(50), rev: 2, dlq: true, death },
    ]);
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual(t.copies);
  });

  it('moves no stale copy: with no current one in the DLQ it says so and fails', async () => {
    const t = await deadLetteredCopies(2);
    await seedMessages(t.documents, t.tableName, [
      { id: messageId(60), status: 'dead', rev: 3, attempts: 4, createdAt: NOW.toISOString() },
      { id: messageId(61), status: 'sent', rev: 1, createdAt: NOW.toISOString() },
    ]);
    const sendCopy = copyTo(t);
    await sendCopy({ id: messageId(60), rev: 3, dlq: true, death: 2 });
    await sendCopy({ id: messageId(60), rev: 2, dlq: true, death: 4 });
    await sendCopy({ id: messageId(61), rev: 1, dlq: true });
    await sendCopy({ id: messageId(62), rev: 1, dlq: true });
    await eventually('6 visible', async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 6);
    const out = memoryOutput();

    const report = await dlqRedrive(t.deps, { ids: [messageId(60), messageId(61), messageId(62)] }, out);

    // 62 has no record in this table: moved, never deleted (a wrong table must not cost a copy;
    // the sender drops a copy whose message is gone).
    expect(report).toMatchObject({
      moved: [{ id: messageId(62), rev: 1 }],
      notFound: [messageId(60), messageId(61)],
    });
    expect(redriveSucceeded(report)).toBe(false);
    expect(await visibleCount(t.sqs, t.urls.send)).toBe(1);
    expect(out.warnings.join('\n')).toMatch(/stale/);
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual(t.copies);
  });

  // DESIGN §5 "Dead means dead": a dead message has one copy in the DLQ, which a redrive sends. A
  // second copy of it (a redrive cut between its send and its delete, a copy the sweeper made beside
  // the sender's) is what the sweeper deletes (`deadLetterCare`); moving it too reports one message
  // moved twice and puts a spare copy of it on the send queue.
  it('moves one copy of each chosen message: a second copy met later in the walk is deleted and named', async () => {
    const t = await deadLetteredCopies(1);
    await seedMessages(t.documents, t.tableName, [
      { id: messageId(80), status: 'dead', rev: 1, createdAt: NOW.toISOString() },
    ]);
    const sendCopy = copyTo(t);
    await sendCopy({ id: messageId(1), rev: 1, dlq: true });
    await eventually('2 visible', async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 2);
    await sendCopy({ id: messageId(80), rev: 1, dlq: true });
    const out = memoryOutput();

    const report = await dlqRedrive(t.deps, { ids: [messageId(1), messageId(80)] }, out);

    expect(report).toMatchObject({
      moved: [
        { id: messageId(1), rev: 1 },
        { id: messageId(80), rev: 1 },
      ],
      notFound: [],
    });
    expect(report.mode === 'ids' && report.stale).toEqual([
      { id: messageId(1), rev: 1, reason: expect.stringMatching(/second copy/) },
    ]);
    expect(redriveSucceeded(report)).toBe(true);
    expect(out.text()).toContain('moved 2 of 2');
    expect(await drainIds(t.sqs, t.urls.send)).toEqual([
      { id: messageId(1), rev: 1 },
      { id: messageId(80), rev: 1 },
    ]);
    expect(await visibleCount(t.sqs, t.urls.sendDeadLetter)).toBe(0);
  });

  // DESIGN §2: only a terminal status starts the retention clock; a discarded `dead` message waits no
  // more, and once its retention ran out nothing takes it back (decision 0181: the sender drops a
  // redriven copy, a retry answers 404). "Moved" would tell the operator it goes out when it never does.
  it('moves no copy of a discarded message whose retention ran out: it deletes it, says why and fails', async () => {
    const t = await deadLetteredCopies(1);
    const ranOut = {
      ...stateRecord({ id: messageId(70), status: 'dead', attempts: 8, createdAt: NOW.toISOString() }),
      death: 8,
      expires_at: Math.floor(NOW.getTime() / 1000) - 3600,
    };
    await t.documents.send(new PutCommand({ TableName: t.tableName, Item: ranOut }));
    await copyTo(t)({ id: messageId(70), rev: 1, dlq: true, death: 8 });
    await eventually('2 visible', async () => (await visibleCount(t.sqs, t.urls.sendDeadLetter)) === 2);
    const out = memoryOutput();

    const report = await dlqRedrive(t.deps, { ids: [messageId(70)] }, out);

    expect(report).toMatchObject({ moved: [], notFound: [messageId(70)] });
    expect(report.mode === 'ids' && report.stale).toEqual([
      { id: messageId(70), rev: 1, reason: expect.stringMatching(/retention ran out/) },
    ]);
    expect(redriveSucceeded(report)).toBe(false);
    expect(await visibleCount(t.sqs, t.urls.send)).toBe(0);
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual(t.copies);
  });

  it('refuses a malformed id or a missing choice before touching a queue', async () => {
    const deps = {
      sqs: sqsClient(),
      dlqUrl: 'unused',
      sendQueueUrl: 'unused',
      now: () => NOW,
      table: { documents: documentClient(), tableName: 'unused' },
    };
    await expect(dlqRedrive(deps, { ids: ['not an id!'] }, memoryOutput())).rejects.toThrow(
      /not a message id/,
    );
    await expect(dlqRedrive(deps, {}, memoryOutput())).rejects.toThrow(/--ids <id...> or --all/);
    await expect(dlqRedrive(deps, { ids: ['a'], all: true }, memoryOutput())).rejects.toThrow(/either/);
    // SQS's StartMessageMoveTask takes 1 to 500 a second: a rate below 1 is refused here, not there.
    await expect(dlqRedrive(deps, { all: true, rate: 0.5 }, memoryOutput())).rejects.toThrow(
      /--rate must be a number of messages per second from 1 to 500/,
    );
  });
});

describe('postdate dlq redrive --all', () => {
  it('moves every copy with StartMessageMoveTask and follows the task to its end', async () => {
    const { sqs, urls, copies, deps } = await deadLetteredCopies(4);
    const out = memoryOutput();

    const report = await dlqRedrive({ ...deps, pollMilliseconds: 100 }, { all: true, rate: 100 }, out);

    expect(report).toMatchObject({ mode: 'all', method: 'message-move-task', status: 'COMPLETED', moved: 4 });
    expect(await drainIds(sqs, urls.send)).toEqual(copies);
    expect(await visibleCount(sqs, urls.sendDeadLetter)).toBe(0);
    expect(out.progressSteps.length).toBeGreaterThan(0);
  });

  it('counts without moving in a dry run', async () => {
    const { sqs, urls, deps } = await deadLetteredCopies(2);

    const report = await dlqRedrive(deps, { all: true, dryRun: true }, memoryOutput());

    expect(report).toMatchObject({ mode: 'all', dryRun: true, toMove: 2, moved: 0 });
    expect(await visibleCount(sqs, urls.sendDeadLetter)).toBe(2);
  });
});
