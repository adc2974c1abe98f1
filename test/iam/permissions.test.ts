import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { wireApi } from '../../lambdas/api/handler.js';
import { wireAuthorizer } from '../../lambdas/authorizer/handler.js';
import { wireBounces } from '../../lambdas/bounces/handler.js';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { wireEvents } from '../../lambdas/events/handler.js';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import type { Log } from '../../lambdas/ports/Log.js';
import { wireRelay } from '../../lambdas/relay/handler.js';
import { wireSender } from '../../lambdas/sender/handler.js';
import { messagePk, uncopiedDeadPk } from '../../lambdas/store/messageRecord.js';
import { SENDING_GATE_KEY } from '../../lambdas/store/sendingGate.js';
import { ITEM_SORT_KEY, KEY, RELAY_STREAM_FILTER } from '../../lambdas/store/tableLayout.js';
import { deliveryPartitionKey } from '../../lambdas/store/webhookStore.js';
import { wireSweeper } from '../../lambdas/sweeper/handler.js';
import { wireWebhookDelivery } from '../../lambdas/webhooks/handler.js';
import type { Bounces } from '../../lib/constructs/Bounces.js';
import type { Webhooks } from '../../lib/constructs/Webhooks.js';
import { EVENTS_STREAM_FILTER } from '../../lib/webhookLayout.js';
import { type FilterPattern, matchesFilter } from '../../local/runners/eventFilter.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import type { SchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { apiEvent, authorizerEvent, validBody } from '../api/events.js';
import { permanentBounce, snsEvent } from '../bounces/sesNotifications.js';
import { logicalIdOf, synthesizePostdate, TEST_PROPS } from '../cdk/support/synthesize.js';
import { stateRecord } from '../relay/records.js';
import { schedulerClient, startScheduler } from '../relay/relayParts.js';
import { StreamTail } from '../relay/streamTail.js';
import {
  documentClient,
  freshQueues,
  freshTable,
  LOCAL_AWS,
  sqsClient,
  uniqueName,
} from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver } from '../webhooks/webhookHarness.js';
import { type IamRequest, iamRequestsOf, readRecordedRequests } from './iamRequests.js';
import {
  type EventBridgeStandIn,
  queueName,
  receiveAll,
  recordedAs,
  sqsEvent,
  startEventBridgeStandIn,
  webhookQueueBeside,
} from './recordingWorld.js';
import {
  arnOf,
  type PolicyStatement,
  roleStatements,
  simulate,
  TEST_ACCOUNT,
  templateResolver,
} from './templatePolicies.js';

/**
 * DESIGN §6, "Permissions are part of the contract". No emulator enforces IAM, so this file proves
 * the grants on AWS's own terms: it drives every function, wired exactly as its Lambda entry wires
 * it, through representative work on the emulators with every AWS request recorded
 * (lambdas/adapters/awsClients.ts), then evaluates each recorded request — action, resource ARN,
 * dynamodb:LeadingKeys, iam:PassedToService — against that function's policy in the synthesized
 * template with an IAM policy simulator. None may be denied; and every action a policy allows must
 * be one the function was seen making, or stand on the commented allow-list below.
 */

const SES_TOPIC_ARN = `arn:aws:sns:us-east-1:${TEST_ACCOUNT}:ses-feedback`;
const BUS_NAME = 'postdate-iam-bus';
const SILENT: Log = { info: () => {}, warn: () => {}, error: () => {} };

const recordFile = join(mkdtempSync(join(tmpdir(), 'postdate-iam-')), 'aws-calls.jsonl');
const { template, stack } = synthesizePostdate({
  ...TEST_PROPS,
  sesNotificationTopicArn: SES_TOPIC_ARN,
});
const postdate = stack.postdate;
const webhooksConstruct = postdate.node.findChild('Webhooks') as Webhooks;

let env: Record<string, string>;
let tableName: string;
let streamArn: string;
let tail: StreamTail;
let sendQueue: { url: string; arn: string };
let queueUrls: Awaited<ReturnType<typeof freshQueues>>['urls'];
let webhookQueue: { url: string; arn: string };
let scheduler: SchedulerEmulator;
let s3: S3Emulator;
let smtp: TestSmtpServer;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
/** The webhook receiver's answer to the next POST. */
let receiverStatus = 200;
let eventBridge: EventBridgeStandIn;
let names: Record<string, string>;
/** Stream records not yet handed to the relay and the event producer. */
const streamRecords: DynamoDBRecord[] = [];

const as = recordedAs(recordFile);

interface GateItem {
  readonly breaker?: { readonly state?: string; readonly rate_factor?: number; readonly token?: string };
}

/** The sending gate item as the table holds it (read by the test, not recorded). */
async function readGate(): Promise<GateItem | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName, Key: SENDING_GATE_KEY, ConsistentRead: true }),
  );
  return Item as GateItem | undefined;
}

/** A message's status as the table holds it (read by the test, not recorded). */
async function messageStatus(id: string): Promise<string | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      ConsistentRead: true,
    }),
  );
  return Item?.status as string | undefined;
}

/** A closed breaker at full rate again (the relay recovered), so the next scenario starts clean. */
async function resetGate(): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName, Key: SENDING_GATE_KEY }));
}

async function pullStream(): Promise<void> {
  streamRecords.push(...(await tail.next()).Records);
}

beforeAll(async () => {
  ({ tableName, streamArn } = await freshTable('iam'));
  tail = new StreamTail(streamArn);
  const queues = await freshQueues(2);
  sendQueue = { url: queues.urls.send, arn: queues.arns.send };
  queueUrls = queues.urls;
  webhookQueue = await webhookQueueBeside({ url: queues.urls.send, arn: queues.arns.send });
  scheduler = await startScheduler();
  s3 = await startS3Emulator({ port: 0, bucket: uniqueName('attachments').toLowerCase() });
  await schedulerClient(scheduler.endpoint).send(
    new CreateScheduleGroupCommand({ Name: postdate.scheduleGroupName }),
  );
  smtp = await startSmtpServer();
  receiver = await startReceiver(() => receiverStatus);
  eventBridge = await startEventBridgeStandIn();

  names = {
    [logicalIdOf(postdate.table)]: tableName,
    [logicalIdOf(postdate.sendQueue)]: queueName(queues.urls.send),
    [logicalIdOf(postdate.sendDeadLetterQueue)]: queueName(queues.urls.sendDeadLetter),
    [logicalIdOf(postdate.relayFailureQueue)]: queueName(queues.urls.relayFailures),
    [logicalIdOf(postdate.scheduleDeadLetterQueue)]: queueName(queues.urls.scheduleDeadLetter),
    [logicalIdOf(webhooksConstruct.queue)]: queueName(webhookQueue.url),
    [logicalIdOf(webhooksConstruct.eventBus)]: BUS_NAME,
    [logicalIdOf(postdate.attachmentBucket)]: s3.bucket,
  };
  const { resolve } = templateResolver(template, names);
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
    POSTDATE_MAX_ATTEMPTS: '2',
    // A replicated group head (store/groupHead.ts): its replicas' keys must be allowed too.
    POSTDATE_GROUP_HEAD_REPLICAS: '3',
    SMTP_HOST: smtp.host,
    SMTP_PORT: String(smtp.port),
    SMTP_REQUIRE_TLS: 'false',
    POSTDATE_TABLE_NAME: tableName,
    POSTDATE_SEND_QUEUE_URL: queues.urls.send,
    POSTDATE_SEND_QUEUE_ARN: queues.arns.send,
    POSTDATE_SEND_DLQ_URL: queues.urls.sendDeadLetter,
    POSTDATE_RELAY_FAILURE_QUEUE_URL: queues.urls.relayFailures,
    POSTDATE_SCHEDULE_GROUP: postdate.scheduleGroupName,
    // The role the relay passes is the stack's own, so iam:PassRole is checked against it.
    POSTDATE_SCHEDULER_ROLE_ARN: String(resolve(stack.resolve(postdate.schedulerRoleArn))),
    POSTDATE_SCHEDULE_DLQ_ARN: queues.arns.scheduleDeadLetter,
    POSTDATE_WEBHOOK_QUEUE_URL: webhookQueue.url,
    POSTDATE_EVENT_BUS_NAME: BUS_NAME,
    POSTDATE_ATTACHMENT_BUCKET: s3.bucket,
    POSTDATE_S3_ENDPOINT: s3.endpoint,
  };
}, 60_000);

afterAll(async () => {
  await smtp?.close().catch(() => {});
  await receiver?.close();
  await scheduler?.stop();
  await s3?.stop();
  await eventBridge?.close();
});

// The scenarios make hundreds of requests on a shared, loaded machine.
describe('every function, wired as in Lambda, with its AWS requests recorded', { timeout: 120_000 }, () => {
  let messageIds: string[] = [];
  let webhookId = '';
  let deadId = '';

  it('authorizer: a key authorizes its tenant, an unknown key does not', async () => {
    const { secret } = await createApiKey(documentClient(), tableName, { tenant: 'acme', now: new Date() });
    const authorize = as('authorizer', () => wireAuthorizer(env, SILENT as never));
    expect(await authorize(authorizerEvent({ authorization: `Bearer ${secret}` }))).toMatchObject({
      isAuthorized: true,
    });
    expect(await authorize(authorizerEvent({ authorization: 'Bearer pd_live_unknown' }))).toMatchObject({
      isAuthorized: false,
    });
  });

  it('api: messages, groups, templates, webhooks and suppressions', async () => {
    const api = as('api', () => wireApi(env, SILENT as never));
    const call = async (
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
      query?: Record<string, string>,
    ) => {
      const result = await api(apiEvent({ method, path, body, headers, ...(query ? { query } : {}) }));
      return { status: result.statusCode ?? 0, json: result.body ? JSON.parse(result.body) : {} };
    };
    const enqueue = (key: string, body: Record<string, unknown>) =>
      call('POST', '/v1/messages', validBody(body), { 'idempotency-key': key });
    const later = new Date(Date.now() + 3_600_000).toISOString();

    // Inline attachments: the api puts them in the bucket; the sender reads the grouped message's
    // as it sends it (the first is refused at RCPT TO, before its body is read) (DESIGN §13).
    const attachments = [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4').toString('base64') }];
    const now = await enqueue('now', { to: ['bounce-me@example.com'], attachments });
    expect(now.status).toBe(202);
    expect((await enqueue('now', { to: ['bounce-me@example.com'], attachments })).status).toBe(200);
    const deferred = await enqueue('deferred', { send_at: later });
    // An upload: the api reserves it (its declaration put; the pre-signed PUT is authorized as the
    // api's s3:PutObject on the same key area), checks it and copies it into the message. The
    // message is cancelled, so the event producer tags it ended (decision 0090).
    const upload = await call('POST', '/v1/attachments', {
      filename: 'ledger.pdf',
      content_type: 'application/pdf',
      size: 8,
    });
    expect(upload.status).toBe(201);
    const put = await fetch(upload.json.upload_url, {
      method: 'PUT',
      body: Buffer.from('%PDF-1.4'),
      headers: { 'content-type': 'application/pdf' },
    });
    expect(put.status).toBe(200);
    const cancelled = await enqueue('cancelled', {
      send_at: later,
      attachments: [{ attachment_id: upload.json.id }],
    });
    expect(cancelled.status).toBe(202);
    const grouped = await enqueue('grouped', { group: { key: 'campaign:1', version: 1 }, attachments });
    expect((await call('PUT', '/v1/groups/campaign:2', { version: 3 })).status).toBe(200);
    messageIds = [now.json.id, deferred.json.id, grouped.json.id];

    expect((await call('GET', `/v1/messages/${now.json.id}`)).status).toBe(200);
    expect((await call('GET', '/v1/messages')).status).toBe(200);
    expect((await call('GET', '/v1/messages', undefined, {}, { status: 'scheduled' })).status).toBe(200);
    expect((await call('PATCH', `/v1/messages/${deferred.json.id}`, { send_at: later })).status).toBe(200);
    expect((await call('DELETE', `/v1/messages/${cancelled.json.id}`)).status).toBe(200);
    expect((await call('POST', `/v1/messages/${deferred.json.id}/retry`)).status).toBe(409);

    const template = { subject: 'Hello {{name}}', text: 'Hi {{name}}' };
    expect((await call('PUT', '/v1/templates/welcome', template)).status).toBe(201);
    expect((await call('PUT', '/v1/templates/welcome', template)).status).toBe(201);
    expect((await call('GET', '/v1/templates')).status).toBe(200);
    expect((await call('GET', '/v1/templates/welcome')).status).toBe(200);
    expect((await call('GET', '/v1/templates/welcome/versions/1')).status).toBe(200);
    expect((await call('POST', '/v1/templates/welcome/render', { data: { name: 'Ada' } })).status).toBe(200);
    const templated = await call(
      'POST',
      '/v1/messages',
      {
        to: ['ada@example.com'],
        from: 'ops@example.com',
        template: { name: 'welcome' },
        data: { name: 'Ada' },
      },
      { 'idempotency-key': 'templated' },
    );
    expect(templated.status).toBe(202);
    messageIds.push(templated.json.id);

    const webhook = await call('POST', '/v1/webhooks', { url: receiver.url() });
    expect(webhook.status).toBe(201);
    webhookId = webhook.json.id;
    expect((await call('GET', '/v1/webhooks')).status).toBe(200);
    expect((await call('GET', `/v1/webhooks/${webhookId}`)).status).toBe(200);
    expect((await call('POST', `/v1/webhooks/${webhookId}/test`)).status).toBe(202);
    expect((await call('GET', `/v1/webhooks/${webhookId}/deliveries`)).status).toBe(200);

    expect((await call('PUT', '/v1/suppressions/gone@example.com', { reason: 'manual' })).status).toBe(200);
    expect((await call('GET', '/v1/suppressions')).status).toBe(200);
    expect((await call('DELETE', '/v1/suppressions/gone@example.com')).status).toBe(200);
    expect((await call('PUT', '/v1/suppressions/blocked@example.com', {})).status).toBe(200);
    const suppressed = await enqueue('suppressed', { to: ['blocked@example.com'] });
    messageIds.push(suppressed.json.id);
    expect((await call('DELETE', '/v1/templates/welcome')).status).toBe(200);
  });

  it('relay: due copies to the queue, later ones to a schedule, a cancel deletes its schedule', async () => {
    await pullStream();
    const relay = as('relay', () => wireRelay(env, SILENT as never));
    const records = streamRecords.filter((record) =>
      matchesFilter(RELAY_STREAM_FILTER as FilterPattern, record),
    );
    expect(records.length).toBeGreaterThan(0);
    expect(await relay({ Records: records })).toEqual({ batchItemFailures: [] });
  });

  it('events: every status change to the bus and to the subscribed endpoint', async () => {
    const produce = as('events', () => wireEvents(env, SILENT));
    const records = streamRecords.filter((record) =>
      matchesFilter(EVENTS_STREAM_FILTER as FilterPattern, record),
    );
    expect(records.length).toBeGreaterThan(0);
    expect(await produce({ Records: records })).toEqual({ batchItemFailures: [] });
  });

  it('webhooks: deliveries are signed and POSTed, a secret rotated, a failing endpoint retried, a failed delivery retried by hand', async () => {
    const deliver = as('webhooks', () => wireWebhookDelivery(env, SILENT));
    const copies = await receiveAll(webhookQueue.url);
    expect(copies.length).toBeGreaterThan(0);
    // With the table out of reach, each copy is kept and comes back after a short backoff
    // (ChangeMessageVisibility, decision 0110); then the reachable function delivers them.
    const unreachable = as('webhooks', () =>
      wireWebhookDelivery({ ...env, AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9' }, SILENT),
    );
    const kept = await unreachable(sqsEvent(copies, webhookQueue.arn));
    expect(kept.batchItemFailures).toHaveLength(copies.length);
    await deliver(sqsEvent(copies, webhookQueue.arn));
    expect(receiver.received.length).toBeGreaterThan(0);
    const api = as('api', () => wireApi(env, SILENT as never));
    const call = async (method: string, path: string) => {
      const result = await api(apiEvent({ method, path }));
      return { status: result.statusCode ?? 0, json: JSON.parse(result.body ?? '{}') };
    };

    const rotated = await call('POST', `/v1/webhooks/${webhookId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.json.secret).toEqual(expect.any(String));

    // An endpoint answering 500: the delivery is re-queued with its backoff.
    receiverStatus = 500;
    expect((await call('POST', `/v1/webhooks/${webhookId}/test`)).status).toBe(202);
    const failing = await receiveAll(webhookQueue.url);
    expect(failing.length).toBeGreaterThan(0);
    const seen = receiver.received.length;
    await deliver(sqsEvent(failing, webhookQueue.arn));
    expect(receiver.received.length).toBeGreaterThan(seen);
    const deliveries = await call('GET', `/v1/webhooks/${webhookId}/deliveries`);
    const retried = (deliveries.json.items as { id: string; status: string; attempts: number }[]).find(
      (delivery) => delivery.status === 'pending' && delivery.attempts === 1,
    );
    expect(retried).toBeDefined();

    // Its retry window spent (set here, as 24 h of failures would leave it), an operator retries it.
    await documentClient().send(
      new UpdateCommand({
        TableName: tableName,
        Key: { [KEY.partition]: deliveryPartitionKey(webhookId, retried?.id ?? ''), [KEY.sort]: retried?.id },
        UpdateExpression: 'SET #status = :failed',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':failed': 'failed' },
      }),
    );
    const retry = await call('POST', `/v1/webhooks/${webhookId}/deliveries/${retried?.id}/retry`);
    expect(retry.status).toBe(202);
    expect(retry.json.status).toBe('pending');
    receiverStatus = 200;
    expect((await call('DELETE', `/v1/webhooks/${webhookId}`)).status).toBe(200);
  });

  it("sweeper: re-dispatches an overdue message, counts those that wait, takes a stale copy off the DLQ, renews a dead message's old one and makes one never recorded", async () => {
    const past = new Date(Date.now() - 3_600_000);
    const records = [];
    for (const status of ['scheduled', 'dead', 'unknown'] as const) {
      const record = stateRecord({ sendAt: past, createdAt: past, status, rev: 2 });
      records.push(record);
      await documentClient().send(new PutCommand({ TableName: tableName, Item: record }));
    }
    // The DLQ holds the dead message's current copy and an older one of the retried message (decision 0141).
    const [retried, dead] = records;
    for (const copy of [
      { id: dead?.id ?? '', rev: 2 },
      { id: retried?.id ?? '', rev: 1 },
    ]) {
      await sqsClient().send(
        new SendMessageCommand({
          QueueUrl: queueUrls.sendDeadLetter,
          MessageBody: encodeDispatchPayload({ ...copy, dlq: true }),
        }),
      );
    }
    // A dead message whose copy's put was never recorded (the backstop moved another): the sweeper
    // makes its copy and records it (decision 0159).
    const uncopied = { ...stateRecord({ sendAt: past, createdAt: past, status: 'dead' }), attempts: 1 };
    await documentClient().send(
      new PutCommand({
        TableName: tableName,
        Item: { ...uncopied, due_pk: uncopiedDeadPk(uncopied.id), due_at: past.toISOString() },
      }),
    );
    // Its clock 13 days ahead: the dead message's copy reached the renewal age (decision 0148).
    const ahead = () => new Date(Date.now() + 13 * 86_400_000);
    const sweep = as('sweeper', () => wireSweeper(env, SILENT as never, { count: () => {} }, ahead));
    const report = await sweep();
    // Renewed: the dead message's copy and, the sweeper's clock being 13 days ahead of SQS's, the one just made.
    expect(report.deadLetters).toMatchObject({
      walked: 'surplus',
      removed: 1,
      renewed: 2,
      made: 1,
      refused: 0,
    });
    expect(report.deadLetters?.error).toBeUndefined();
    expect(
      (await receiveAll(queueUrls.sendDeadLetter)).map((copy) => JSON.parse(copy.Body ?? '{}').id).sort(),
    ).toEqual([dead?.id, uncopied.id].sort());
    const { Item } = await documentClient().send(
      new GetCommand({
        TableName: tableName,
        Key: { [KEY.partition]: uncopied.pk, [KEY.sort]: uncopied.sk },
      }),
    );
    expect(Item?.due_pk).toMatch(/^wait#dead#/);
  });

  it('sender: sends, suppresses, bounces a recipient, backs off, re-delays an early copy, dead-letters, is throttled, and meets a relay that refuses connections', async () => {
    const api = as('api', () => wireApi(env, SILENT as never));
    const enqueue = async (key: string, body: Record<string, unknown> = {}) => {
      const result = await api(
        apiEvent({
          method: 'POST',
          path: '/v1/messages',
          body: validBody(body),
          headers: { 'idempotency-key': key },
        }),
      );
      expect(result.statusCode).toBe(202);
      return JSON.parse(result.body ?? '{}').id as string;
    };
    const sendOnce = async (sender: ReturnType<typeof wireSender>) => {
      const copies = await receiveAll(sendQueue.url);
      expect(copies.length).toBeGreaterThan(0);
      await sender.handle(sqsEvent(copies, sendQueue.arn));
    };
    const senders: ReturnType<typeof wireSender>[] = [];
    const wired = (overrides: Record<string, string> = {}) => {
      const sender = as('sender', () => wireSender({ ...env, ...overrides }));
      senders.push(sender);
      return sender;
    };
    try {
      const sender = wired();
      // The message the api retries later is refused at RCPT TO (failed) whichever transaction it
      // rides in, and another one is deferred after the dot. One receive may leave copies behind
      // (the SQS emulator under load), so the first batch is received until it holds that message.
      const bounceMe = (address: string) =>
        address === 'bounce-me@example.com' ? { code: 550, message: '5.1.1 User unknown' } : undefined;
      const deferAfterDot = { code: 451, message: '4.3.0 Try later' };
      smtp.script(
        { rcptTo: bounceMe },
        { rcptTo: bounceMe, afterData: deferAfterDot },
        { rcptTo: bounceMe, afterData: deferAfterDot },
        { rcptTo: bounceMe },
      );
      const firstBatch: Awaited<ReturnType<typeof receiveAll>> = [];
      await eventually(
        'the copy of the message to bounce in the first batch',
        async () => {
          firstBatch.push(...(await receiveAll(sendQueue.url)));
          return firstBatch.some((copy) => JSON.parse(copy.Body ?? '{}').id === messageIds[0]);
        },
        { withinMs: 30_000, everyMs: 100 },
      );
      await sender.handle(sqsEvent(firstBatch, sendQueue.arn));
      expect(smtp.transactions).toBeGreaterThan(0);
      expect(await messageStatus(messageIds[0] ?? '')).toBe('failed');

      // An early copy (its schedule fired before send_at) goes back with its remaining delay.
      const early = await enqueue('early', {
        to: ['early@example.com'],
        send_at: new Date(Date.now() + 600_000).toISOString(),
      });
      await sqsClient().send(
        new SendMessageCommand({
          QueueUrl: sendQueue.url,
          MessageBody: encodeDispatchPayload({ id: early, rev: 1 }),
        }),
      );
      // Only the early copy: whatever else the queue still holds goes to the next step.
      const earlyCopies = (await receiveAll(sendQueue.url)).filter(
        (copy) => JSON.parse(copy.Body ?? '{}').id === early,
      );
      expect(earlyCopies).toHaveLength(1);
      const transactions = smtp.transactions;
      await sender.handle(sqsEvent(earlyCopies, sendQueue.arn));
      expect(smtp.transactions).toBe(transactions);

      // A 421 after DATA is this message's outcome: with one attempt allowed, its copy moves to the DLQ.
      smtp.script({ afterData: { code: 421, message: '4.4.2 Closing connection' } });
      const dead = await enqueue('dead', { to: ['dead@example.com'] });
      deadId = dead;
      await sendOnce(wired({ POSTDATE_MAX_ATTEMPTS: '1' }));
      expect(
        (await receiveAll(queueUrls.sendDeadLetter)).map((copy) => JSON.parse(copy.Body ?? '{}').id),
      ).toContain(dead);

      // SES's throttling reply slows every sender down: the gate item takes the rate factor.
      smtp.script({ afterData: { code: 454, message: 'Throttling failure: Maximum sending rate exceeded' } });
      await enqueue('throttled', { to: ['throttled@example.com'] });
      await sendOnce(wired());
      expect((await readGate())?.breaker?.rate_factor).toBeLessThan(1);
      smtp.script({});
      await resetGate();

      // A relay that refuses connections: the breaker opens on the sending gate item.
      await smtp.close();
      const outage = wired();
      for (const key of ['outage-1', 'outage-2', 'outage-3']) {
        await enqueue(key, { to: [`${key}@example.com`] });
        await sendOnce(outage);
      }
      expect((await readGate())?.breaker?.state).toBe('open');
    } finally {
      for (const sender of senders) await sender.close();
    }
  });

  it('api: a dead message retried by hand, and a failed one whose attachments it finds still stored', async () => {
    const api = as('api', () => wireApi(env, SILENT as never));
    const retried = await api(apiEvent({ method: 'POST', path: `/v1/messages/${deadId}/retry` }));
    expect(retried.statusCode).toBe(202);
    // Refused at RCPT TO above: failed, with an inline attachment the retry looks for (HeadObject).
    const failed = await api(apiEvent({ method: 'POST', path: `/v1/messages/${messageIds[0]}/retry` }));
    expect(failed.statusCode).toBe(202);
  });

  it('sweeper: replaces the probe token of a breaker open past two probe intervals', async () => {
    const before = await readGate();
    expect(before?.breaker?.state).toBe('open');
    // The token's copy was lost an hour ago (set here: nobody probed since).
    await documentClient().send(
      new UpdateCommand({
        TableName: tableName,
        Key: SENDING_GATE_KEY,
        UpdateExpression: 'SET breaker.probe_at = :past REMOVE breaker.probe_until',
        ExpressionAttributeValues: { ':past': new Date(Date.now() - 3_600_000).toISOString() },
      }),
    );
    const sweep = as('sweeper', () => wireSweeper(env, SILENT as never, { count: () => {} }));
    await sweep();
    const after = await readGate();
    expect(after?.breaker?.token).toBeDefined();
    expect(after?.breaker?.token).not.toBe(before?.breaker?.token);
  });

  it('bounces: an SES hard bounce suppresses the address for the message tenant', async () => {
    const bounce = as('bounces', () => wireBounces(env, SILENT, () => {}));
    await bounce(snsEvent(permanentBounce(messageIds[0] ?? '', ['bounce-me@example.com'])));
  });
});

describe('the recorded requests, evaluated against each function role in the synthesized template', {
  timeout: 120_000,
}, () => {
  it('denies none', async () => {
    const { resolve } = templateResolver(template, names);
    const requests = readRecordedRequests(recordFile).flatMap(iamRequestsOf);
    const denied: string[] = [];
    for (const request of requests) {
      const decision = await evaluate(request, resolve);
      if (decision !== 'Allowed') denied.push(`${request.function} ${decision}: ${describeRequest(request)}`);
    }
    expect(new Set(requests.map((request) => request.function))).toEqual(
      new Set(['api', 'authorizer', 'relay', 'sender', 'sweeper', 'events', 'webhooks', 'bounces']),
    );
    expect(denied).toEqual([]);
  });

  it('allows nothing a function was never seen making, beyond the commented allow-list', () => {
    const unused = grantsWithUse()
      .filter((grant) => !grant.seen && ALLOWED_BUT_NOT_MADE[grant.key] === undefined)
      .map((grant) => grant.key);
    expect(unused).toEqual([]);
  });

  it('lists on the allow-list only grants that exist and that no scenario reaches', () => {
    const grants = new Map(grantsWithUse().map((grant) => [grant.key, grant.seen]));
    const stale = Object.keys(ALLOWED_BUT_NOT_MADE).filter((key) => grants.get(key) !== false);
    expect(stale).toEqual([]);
  });
});

/**
 * Every (function, action, resource, item kind) a role allows, keyed as the allow-list is, with
 * whether that function was seen making such a request.
 */
function grantsWithUse(): { key: string; seen: boolean }[] {
  const { resolve } = templateResolver(template, names);
  const requests = readRecordedRequests(recordFile).flatMap(iamRequestsOf);
  const short = shortNames(resolve);
  const grants: { key: string; seen: boolean }[] = [];
  for (const name of POSTDATE_FUNCTIONS) {
    const made = requests.filter((request) => request.function === name);
    for (const statement of roleStatements(template, roleOf(name), resolve)) {
      if (statement.Effect !== 'Allow') continue;
      const patterns = leadingKeyPatterns(statement) ?? [undefined];
      for (const action of statement.Action) {
        if (LAMBDA_SERVICE_ACTIONS.test(action)) continue;
        for (const resource of statement.Resource) {
          for (const pattern of patterns) {
            const seen = made.some(
              (request) =>
                request.action === action &&
                globMatches(resource, request.resource) &&
                (pattern === undefined ||
                  ((request.context['dynamodb:LeadingKeys'] ?? []) as string[]).some((key) =>
                    globMatches(pattern, key),
                  )),
            );
            grants.push({ key: `${name} ${action} ${short(resource)}${pattern ? ` ${pattern}` : ''}`, seen });
          }
        }
      }
    }
  }
  return grants;
}

function leadingKeyPatterns(statement: PolicyStatement): string[] | undefined {
  const condition = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
  return condition === undefined ? undefined : [condition].flat();
}

function globMatches(pattern: string, value: string): boolean {
  const expression = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${expression}$`).test(value);
}

/** A resource ARN with the test's physical names replaced by what they are. */
function shortNames(resolve: (value: unknown) => unknown): (resource: string) => string {
  const bounces = postdate.node.findChild('Bounces') as Bounces;
  const arn = (construct: IConstruct) => String(resolve({ 'Fn::GetAtt': [logicalIdOf(construct), 'Arn'] }));
  const labels = new Map<string, string>([
    [arn(postdate.sendQueue), 'sendQueue'],
    [arn(postdate.sendDeadLetterQueue), 'sendDeadLetterQueue'],
    [arn(postdate.relayFailureQueue), 'relayFailureQueue'],
    [arn(webhooksConstruct.queue), 'webhookQueue'],
    [arn(webhooksConstruct.eventFailureQueue), 'eventFailureQueue'],
    [arn(bounces.failureQueue), 'bounceFailureQueue'],
    [arn(webhooksConstruct.eventBus), 'bus'],
    [arn(postdate.attachmentBucket), 'attachmentBucket'],
    [String(resolve(stack.resolve(postdate.smtpSecret.secretArn))), 'smtpSecret'],
  ]);
  const table = arnOf.table(tableName);
  return (resource) => labels.get(resource) ?? resource.split(table).join('table');
}

/**
 * Grants no function's code makes, each with its reason; every other allowed (action, resource,
 * item kind) must be one a function was seen making above. Keys: `function action resource [kind]`.
 */
const ALLOWED_BUT_NOT_MADE: Readonly<Record<string, string>> = {
  // Lambda's own destinations, sent to with the function's role: never by its code.
  'relay sqs:SendMessage relayFailureQueue':
    "the relay's event source mapping sends a batch it gave up on to its on-failure queue",
  'events sqs:SendMessage eventFailureQueue':
    "the event producer's event source mapping sends a batch it gave up on to its on-failure queue",
  'bounces sqs:SendMessage bounceFailureQueue':
    "Lambda's asynchronous invocation sends a notification it gave up on to the failure queue",
  // S3's own check, made with the caller's role: a GET or HEAD of a missing key is 404 only with it.
  'sender s3:ListBucket attachmentBucket':
    'S3 answers a missing attachment with 404, not 403, only to a caller that may list the bucket: the sender tells a file that is gone from an outage by it (decision 0171)',
  // AWS only.
  'sender secretsmanager:GetSecretValue smtpSecret':
    "a relay's secret is read in AWS only (POSTDATE_LOCAL reads its user and pass): relaySecrets.test.ts simulates it from the sender's environment, for one relay and for two",
};

/** Actions Lambda itself takes with the function's role (event sources, logs), never its code. */
const LAMBDA_SERVICE_ACTIONS =
  /^(logs:|dynamodb:(DescribeStream|GetRecords|GetShardIterator|ListStreams)$|sqs:(ReceiveMessage|DeleteMessage|GetQueueAttributes|GetQueueUrl)$)/;

function describeRequest(request: IamRequest): string {
  return `${request.action} ${request.resource} ${JSON.stringify(request.context)}`;
}

function roleOf(name: PostdateFunctionName): string {
  const fn = name === 'bounces' ? postdate.bounces : postdate.functions[name];
  if (fn === undefined) throw new Error(`no ${name} function in the stack`);
  const resource = template.toJSON().Resources[logicalIdOf(fn)];
  return resource.Properties.Role['Fn::GetAtt'][0];
}

async function evaluate(request: IamRequest, resolve: (value: unknown) => unknown): Promise<string> {
  return simulate(template, roleOf(request.function as PostdateFunctionName), request, resolve);
}
