import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { dlqShow } from '../../cli/dlqCommands.js';
import { messagesList } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { deadLetter, messageId, seedMessages, visibleCount } from './cliFixtures.js';

/**
 * `postdate dlq show` must not count its own looks as receives (issue 17 §4). SQS has no true peek,
 * so by default it receives nothing: counts from the queue's attributes, the dead messages from the
 * table. `--peek n` receives copies and says so; each copy's count is shown less that receive.
 */

const NOW = new Date('2026-11-29T12:00:00.000Z');

/** Every copy's ApproximateReceiveCount after one more receive (the receive this check makes), by id. */
async function receiveCounts(sqs: SQSClient, queueUrl: string): Promise<Map<string, number>> {
  const { Messages } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 30,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      AttributeNames: ['All'],
    }),
  );
  return new Map(
    (Messages ?? []).map((message) => [
      (JSON.parse(message.Body ?? '{}') as { id: string }).id,
      Number(message.Attributes?.ApproximateReceiveCount),
    ]),
  );
}

async function setUp(count: number) {
  const sqs = sqsClient();
  const { urls } = await freshQueues(1);
  const copies = Array.from({ length: count }, (_, i) => ({ id: messageId(i + 1), rev: 1 }));
  await deadLetter(sqs, urls, copies);
  const { tableName } = await freshTable();
  const documents = documentClient();
  await seedMessages(
    documents,
    tableName,
    copies.map((copy, i) => ({
      id: copy.id,
      status: 'dead' as const,
      createdAt: new Date(NOW.getTime() - (i + 1) * 60_000).toISOString(),
      attempts: 5,
      lastError: { class: 'transient', code: '421', enhanced_code: '4.7.0', message: 'try later' },
    })),
  );
  const messagesDeps = {
    documents,
    tableName,
    store: new DynamoApiStore(documents, tableName),
    now: () => NOW,
    tenants: async () => ['acme'],
    retentionDays: 30,
    maxAttempts: 8,
    messageIdDomain: 'mail.example.com',
  };
  const deps = {
    sqs,
    dlqUrl: urls.sendDeadLetter,
    now: () => NOW,
    waitSeconds: 0,
    table: { documents, tableName },
    deadMessages: () => messagesList(messagesDeps, { status: 'dead', limit: 20 }, memoryOutput()),
  };
  return { sqs, urls, copies, deps };
}

describe('postdate dlq show, without peeking', () => {
  it('receives no copy: counts from the queue, the dead messages with attempts and last error from the table', async () => {
    const { sqs, urls, copies, deps } = await setUp(3);
    const out = memoryOutput();

    const first = await dlqShow(deps, {}, out);
    await dlqShow(deps, {}, memoryOutput());

    expect(first.count).toBe(3);
    expect(first.peeked).toBe(0);
    expect(first.sample).toEqual([]);
    expect(first.deadMessages?.map((row) => row.id)).toEqual(copies.map((copy) => copy.id));
    expect(first.deadMessages?.every((row) => row.attempts === 5)).toBe(true);
    expect(out.text()).toContain('dead messages (from the table; no copy received)');
    expect(out.text()).toContain('421 4.7.0');
    // Two shows later, each copy's first receive is this check's own: the shows received nothing.
    expect([...(await receiveCounts(sqs, urls.sendDeadLetter)).values()]).toEqual([1, 1, 1]);
  });
});

describe('postdate dlq show --peek', () => {
  it("shows each copy's receive count less its own receive, and says that the peek counted", async () => {
    const { sqs, urls, deps } = await setUp(2);

    const first = await dlqShow(deps, { sample: 10 }, memoryOutput());
    const out = memoryOutput();
    const second = await dlqShow(deps, { sample: 10 }, out);

    expect(first.peeked).toBe(2);
    expect(first.sample.map((entry) => entry.receivesBeforePeek)).toEqual([0, 0]);
    // SQS cannot tell an earlier peek from a sender's receive: the second peek sees the first one.
    expect(second.sample.map((entry) => entry.receivesBeforePeek)).toEqual([1, 1]);
    expect(out.text()).toContain('peeked at 2 copies: SQS has no true peek');
    // Both copies were put back (the emulator applies the release on a 0 ms timer, hence the wait).
    await eventually(
      '2 visible on the send DLQ',
      async () => (await visibleCount(sqs, urls.sendDeadLetter)) === 2,
    );
  });

  it('prints one snake_case JSON document with --json', async () => {
    const { deps } = await setUp(1);
    const out = memoryOutput({ json: true });

    await dlqShow(deps, { sample: 1 }, out);

    expect(out.lines).toEqual([]);
    expect(out.documents).toHaveLength(1);
    const document = out.documents[0] as Record<string, unknown>;
    expect(Object.keys(document).sort()).toEqual(
      [
        'count',
        'dead_messages',
        'dead_messages_truncated',
        'in_flight',
        'oldest_sampled_age_ms',
        'peeked',
        'queue_url',
        'sample',
      ].sort(),
    );
    expect(document.sample).toEqual([
      expect.objectContaining({ id: messageId(1), rev: 1, status: 'dead', receives_before_peek: 0 }),
    ]);
    expect(JSON.stringify(document)).not.toMatch(/"[a-z]+[A-Z][A-Za-z]*":/);
  });
});
