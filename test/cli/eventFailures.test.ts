/**
 * `postdate event-failures redrive` (DESIGN §11, §1; docs/decisions/0134): a stream batch the event
 * producer gave up on is replayed from the stream, so its status changes still reach the tenant's
 * webhooks and the bus, once per delivery id however often it is replayed. On real parts: DynamoDB
 * Local with its stream, the SQS emulator, a real HTTP endpoint and the delivery function.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { SqsDeadLetterQueue } from '../../cli/deadLetters/SqsDeadLetterQueue.js';
import {
  eventFailureDeps,
  eventFailuresCleared,
  eventFailuresRedrive,
} from '../../cli/eventFailuresCommand.js';
import { memoryOutput } from '../../cli/output.js';
import type { BusEvents } from '../../lambdas/core/busEvents.js';
import type { PostdateEvent } from '../../lambdas/core/messageEvents.js';
import type { EventBus } from '../../lambdas/ports/Webhooks.js';
import { relayFailureMessage, StreamTail } from '../relay/streamTail.js';
import { documentClient, dynamodbClient, sqsClient, streamsClient, uniqueName } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver, subscribe, webhookHarness } from '../webhooks/webhookHarness.js';
import { messageId, stateRecord, visibleCount } from './cliFixtures.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

/** A bus that records what it is given (the local stack has no bus; in AWS it is EventBridge). */
function recordingBus(): EventBus & { readonly published: PostdateEvent[] } {
  const published: PostdateEvent[] = [];
  return {
    published,
    publish: async (events) => {
      published.push(...events);
      return { failed: [] };
    },
  };
}

async function world(busEvents: BusEvents = 'all') {
  const harness = await webhookHarness();
  const hook = await startReceiver();
  receivers.push(hook);
  const endpoint = await subscribe(harness, hook.url(), 'acme');
  const { Table } = await dynamodbClient().send(new DescribeTableCommand({ TableName: harness.tableName }));
  const tail = new StreamTail(Table?.LatestStreamArn ?? '');
  await tail.next(); // the endpoint's own items: not the batch under test
  const sqs = sqsClient();
  const created = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('event-failures') }));
  const failureQueueUrl = created.QueueUrl ?? '';
  const bus = recordingBus();
  const deps = eventFailureDeps({
    sqs,
    documents: documentClient(),
    streams: streamsClient(),
    tableName: harness.tableName,
    eventFailureQueueUrl: failureQueueUrl,
    webhookQueueUrl: harness.queueUrl,
    bus,
    busEvents,
    attachments: undefined,
    retryHours: 24,
    retentionDays: 30,
    now: harness.clock.now,
  });
  const fail = (body: string) =>
    sqs.send(new SendMessageCommand({ QueueUrl: failureQueueUrl, MessageBody: body }));
  return { harness, hook, endpoint, tail, sqs, failureQueueUrl, bus, deps, fail };
}

/** A message accepted, then sent: two status changes on the table's stream. */
async function acceptAndSend(tableName: string, id: string) {
  const accepted = stateRecord({
    id,
    tenant: 'acme',
    status: 'scheduled',
    createdAt: new Date().toISOString(),
  });
  await documentClient().send(new PutCommand({ TableName: tableName, Item: accepted }));
  const { due_pk: _due, due_at: _at, ...rest } = accepted;
  await documentClient().send(
    new PutCommand({
      TableName: tableName,
      Item: { ...rest, status: 'sent', attempts: 1, updated_at: new Date(Date.now() + 1000).toISOString() },
    }),
  );
}

describe('postdate event-failures redrive', () => {
  it('replays a batch the producer gave up on: each event reaches the endpoint and the bus, once per delivery id', async () => {
    const w = await world();
    await acceptAndSend(w.harness.tableName, messageId(1));
    const batch = await w.tail.next();

    // The producer's own try: its deliveries are written, but the webhook queue refuses every copy
    // and the bus is throttled. The event source retries, then gives the batch up.
    const producer = w.harness.producer({
      bus: { publish: async (events) => ({ failed: events, error: new Error('throttled') }) },
      queue: { send: async (copies) => ({ failed: copies, error: new Error('SendMessageBatch failed') }) },
    });
    expect((await producer(batch)).batchItemFailures).toHaveLength(2);
    await w.fail(w.tail.failureMessage(batch));

    const out = memoryOutput();
    const report = await eventFailuresRedrive(w.deps, {}, out);

    expect(report).toMatchObject({ messages: 1, replayed: 1, gone: 0, kept: 0 });
    expect(eventFailuresCleared(report)).toBe(true);
    expect(await visibleCount(w.sqs, w.failureQueueUrl)).toBe(0);
    expect(out.text()).toMatch(/replayed from the stream:\s+1/);
    await w.harness.pump();
    const types = w.hook.received.map((request) => JSON.parse(request.body).type).sort();
    expect(types).toEqual(['message.scheduled', 'message.sent']);
    expect(w.bus.published.map((event) => event.type)).toEqual(['message.scheduled', 'message.sent']);
    const webhookIds = w.hook.received.map((request) => String(request.headers['webhook-id'])).sort();
    expect(webhookIds).toEqual(w.bus.published.map((event) => event.id).sort());

    // The same range redriven again (a second operator, a failure message sent twice): the bus
    // gets the same ids, and no delivery is made or POSTed a second time.
    await w.fail(w.tail.failureMessage(batch));
    expect(await eventFailuresRedrive(w.deps, {}, memoryOutput())).toMatchObject({ replayed: 1, kept: 0 });
    await w.harness.pump();
    expect(w.hook.received).toHaveLength(2);
    expect(w.bus.published.slice(2).map((event) => event.id)).toEqual(
      w.bus.published.slice(0, 2).map((event) => event.id),
    );
    const listed = await w.harness.call({
      method: 'GET',
      path: `/v1/webhooks/${w.endpoint.id}/deliveries`,
      tenant: 'acme',
    });
    expect(listed.json.items).toHaveLength(2);
    for (const delivery of listed.json.items)
      expect(delivery).toMatchObject({ status: 'delivered', attempts: 1 });
    // Two stream reads, the API's cold start and a listing over 128 shards (decision 0044): seconds
    // alone, up to 20 s beside a starting local stack on two loaded cores.
  }, 60_000);

  it.each([
    { busEvents: 'none', onBus: [] },
    { busEvents: ['message.sent'], onBus: ['message.sent'] },
  ] satisfies { busEvents: BusEvents; onBus: string[] }[])(
    "replays onto the bus only what the deployment's busEvents takes ($busEvents); the endpoint gets every event (decision 0178)",
    async ({ busEvents, onBus }) => {
      const w = await world(busEvents);
      await acceptAndSend(w.harness.tableName, messageId(3));
      await w.fail(w.tail.failureMessage(await w.tail.next()));

      expect(await eventFailuresRedrive(w.deps, {}, memoryOutput())).toMatchObject({ replayed: 1, kept: 0 });

      expect(w.bus.published.map((event) => event.type)).toEqual(onBus);
      await w.harness.pump();
      const types = w.hook.received.map((request) => JSON.parse(request.body).type).sort();
      expect(types).toEqual(['message.scheduled', 'message.sent']);
    },
    60_000,
  );

  it('keeps a batch the stream no longer holds on the queue, names it, and fails', async () => {
    const w = await world();
    const streamArn = (
      await dynamodbClient().send(new DescribeTableCommand({ TableName: w.harness.tableName }))
    ).Table?.LatestStreamArn;
    await w.fail(
      relayFailureMessage({
        streamArn: streamArn ?? '',
        shardId: 'shardId-00000001700000000000-deadbeef',
        start: '000000000000000000100',
        end: '000000000000000000200',
        batchSize: 3,
      }),
    );
    const out = memoryOutput({ json: true });

    const report = await eventFailuresRedrive(w.deps, {}, out);

    expect(report).toMatchObject({ messages: 1, replayed: 0, gone: 1, discarded: 0, kept: 1 });
    expect(eventFailuresCleared(report)).toBe(false);
    expect(out.documents[0]).toMatchObject({
      gone_batches: [
        {
          shard_id: 'shardId-00000001700000000000-deadbeef',
          start_sequence_number: '000000000000000000100',
          end_sequence_number: '000000000000000000200',
        },
      ],
    });
    // Still on the queue and visible again as the run ends (runbook §4b: record it, then run again
    // with --discard-gone), not hidden for minutes; the emulator applies a release on a 0 ms timer.
    const queue = new SqsDeadLetterQueue(w.sqs, w.failureQueueUrl);
    await eventually('the kept message visible again', async () => (await queue.counts()).visible === 1);
    expect(await queue.counts()).toEqual({ visible: 1, notVisible: 0 });
    const again = await eventFailuresRedrive(w.deps, {}, memoryOutput());
    expect(again).toMatchObject({ messages: 1, gone: 1, kept: 1 });
    expect(eventFailuresCleared(again)).toBe(false);
    await eventually('the kept message visible again', async () => (await queue.counts()).visible === 1);
    const discarded = await eventFailuresRedrive(w.deps, { discardGone: true }, memoryOutput());
    expect(discarded).toMatchObject({ messages: 1, gone: 1, discarded: 1, kept: 0, remaining: 0 });
    expect(eventFailuresCleared(discarded)).toBe(true);
  });

  it('fails while messages are left on the queue after stopping at --max, and says how many', async () => {
    const w = await world();
    for (let shard = 1; shard <= 3; shard++)
      await w.fail(
        relayFailureMessage({
          streamArn: 'arn:aws:dynamodb:us-east-1:000000000000:table/gone/stream/2026-01-01T00:00:00.000',
          shardId: `shardId-00000001700000000000-0000000${shard}`,
          start: '000000000000000000100',
          end: '000000000000000000200',
          batchSize: 1,
        }),
      );
    await eventually(
      '3 failure messages visible',
      async () => (await visibleCount(w.sqs, w.failureQueueUrl)) === 3,
    );
    const out = memoryOutput();

    const report = await eventFailuresRedrive(w.deps, { discardGone: true, max: 2 }, out);

    expect(report).toMatchObject({ messages: 2, discarded: 2, kept: 0, remaining: 1 });
    expect(eventFailuresCleared(report)).toBe(false);
    expect(out.text()).toMatch(/left on the queue:\s+1/);
    expect(out.warnings.join('\n')).toContain('run again');
    const rest = await eventFailuresRedrive(w.deps, { discardGone: true, max: 2 }, memoryOutput());
    expect(rest).toMatchObject({ messages: 1, discarded: 1, remaining: 0 });
    expect(eventFailuresCleared(rest)).toBe(true);
  });

  it('removes a gone batch with --discard-gone and says what could not be replayed', async () => {
    const w = await world();
    await w.fail(
      relayFailureMessage({
        streamArn: 'arn:aws:dynamodb:us-east-1:000000000000:table/gone/stream/2026-01-01T00:00:00.000',
        shardId: 'shardId-00000001700000000000-deadbeef',
        start: '000000000000000000100',
        end: '000000000000000000200',
        batchSize: 3,
      }),
    );
    const out = memoryOutput();

    const report = await eventFailuresRedrive(w.deps, { discardGone: true }, out);

    expect(report).toMatchObject({ messages: 1, gone: 1, discarded: 1, kept: 0 });
    expect(eventFailuresCleared(report)).toBe(true);
    expect(out.warnings.join('\n')).toContain('shardId-00000001700000000000-deadbeef');
    expect(await visibleCount(w.sqs, w.failureQueueUrl)).toBe(0);
  });

  it('keeps a batch whose replay fails again, and a failure message it cannot read', async () => {
    const w = await world();
    await acceptAndSend(w.harness.tableName, messageId(2));
    await w.fail(w.tail.failureMessage(await w.tail.next()));
    await w.fail('{"not":"a failure record"}');
    const out = memoryOutput();

    const report = await eventFailuresRedrive(
      eventFailureDeps({
        sqs: w.sqs,
        documents: documentClient(),
        streams: streamsClient(),
        tableName: w.harness.tableName,
        eventFailureQueueUrl: w.failureQueueUrl,
        webhookQueueUrl: w.harness.queueUrl,
        bus: { publish: async (events) => ({ failed: events, error: new Error('still throttled') }) },
        busEvents: 'all',
        attachments: undefined,
        retryHours: 24,
        retentionDays: 30,
        now: w.harness.clock.now,
      }),
      {},
      out,
    );

    expect(report).toMatchObject({ messages: 2, replayed: 0, kept: 2 });
    expect(eventFailuresCleared(report)).toBe(false);
    expect(out.warnings[0]).toContain('stay on the queue');
  });
});
