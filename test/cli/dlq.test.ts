import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { dlqRedrive, dlqShow, redriveSucceeded } from '../../cli/dlqCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { deadLetter, drainIds, messageId, seedMessages, visibleCount } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');

async function deadLetteredCopies(count: number) {
  const sqs = sqsClient();
  const { urls } = await freshQueues(1);
  const copies = Array.from({ length: count }, (_, i) => ({ id: messageId(i + 1), rev: i + 1 }));
  await deadLetter(sqs, urls, copies);
  return { sqs, urls, copies };
}

describe('postdate dlq show', () => {
  it('counts the DLQ, samples copies with their record status, and leaves every copy visible', async () => {
    const { sqs, urls, copies } = await deadLetteredCopies(3);
    const { tableName } = await freshTable();
    const documents = documentClient();
    await seedMessages(
      documents,
      tableName,
      copies.map((copy) => ({ id: copy.id, status: 'dead', rev: copy.rev, createdAt: NOW.toISOString() })),
    );
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
    const { sqs, urls, copies } = await deadLetteredCopies(12);
    const chosen = [messageId(2), messageId(7), messageId(11)];
    const out = memoryOutput();

    const report = await dlqRedrive(
      { sqs, dlqUrl: urls.sendDeadLetter, sendQueueUrl: urls.send, now: () => NOW, waitSeconds: 0 },
      { ids: chosen },
      out,
    );

    expect(report.mode).toBe('ids');
    expect(redriveSucceeded(report)).toBe(true);
    expect(await drainIds(sqs, urls.send)).toEqual(copies.filter((copy) => chosen.includes(copy.id)));
    expect(await drainIds(sqs, urls.sendDeadLetter)).toEqual(
      copies.filter((copy) => !chosen.includes(copy.id)),
    );
    expect(out.text()).toContain('moved 3 of 3');
  });

  it('keeps the "dlq": true mark, without which the sender drops a dead message\'s copy', async () => {
    const { sqs, urls } = await deadLetteredCopies(1);

    await dlqRedrive(
      { sqs, dlqUrl: urls.sendDeadLetter, sendQueueUrl: urls.send, now: () => NOW, waitSeconds: 0 },
      { ids: [messageId(1)] },
      memoryOutput(),
    );

    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: urls.send, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect((Messages ?? []).map((message) => JSON.parse(message.Body ?? ''))).toEqual([
      { v: 1, id: messageId(1), rev: 1, dlq: true },
    ]);
  });

  it('reports ids that are not in the DLQ and fails, moving the ones that are', async () => {
    const { sqs, urls } = await deadLetteredCopies(2);
    const out = memoryOutput({ json: true });

    const report = await dlqRedrive(
      { sqs, dlqUrl: urls.sendDeadLetter, sendQueueUrl: urls.send, now: () => NOW, waitSeconds: 0 },
      { ids: [messageId(1), messageId(99)] },
      out,
    );

    expect(report).toMatchObject({ notFound: [messageId(99)], moved: [{ id: messageId(1), rev: 1 }] });
    expect(redriveSucceeded(report)).toBe(false);
    await eventually(
      '1 visible on the send DLQ',
      async () => (await visibleCount(sqs, urls.sendDeadLetter)) === 1,
    );
  });

  it('moves nothing in a dry run and says what it would move', async () => {
    const { sqs, urls } = await deadLetteredCopies(3);
    const out = memoryOutput();

    const report = await dlqRedrive(
      { sqs, dlqUrl: urls.sendDeadLetter, sendQueueUrl: urls.send, now: () => NOW, waitSeconds: 0 },
      { ids: [messageId(3)], dryRun: true },
      out,
    );

    expect(report).toMatchObject({ dryRun: true, moved: [{ id: messageId(3), rev: 3 }] });
    expect(await visibleCount(sqs, urls.send)).toBe(0);
    await eventually(
      '3 visible on the send DLQ',
      async () => (await visibleCount(sqs, urls.sendDeadLetter)) === 3,
    );
    expect(out.text()).toContain('would move 1 of 1');
  });

  it('refuses a malformed id or a missing choice before touching a queue', async () => {
    const deps = { sqs: sqsClient(), dlqUrl: 'unused', sendQueueUrl: 'unused', now: () => NOW };
    await expect(dlqRedrive(deps, { ids: ['not an id!'] }, memoryOutput())).rejects.toThrow(
      /not a message id/,
    );
    await expect(dlqRedrive(deps, {}, memoryOutput())).rejects.toThrow(/--ids <id...> or --all/);
    await expect(dlqRedrive(deps, { ids: ['a'], all: true }, memoryOutput())).rejects.toThrow(/either/);
  });
});

describe('postdate dlq redrive --all', () => {
  it('moves every copy with StartMessageMoveTask and follows the task to its end', async () => {
    const { sqs, urls, copies } = await deadLetteredCopies(4);
    const out = memoryOutput();

    const report = await dlqRedrive(
      {
        sqs,
        dlqUrl: urls.sendDeadLetter,
        sendQueueUrl: urls.send,
        now: () => NOW,
        waitSeconds: 0,
        pollMilliseconds: 100,
      },
      { all: true, rate: 100 },
      out,
    );

    expect(report).toMatchObject({ mode: 'all', method: 'message-move-task', status: 'COMPLETED', moved: 4 });
    expect(await drainIds(sqs, urls.send)).toEqual(copies);
    expect(await visibleCount(sqs, urls.sendDeadLetter)).toBe(0);
    expect(out.progressSteps.length).toBeGreaterThan(0);
  });

  it('counts without moving in a dry run', async () => {
    const { sqs, urls } = await deadLetteredCopies(2);

    const report = await dlqRedrive(
      { sqs, dlqUrl: urls.sendDeadLetter, sendQueueUrl: urls.send, now: () => NOW, waitSeconds: 0 },
      { all: true, dryRun: true },
      memoryOutput(),
    );

    expect(report).toMatchObject({ mode: 'all', dryRun: true, toMove: 2, moved: 0 });
    expect(await visibleCount(sqs, urls.sendDeadLetter)).toBe(2);
  });
});
