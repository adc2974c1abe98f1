import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { SqsDeadLetterCopies } from '../../lambdas/adapters/SqsDeadLetterCopies.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { deadLetterPayload, encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import type { DeadLetterCopies, DeadLetterCopy } from '../../lambdas/ports/DeadLetterCopies.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { sweep } from '../../lambdas/sweeper/sweep.js';
import { drainIds } from '../cli/cliFixtures.js';
import { wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshQueues, freshTable, queueDepth, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { senderOutcomes } from './waitingMessages.js';

/**
 * DESIGN §5 "Dead means dead": a dead message's copy sits in the DLQ until an operator redrives it;
 * it is the one thing a redrive sends the message with. SQS may hand a walk of the DLQ the same copy
 * twice — a standard queue delivers at least once, and a copy whose hiding ends comes back — and
 * that is one copy seen twice, not a second copy of its message: the walk must leave it there,
 * visible again when it ends.
 */

/** The real DLQ, except that SQS hands back each copy once more after its first receive, as it may. */
class HandsBackOnce implements DeadLetterCopies {
  /** The SQS message ids of every copy received, in order, repeats included. */
  readonly received: string[] = [];
  private readonly handedBack = new Set<string>();
  /** Copies handed back and not received again yet. */
  private readonly pending = new Set<string>();
  /** The SQS message id of every receipt handed out: a copy removed is not waited for again. */
  private readonly idOf = new Map<string, string>();
  constructor(private readonly inner: DeadLetterCopies) {}
  depth() {
    return this.inner.depth();
  }
  async receive(max: number, hideSeconds: number): Promise<readonly DeadLetterCopy[]> {
    const batch =
      this.pending.size === 0
        ? await this.inner.receive(max, hideSeconds)
        : await eventually('the copies handed back', async () => {
            const again = await this.inner.receive(max, hideSeconds);
            return again.length > 0 && again;
          });
    for (const letter of batch) {
      this.pending.delete(letter.messageId);
      this.idOf.set(letter.receipt, letter.messageId);
    }
    const fresh = batch.filter((letter) => !this.handedBack.has(letter.messageId));
    // Visible again at once: a later receive gets them again, under new receipts.
    await this.inner.release(fresh.map((letter) => letter.receipt));
    for (const letter of fresh) {
      this.handedBack.add(letter.messageId);
      this.pending.add(letter.messageId);
    }
    this.received.push(...batch.map((letter) => letter.messageId));
    return batch;
  }
  release(receipts: readonly string[]) {
    return this.inner.release(receipts);
  }
  async remove(receipts: readonly string[]) {
    const result = await this.inner.remove(receipts);
    for (const receipt of receipts) {
      const id = this.idOf.get(receipt);
      if (id !== undefined && !result.refused.includes(receipt)) this.pending.delete(id);
    }
    return result;
  }
  put(bodies: readonly string[]) {
    return this.inner.put(bodies);
  }
}

async function setUp() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable('dlq-walk');
  const { urls } = await freshQueues();
  const sqs = sqsClient();
  const documents = documentClient();
  const sender = new DynamoSenderStore(documents, tableName);
  const api = new DynamoApiStore(documents, tableName);
  const deadLetters = new HandsBackOnce(new SqsDeadLetterCopies(sqs, urls.sendDeadLetter));
  /** A copy on the DLQ as the sender moves one there (the put, then its record); its SQS id. */
  const parked = async (message: { id: string; rev: number; attempts: number }) => {
    const letter = deadLetterPayload(message);
    const { MessageId } = await sqs.send(
      new SendMessageCommand({ QueueUrl: urls.sendDeadLetter, MessageBody: encodeDispatchPayload(letter) }),
    );
    await sender.recordDeadLetter(letter);
    return MessageId as string;
  };
  const sweepOnce = () =>
    sweep({
      dueIndex: new DynamoDueIndex(documents, tableName),
      records: new DynamoSweepRecords(documents, tableName),
      queue: new SqsDispatchQueue(sqs, urls.send),
      now: () => new Date(),
      graceSeconds: 300,
      deadLetters,
      deadLetterRenewal: {},
    });
  return { sqs, urls, api, deadLetters, parked, sweepOnce, endedAs: senderOutcomes(tableName, t0) };
}

const visibleSoon = (sqs: SQSClient, queueUrl: string, count: number) =>
  eventually(
    `${count} visible and none in flight on the DLQ`,
    async () => {
      const depth = await queueDepth(sqs, queueUrl);
      return depth.visible === count && depth.inFlight === 0;
    },
    { withinMs: 10_000 },
  );

describe('a walk of the DLQ that SQS hands the same copy twice', () => {
  it("keeps a waiting dead message's only copy, visible again when the walk ends, and still takes a stale copy off", async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const copy = await t.parked(dead);
    // A retried dead message's old copy: one copy more than dead messages wait, so the run walks.
    const retried = await t.endedAs('dead');
    await t.parked(retried);
    const result = await t.api.retry({
      tenant: retried.tenant,
      id: retried.id,
      now: new Date(),
      maxAttempts: 8,
    });
    expect(result.kind).toBe('updated');

    const report = await t.sweepOnce();

    expect(t.deadLetters.received.filter((id) => id === copy)).toHaveLength(2);
    expect(report.deadLetters).toMatchObject({ walked: 'surplus', removed: 1 });
    // The walk ended because the DLQ had nothing more to give, not cut short by an error.
    expect(report.deadLetters?.error).toBeUndefined();
    await visibleSoon(t.sqs, t.urls.sendDeadLetter, 1);
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual([{ id: dead.id, rev: dead.rev }]);
    // Three sender outcomes, a sweep with a hidden walk and its waits on the emulators: 20 s ran out on a
    // loaded machine (2 cores, a full CI beside helpers); the waits inside keep their own deadlines.
  }, 60_000);
});
