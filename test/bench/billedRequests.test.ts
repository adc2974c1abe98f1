import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BILLED_REQUESTS } from '../../bench/cost.js';
import type { RecordedAwsRequest } from '../../lambdas/adapters/awsClients.js';
import { wireApi } from '../../lambdas/api/handler.js';
import { wireAuthorizer } from '../../lambdas/authorizer/handler.js';
import type { PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { wireEvents } from '../../lambdas/events/handler.js';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import type { Log } from '../../lambdas/ports/Log.js';
import { wireRelay } from '../../lambdas/relay/handler.js';
import { wireSender } from '../../lambdas/sender/handler.js';
import { RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { wireWebhookDelivery } from '../../lambdas/webhooks/handler.js';
import { EVENTS_STREAM_FILTER } from '../../lib/webhookLayout.js';
import { type FilterPattern, matchesFilter } from '../../local/runners/eventFilter.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { apiEvent, authorizerEvent, validBody } from '../api/events.js';
import { readRecordedRequests } from '../iam/iamRequests.js';
import {
  type EventBridgeStandIn,
  receiveAll,
  recordedAs,
  sqsEvent,
  startEventBridgeStandIn,
  webhookQueueBeside,
} from '../iam/recordingWorld.js';
import { schedulerClient, startScheduler } from '../relay/relayParts.js';
import { StreamTail } from '../relay/streamTail.js';
import { documentClient, freshQueues, freshTable, LOCAL_AWS, uniqueName } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';

/**
 * Issue 32, "a new request on the path cannot go unbilled": a message's whole path — the authorizer,
 * an immediate enqueue with an attachment and a deferred enqueue (through the Scheduler) with a webhook subscribed, the relay, the sender (the api's copy
 * sent, the relay's copy dropped, the Scheduler's copy re-delayed), the event producer with a bus, the webhook deliveries — runs with
 * every function wired as in Lambda and every AWS request it puts on the wire recorded
 * (POSTDATE_RECORD_AWS_CALLS, as test/iam/ records them). Each recorded (function, Service.Command)
 * must be on the cost model's list (bench/cost.ts, BILLED_REQUESTS), which is what it prices.
 */

const SILENT: Log = { info: () => {}, warn: () => {}, error: () => {} };
const SCHEDULE_GROUP = 'postdate-billed';
const recordFile = join(mkdtempSync(join(tmpdir(), 'postdate-billed-')), 'aws-calls.jsonl');

let env: Record<string, string>;
let tail: StreamTail;
let sendQueue: { url: string; arn: string };
let webhookQueue: { url: string; arn: string };
let scheduler: SchedulerEmulator;
let s3: S3Emulator;
let smtp: TestSmtpServer;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let eventBridge: EventBridgeStandIn;
let apiKey = '';

const as = recordedAs(recordFile);

/** `Service.Command` of one recorded wire request, in the SDK's names (the cost model's). */
function billedNameOf(recorded: RecordedAwsRequest): string {
  const [prefix, operation] = (recorded.target ?? '').split('.');
  if (prefix?.startsWith('DynamoDB_')) return `DynamoDB.${operation}`;
  if (prefix === 'AmazonSQS') return `SQS.${operation}`;
  if (prefix === 'AWSEvents') return `EventBridge.${operation}`;
  if (prefix === 'secretsmanager') return `SecretsManager.${operation}`;
  if (/^\/schedules\//.test(recorded.path)) {
    const verb = { POST: 'Create', DELETE: 'Delete', GET: 'Get', PUT: 'Update' }[recorded.method];
    return `Scheduler.${verb ?? recorded.method}Schedule`;
  }
  if (recorded.method === 'HEAD') return 'S3.HeadObject';
  if ('tagging' in recorded.query) return 'S3.PutObjectTagging';
  if (typeof recorded.query['x-id'] === 'string') return `S3.${recorded.query['x-id']}`;
  return `unknown ${recorded.method} ${recorded.path}`;
}

beforeAll(async () => {
  const { tableName, streamArn } = await freshTable('billed');
  tail = new StreamTail(streamArn);
  const queues = await freshQueues(2);
  sendQueue = { url: queues.urls.send, arn: queues.arns.send };
  webhookQueue = await webhookQueueBeside({ url: queues.urls.send, arn: queues.arns.send });
  scheduler = await startScheduler();
  s3 = await startS3Emulator({ port: 0, bucket: uniqueName('billed').toLowerCase() });
  await schedulerClient(scheduler.endpoint).send(new CreateScheduleGroupCommand({ Name: SCHEDULE_GROUP }));
  smtp = await startSmtpServer();
  receiver = await startReceiver(() => 200);
  eventBridge = await startEventBridgeStandIn();
  env = {
    AWS_REGION: LOCAL_AWS.region,
    AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
    AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridge.endpoint,
    POSTDATE_LOCAL: 'true',
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    POSTDATE_ALLOWED_FROM: '*@example.com',
    POSTDATE_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    SMTP_HOST: smtp.host,
    SMTP_PORT: String(smtp.port),
    SMTP_REQUIRE_TLS: 'false',
    POSTDATE_TABLE_NAME: tableName,
    POSTDATE_SEND_QUEUE_URL: queues.urls.send,
    POSTDATE_SEND_QUEUE_ARN: queues.arns.send,
    POSTDATE_SEND_DLQ_URL: queues.urls.sendDeadLetter,
    POSTDATE_RELAY_FAILURE_QUEUE_URL: queues.urls.relayFailures,
    POSTDATE_SCHEDULE_GROUP: SCHEDULE_GROUP,
    POSTDATE_SCHEDULER_ROLE_ARN: 'arn:aws:iam::123456789012:role/postdate-scheduler',
    POSTDATE_SCHEDULE_DLQ_ARN: queues.arns.scheduleDeadLetter,
    POSTDATE_WEBHOOK_QUEUE_URL: webhookQueue.url,
    POSTDATE_EVENT_BUS_NAME: 'postdate-billed-bus',
    POSTDATE_ATTACHMENT_BUCKET: s3.bucket,
    POSTDATE_S3_ENDPOINT: s3.endpoint,
    // The deferred path compressed as bench/cost.ts compresses it: a message due in 5 s goes through
    // the Scheduler, and the sender re-delays the early copy, exactly as one due next week would.
    POSTDATE_DIRECT_DELAY_MAX_SECONDS: '2',
    POSTDATE_SCHEDULE_LEAD_SECONDS: '1',
  };
  ({ secret: apiKey } = await createApiKey(documentClient(), tableName, { tenant: 'acme', now: new Date() }));
  // The subscription is set up beforehand, unrecorded: it is not on a message's path.
  const setUp = await wireApi(
    env,
    SILENT as never,
  )(apiEvent({ method: 'POST', path: '/v1/webhooks', body: { url: receiver.url() } }));
  expect(setUp.statusCode).toBe(201);
}, 60_000);

afterAll(async () => {
  await smtp?.close().catch(() => {});
  await receiver?.close();
  await scheduler?.stop();
  await s3?.stop();
  await eventBridge?.close();
});

describe('the cost model bills every request a message makes (issue 32)', { timeout: 120_000 }, () => {
  it("has every recorded (function, request) of a message's path on its list", async () => {
    const authorize = as('authorizer', () => wireAuthorizer(env, SILENT as never));
    expect(await authorize(authorizerEvent({ authorization: `Bearer ${apiKey}` }))).toMatchObject({
      isAuthorized: true,
    });
    const api = as('api', () => wireApi(env, SILENT as never));
    const enqueue = async (key: string, body: Record<string, unknown>) =>
      (
        await api(
          apiEvent({
            method: 'POST',
            path: '/v1/messages',
            body: validBody(body),
            headers: { 'idempotency-key': key },
          }),
        )
      ).statusCode;
    // The immediate one carries a file: its bytes put by the api, tagged by the producer, read by the sender.
    const attachments = [{ filename: 'note.txt', content: Buffer.from('a small file').toString('base64') }];
    expect(await enqueue('now', { attachments })).toBe(202);
    expect(await enqueue('later', { delay_seconds: 5 })).toBe(202);

    const relay = as('relay', () => wireRelay(env, SILENT as never));
    const produce = as('events', () => wireEvents(env, SILENT));
    const deliver = as('webhooks', () => wireWebhookDelivery(env, SILENT));
    const sender = as('sender', () => wireSender(env));
    const read: DynamoDBRecord[] = [];
    /** The stream's new records to the relay and the producer, each through its own filter. */
    const handStream = async () => {
      const records = (await tail.next()).Records;
      read.push(...records);
      const relayed = records.filter((r) => matchesFilter(RELAY_STREAM_FILTER as FilterPattern, r));
      if (relayed.length > 0) expect(await relay({ Records: relayed })).toEqual({ batchItemFailures: [] });
      const produced = records.filter((r) => matchesFilter(EVENTS_STREAM_FILTER as FilterPattern, r));
      if (produced.length > 0)
        expect(await produce({ Records: produced })).toEqual({ batchItemFailures: [] });
    };
    try {
      await handStream();
      // The immediate message: the api's copy at once, the relay's a few seconds later (dropped: the
      // message is sent). The deferred one: the Scheduler's copy (re-delayed), then the one sent.
      let copies = 0;
      await eventually(
        () => `four copies at the sender and two sent, not ${copies} and ${smtp.transactions}`,
        async () => {
          const messages = await receiveAll(sendQueue.url);
          if (messages.length > 0) await sender.handle(sqsEvent(messages, sendQueue.arn));
          copies += messages.length;
          return copies >= 4 && smtp.transactions >= 2;
        },
        { withinMs: 40_000, everyMs: 100 },
      );
      expect(smtp.transactions).toBe(2);
      await handStream();
      await eventually(
        'the webhook deliveries of both messages, scheduled and sent',
        async () => {
          const messages = await receiveAll(webhookQueue.url);
          if (messages.length > 0) await deliver(sqsEvent(messages, webhookQueue.arn));
          return receiver.received.length >= 4;
        },
        { withinMs: 30_000, everyMs: 100 },
      );
    } finally {
      await sender.close();
    }

    const seen = new Map<string, Set<string>>();
    for (const recorded of readRecordedRequests(recordFile)) {
      const calls = seen.get(recorded.function) ?? new Set<string>();
      calls.add(billedNameOf(recorded));
      seen.set(recorded.function, calls);
    }
    // The path was walked: each function made its requests.
    expect([...seen.keys()].sort()).toEqual(['api', 'authorizer', 'events', 'relay', 'sender', 'webhooks']);
    expect(seen.get('events')).toContain('EventBridge.PutEvents');
    const unbilled = [...seen].flatMap(([fn, calls]) =>
      [...calls]
        .filter(
          (call) =>
            !(BILLED_REQUESTS[fn as PostdateFunctionName] as readonly string[] | undefined)?.includes(call),
        )
        .map((call) => `${fn} ${call}`),
    );
    expect(unbilled).toEqual([]);
  });
});
