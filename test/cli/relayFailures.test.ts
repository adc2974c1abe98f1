import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { memoryOutput } from '../../cli/output.js';
import {
  relayFailureDeps,
  relayFailuresCleared,
  relayFailuresRedrive,
} from '../../cli/relayFailuresCommand.js';
import { NEVER_OPENED, opened, pauseAfter, relayBreakerSettings } from '../../lambdas/core/relayBreaker.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { relayFailureMessage, StreamTail } from '../relay/streamTail.js';
import {
  documentClient,
  freshQueues,
  freshTable,
  LOCAL_AWS,
  sqsClient,
  streamsClient,
} from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { drainIds, messageId, seedMessages, visibleCount } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const BREAKER = relayBreakerSettings({ relayProbeSeconds: 30, smtpTimeoutSeconds: 20 });

async function world() {
  const { tableName, streamArn } = await freshTable();
  const { urls, arns } = await freshQueues();
  const sqs = sqsClient();
  const documents = documentClient();
  const deps = relayFailureDeps({
    sqs,
    documents,
    streams: streamsClient(),
    // Neither case below needs a schedule (every message is due); the relay tests cover the scheduler.
    scheduler: new SchedulerClient({ ...LOCAL_AWS, endpoint: 'http://127.0.0.1:9', maxAttempts: 1 }),
    tableName,
    relayFailureQueueUrl: urls.relayFailures,
    sendQueueUrl: urls.send,
    sendQueueArn: arns.send,
    scheduleGroup: 'postdate',
    schedulerRoleArn: 'arn:aws:iam::000000000000:role/postdate-local-scheduler',
    scheduleDeadLetterArn: arns.scheduleDeadLetter,
    directDelayMaxSeconds: 900,
    scheduleLeadSeconds: 90,
    relayNames: ['default'],
    breaker: BREAKER,
    now: () => NOW,
  });
  const fail = (body: string) =>
    sqs.send(new SendMessageCommand({ QueueUrl: urls.relayFailures, MessageBody: body }));
  return { tableName, streamArn, urls, sqs, documents, deps, fail };
}

/** An overdue message whose stream batch failed and is no longer in the stream: only a sweep covers it. */
async function failBatchTheStreamNoLongerHolds(w: Awaited<ReturnType<typeof world>>, id: string) {
  await seedMessages(w.documents, w.tableName, [
    { id, status: 'scheduled', createdAt: '2026-11-29T11:00:00.000Z', sendAt: '2026-11-29T11:59:00.000Z' },
  ]);
  await w.fail(
    relayFailureMessage({
      streamArn: w.streamArn,
      shardId: 'shardId-00000001700000000000-deadbeef',
      start: '000000000000000000100',
      end: '000000000000000000200',
      batchSize: 1,
    }),
  );
}

describe('postdate relay-failures redrive', () => {
  it('replays a failed batch the stream still holds and empties the failure queue', async () => {
    const w = await world();
    await seedMessages(w.documents, w.tableName, [
      { id: messageId(1), status: 'scheduled', createdAt: NOW.toISOString(), sendAt: NOW.toISOString() },
    ]);
    const tail = new StreamTail(w.streamArn);
    await w.fail(tail.failureMessage(await tail.next()));
    const out = memoryOutput();

    const report = await relayFailuresRedrive(w.deps, {}, out);

    expect(report).toMatchObject({ messages: 1, replayed: 1, sweptOver: 0, kept: 0 });
    expect(relayFailuresCleared(report)).toBe(true);
    expect(await drainIds(w.sqs, w.urls.send)).toEqual([{ id: messageId(1), rev: 1 }]);
    expect(await visibleCount(w.sqs, w.urls.relayFailures)).toBe(0);
    expect(out.text()).toMatch(/replayed from the stream:\s+1/);
  });

  it('covers a batch the stream no longer holds with a grace-0 sweep, and reports JSON', async () => {
    const w = await world();
    await failBatchTheStreamNoLongerHolds(w, messageId(2));
    const out = memoryOutput({ json: true });

    const report = await relayFailuresRedrive(w.deps, {}, out);

    expect(report).toMatchObject({ messages: 1, replayed: 0, sweptOver: 1, kept: 0 });
    expect(await drainIds(w.sqs, w.urls.send)).toEqual([{ id: messageId(2), rev: 1 }]);
    // The JSON document is snake_case, as every --json document (docs/cli.md).
    expect(out.documents[0]).toMatchObject({ swept_over: 1, sweep: { redispatched: 1 } });
  });

  it('keeps the failure message when its grace-0 sweep could not read a shard to its end', async () => {
    const w = await world();
    await failBatchTheStreamNoLongerHolds(w, messageId(3));
    // One entry read per shard: the shard holding the message is not read to its end (DynamoDB
    // answers a cursor when the page is full), so the sweep cannot vouch for what the batch held.
    const deps = { ...w.deps, sweep: { ...w.deps.sweep, maxReadsPerShard: 1, pageSize: 1 } };

    const report = await relayFailuresRedrive(deps, {}, memoryOutput());

    expect(report.sweep?.truncatedShards.length).toBeGreaterThan(0);
    expect(report).toMatchObject({ messages: 1, sweptOver: 0, kept: 1 });
    expect(relayFailuresCleared(report)).toBe(false);
  });

  it('keeps a failure message it cannot read and says so with a failing result', async () => {
    const w = await world();
    await w.fail('{"not":"a failure record"}');
    const out = memoryOutput();

    const report = await relayFailuresRedrive(w.deps, {}, out);

    expect(report).toMatchObject({ messages: 1, kept: 1 });
    expect(relayFailuresCleared(report)).toBe(false);
    expect(out.warnings[0]).toContain('stay on the queue');
    // Runbook §4: "run it again while it reports messages left": the kept message is visible again
    // as the run ends (not hidden for minutes), so the next run meets it and fails again.
    await eventually(
      'the kept message visible again',
      async () => (await visibleCount(w.sqs, w.urls.relayFailures)) === 1,
    );
    const again = await relayFailuresRedrive(w.deps, {}, memoryOutput());
    expect(again).toMatchObject({ messages: 1, kept: 1 });
    expect(relayFailuresCleared(again)).toBe(false);
  });

  it('is not cleared while another reader hides a failure message (a run cut off, Ctrl-C)', async () => {
    const w = await world();
    await w.fail('{"not":"a failure record"}');
    // An earlier run that died holding the message: hidden for its 300 s, not handled.
    await eventually('the message received and hidden', async () => {
      const { Messages } = await w.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: w.urls.relayFailures, VisibilityTimeout: 300 }),
      );
      return (Messages ?? []).length === 1;
    });

    const report = await relayFailuresRedrive(w.deps, {}, memoryOutput());

    expect(report).toMatchObject({ messages: 0, remaining: 1 });
    expect(relayFailuresCleared(report)).toBe(false);
  });

  /**
   * DESIGN §5, §5a: while a pause or an open breaker holds the mail the senders hand every copy back,
   * so the sweeper leaves the held messages alone (sweep.ts); the redrive's one-off sweep is that
   * sweeper, and obeys the same gate. The failure message is still covered: the held message stays
   * overdue in the `due` index, and the scheduled sweeper re-dispatches it once the mail moves.
   */
  it.each([
    [
      'everything paused',
      async (gate: DynamoSendingGate) => {
        const { pause } = await gate.read();
        await gate.writePause(pause, pauseAfter(pause, { action: 'pause', reason: 'incident' }, NOW));
      },
    ],
    [
      'the only relay unavailable',
      async (gate: DynamoSendingGate) => {
        const open = opened(NEVER_OPENED, { reason: 'ECONNREFUSED' }, NOW, BREAKER, '7');
        if (open === undefined) throw new Error('a closed breaker opens');
        await gate.writeBreaker(NEVER_OPENED, open);
      },
    ],
  ])('hands nothing the senders hold to the queue in its grace-0 sweep: %s', async (held, hold) => {
    const w = await world();
    await failBatchTheStreamNoLongerHolds(w, messageId(4));
    await hold(new DynamoSendingGate(w.documents, w.tableName));

    const report = await relayFailuresRedrive(w.deps, {}, memoryOutput());

    expect(await drainIds(w.sqs, w.urls.send)).toEqual([]);
    expect(report.sweep).toMatchObject({
      redispatched: 0,
      held: held === 'everything paused' ? 'paused' : 'no-relay',
    });
    expect(report).toMatchObject({ messages: 1, sweptOver: 1, kept: 0 });
  });
});
