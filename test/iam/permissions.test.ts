import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { CreateScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { attachmentS3Client } from '../../lambdas/adapters/S3AttachmentStore.js';
import { wireApi } from '../../lambdas/api/handler.js';
import { wireAuthorizer } from '../../lambdas/authorizer/handler.js';
import { wireBounces } from '../../lambdas/bounces/handler.js';
import { RESOURCE_SETTINGS } from '../../lambdas/core/configSpec.js';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { SIMULATOR_DOMAIN, testSideOf } from '../../lambdas/core/testSide.js';
import { wireEvents } from '../../lambdas/events/handler.js';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import type { Log } from '../../lambdas/ports/Log.js';
import { wireRelay } from '../../lambdas/relay/handler.js';
import { wireSender } from '../../lambdas/sender/handler.js';
import {
  dueShardPk,
  messagePk,
  uncopiedDeadPk,
  uncopiedDeadShardPk,
  waitingShardPk,
} from '../../lambdas/store/messageRecord.js';
import { SENDING_GATE_KEY } from '../../lambdas/store/sendingGate.js';
import { SWEEP_CURSORS_KEY } from '../../lambdas/store/sweepCursors.js';
import {
  ITEM_SORT_KEY,
  KEY,
  PARTITION_PREFIX,
  RELAY_STREAM_FILTER,
} from '../../lambdas/store/tableLayout.js';
import { deliveryPartitionKey, WEBHOOK_PARTITION_PREFIX } from '../../lambdas/store/webhookStore.js';
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
import {
  awsCallSites,
  type CallSite,
  callSitesByFunction,
  startCallSiteCoverage,
} from './callSiteCoverage.js';
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
  simulateStatements,
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
 *
 * A scenario proves only the requests it makes. So the code is read too: every AWS request each
 * function's bundle can build (callSiteCoverage.ts, from its entry through what its code names) must
 * be made by that function in a scenario here, or stand on UNRECORDED_CALLS, which says why it cannot
 * be made locally, names the statement that grants it and builds it as the code would in AWS, to be
 * simulated like the rest.
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

/** What every function is given: credentials, the emulators' endpoints and the test's settings. */
let env: Record<string, string>;
/** The local stand-in of each resource variable the construct may set (RESOURCE_SETTINGS). */
let localResources: Record<string, string>;
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

/** Deletes a message's attachments from the bucket, as the bucket's expiry or an operator would. */
async function loseAttachments(id: string): Promise<void> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      ConsistentRead: true,
    }),
  );
  const keys = ((Item?.attachments ?? []) as { key: string }[]).map((held) => held.key);
  expect(keys.length).toBeGreaterThan(0);
  const client = attachmentS3Client(s3.endpoint, LOCAL_AWS);
  for (const key of keys) await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
}

/** A closed breaker at full rate again (the relay recovered), so the next scenario starts clean. */
async function resetGate(): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName, Key: SENDING_GATE_KEY }));
}

async function pullStream(): Promise<void> {
  streamRecords.push(...(await tail.next()).Records);
}

/**
 * The variables AWS sets only, none of the local stack's: the sender reads its relay's user and
 * password from the environment locally (relaySecrets.test.ts simulates reading the secret), and
 * the stack's name is only a metric dimension.
 */
const AWS_ONLY_RESOURCES = new Set<string>([
  RESOURCE_SETTINGS.smtpSecretArn.variable,
  RESOURCE_SETTINGS.stackName.variable,
]);

/**
 * One function's environment: `env`, and of the resource variables only those its own function in
 * the template sets, with their local values. A variable the construct forgets is then missing
 * here too, and the feature it switches on is seen off (or the wiring fails) as it would be in AWS.
 */
function envOf(name: PostdateFunctionName, overrides: Record<string, string> = {}): Record<string, string> {
  const resourceVariables = new Set<string>(
    Object.values(RESOURCE_SETTINGS).map((setting) => setting.variable),
  );
  const declared = Object.keys(
    template.toJSON().Resources[logicalIdOf(functionOf(name))].Properties.Environment?.Variables ?? {},
  ).filter((variable) => resourceVariables.has(variable) && !AWS_ONLY_RESOURCES.has(variable));
  const resources: Record<string, string> = {};
  for (const variable of declared) {
    const value = localResources[variable];
    if (value === undefined)
      throw new Error(`${name}: no local value for ${variable}, which its template sets`);
    resources[variable] = value;
  }
  // The emulator's address goes with the bucket's name (unset in AWS).
  if (resources[RESOURCE_SETTINGS.attachmentBucket.variable] !== undefined)
    resources[RESOURCE_SETTINGS.attachmentEndpoint.variable] = s3.endpoint;
  return { ...env, ...resources, ...overrides };
}

let coverage: Awaited<ReturnType<typeof startCallSiteCoverage>>;
/** The call sites the scenarios ran, taken once (taking it resets V8's counters). */
let reached: Promise<Set<CallSite>> | undefined;
const callSites = awsCallSites();
/** The sites each function's code can reach, read once (a TypeScript program and eight bundles). */
let codeCalls: Promise<Map<PostdateFunctionName, CallSite[]>> | undefined;
const sitesOfFunctions = () => {
  codeCalls ??= callSitesByFunction(callSites);
  return codeCalls;
};

beforeAll(async () => {
  coverage = await startCallSiteCoverage();
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
  };
  localResources = {
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
  let lostId = '';

  it('authorizer: a key authorizes its tenant, an unknown key does not', async () => {
    const { secret } = await createApiKey(documentClient(), tableName, { tenant: 'acme', now: new Date() });
    const authorize = as('authorizer', () => wireAuthorizer(envOf('authorizer'), SILENT as never));
    expect(await authorize(authorizerEvent({ authorization: `Bearer ${secret}` }))).toMatchObject({
      isAuthorized: true,
    });
    expect(await authorize(authorizerEvent({ authorization: 'Bearer pd_live_unknown' }))).toMatchObject({
      isAuthorized: false,
    });
  });

  it('api: messages, groups, templates, webhooks and suppressions', async () => {
    const api = as('api', () => wireApi(envOf('api'), SILENT as never));
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
    // Its retry is a replay: the upload and the message's copy told alike by ETag (HeadObject on
    // both: s3:GetObject on uploads/ and messages/), under the api's own policy (decisions 0258, 0267).
    const retried = await enqueue('cancelled', {
      send_at: later,
      attachments: [{ attachment_id: upload.json.id }],
    });
    expect([retried.status, retried.json.id]).toEqual([200, cancelled.json.id]);
    // Its attachment is lost before the event producer tags it (the events scenario deletes it).
    const lost = await enqueue('lost', { send_at: later, attachments });
    expect(lost.status).toBe(202);
    lostId = lost.json.id;
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

  it("api: an enqueue below its group's head, a key reused with a larger body, an unknown upload, a batch, a test key's side, deliveries by status", async () => {
    const api = as('api', () => wireApi(envOf('api'), SILENT as never));
    const call = async (
      method: string,
      path: string,
      options: { body?: unknown; key?: string; query?: Record<string, string>; tenant?: string } = {},
    ) => {
      const result = await api(
        apiEvent({
          method,
          path,
          body: options.body,
          headers: options.key ? { 'idempotency-key': options.key } : {},
          ...(options.query ? { query: options.query } : {}),
          ...(options.tenant ? { tenant: options.tenant } : {}),
        }),
      );
      return { status: result.statusCode ?? 0, json: result.body ? JSON.parse(result.body) : {} };
    };
    // Deferred, so that the sender's scenario finds on the queue only the copies it expects.
    const message = (overrides: Record<string, unknown> = {}) =>
      validBody({ send_at: new Date(Date.now() + 3_600_000).toISOString(), ...overrides });

    // DESIGN §4: a version below the group's head is stored superseded (the transaction checks the head).
    expect((await call('PUT', '/v1/groups/campaign:below', { body: { version: 7 } })).status).toBe(200);
    const below = await call('POST', '/v1/messages', {
      body: message({ group: { key: 'campaign:below', version: 6 } }),
      key: 'below-head',
    });
    expect(below.status).toBe(202);
    expect(await messageStatus(below.json.id)).toBe('superseded');

    // DESIGN §3/§4: the same key with another body is 422; a body too large to ride in the state
    // record is put apart first, and the api takes back its own.
    expect((await call('POST', '/v1/messages', { body: message(), key: 'reused' })).status).toBe(202);
    const bigText = randomBytes(12_000).toString('base64');
    expect(
      (await call('POST', '/v1/messages', { body: message({ text: bigText }), key: 'reused' })).status,
    ).toBe(422);
    // A large body apart from its record: in a group's transaction, and given its TTL when cancelled.
    const grouped = message({ text: bigText, group: { key: 'campaign:large', version: 1 } });
    expect((await call('POST', '/v1/messages', { body: grouped, key: 'large-grouped' })).status).toBe(202);
    const apart = await call('POST', '/v1/messages', { body: message({ text: bigText }), key: 'large' });
    expect((await call('DELETE', `/v1/messages/${apart.json.id}`)).status).toBe(200);
    // A group head kept in one item is raised by a single update, not a transaction.
    const oneReplica = as('api', () =>
      wireApi(envOf('api', { POSTDATE_GROUP_HEAD_REPLICAS: '1' }), SILENT as never),
    );
    const single = await oneReplica(
      apiEvent({ method: 'PUT', path: '/v1/groups/campaign:single', body: { version: 2 } }),
    );
    expect(single.statusCode).toBe(200);

    // DESIGN §13: an attachment_id that names no upload is the client's 400, not a 500.
    const unknown = await call('POST', '/v1/messages', {
      body: message({ attachments: [{ attachment_id: `att_${'0'.repeat(26)}` }] }),
      key: 'unknown-upload',
    });
    expect(unknown.status).toBe(400);

    // DESIGN §3a: each item under its own key.
    const batch = await call('POST', '/v1/messages/batch', {
      body: {
        messages: [message({ idempotency_key: 'batch-1' }), message({ idempotency_key: 'batch-2' })],
      },
    });
    expect(batch.status).toBe(200);

    // DESIGN §14: a test key acts for the tenant's test side, in its own partitions.
    const testSide = { tenant: testSideOf('acme') };
    expect(
      (
        await call('POST', '/v1/messages', {
          ...testSide,
          body: message({ to: [`delivered@${SIMULATOR_DOMAIN}`] }),
          key: 'test-side',
        })
      ).status,
    ).toBe(202);
    expect((await call('GET', '/v1/messages', testSide)).status).toBe(200);

    // A listing by status reads the deliveries; `failed` reads the failed entries of the `due` index.
    for (const status of ['pending', 'failed'])
      expect((await call('GET', `/v1/webhooks/${webhookId}/deliveries`, { query: { status } })).status).toBe(
        200,
      );
  });

  it('relay: due copies to the queue, later ones to a schedule, a cancel deletes its schedule', async () => {
    await pullStream();
    const relay = as('relay', () => wireRelay(envOf('relay'), SILENT as never));
    const records = streamRecords.filter((record) =>
      matchesFilter(RELAY_STREAM_FILTER as FilterPattern, record),
    );
    expect(records.length).toBeGreaterThan(0);
    expect(await relay({ Records: records })).toEqual({ batchItemFailures: [] });
  });

  it('events: every status change to the bus and to the subscribed endpoint', async () => {
    const produce = as('events', () => wireEvents(envOf('events'), SILENT));
    const records = streamRecords.filter((record) =>
      matchesFilter(EVENTS_STREAM_FILTER as FilterPattern, record),
    );
    expect(records.length).toBeGreaterThan(0);
    // Every attachment written two days ago: an ended message's is copied onto itself (decision 0191).
    const keys = new Set(
      records.flatMap((record) =>
        (record.dynamodb?.NewImage?.attachments?.L ?? []).flatMap((held) => held.M?.key?.S ?? []),
      ),
    );
    expect(keys.size).toBeGreaterThan(0);
    for (const key of keys) await s3.backdate(key, new Date(Date.now() - 2 * 86_400_000));
    // One message's attachment is gone: S3 tells the producer 404 (its s3:ListBucket) and the producer
    // skips it.
    await loseAttachments(lostId);
    expect(await produce({ Records: records })).toEqual({ batchItemFailures: [] });
  });

  it('webhooks: deliveries are signed and POSTed, a secret rotated, a failing endpoint retried, a failed delivery retried by hand', async () => {
    const deliver = as('webhooks', () => wireWebhookDelivery(envOf('webhooks'), SILENT));
    const copies = await receiveAll(webhookQueue.url);
    expect(copies.length).toBeGreaterThan(0);
    // With the table out of reach, each copy is kept and comes back after a short backoff
    // (ChangeMessageVisibility, decision 0110); then the reachable function delivers them.
    const unreachable = as('webhooks', () =>
      wireWebhookDelivery(envOf('webhooks', { AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9' }), SILENT),
    );
    const kept = await unreachable(sqsEvent(copies, webhookQueue.arn));
    expect(kept.batchItemFailures).toHaveLength(copies.length);
    await deliver(sqsEvent(copies, webhookQueue.arn));
    expect(receiver.received.length).toBeGreaterThan(0);
    const api = as('api', () => wireApi(envOf('api'), SILENT as never));
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
    // Where an earlier run stopped in one shard (decision 0199): this cold start reads it, reads the
    // shard on to its end and from its start, and replaces it with none.
    const stopped = stateRecord({ sendAt: past, createdAt: past });
    await documentClient().send(
      new PutCommand({
        TableName: tableName,
        Item: {
          ...SWEEP_CURSORS_KEY,
          cursors: {
            5: { pk: messagePk(stopped.id), sk: 'STATE', due_pk: dueShardPk(5), due_at: past.toISOString() },
          },
        },
      }),
    );
    // Its clock 13 days ahead: the dead message's copy reached the renewal age (decision 0148).
    const ahead = () => new Date(Date.now() + 13 * 86_400_000);
    const sweep = as('sweeper', () =>
      wireSweeper(envOf('sweeper'), SILENT as never, { count: () => {} }, ahead),
    );
    const report = await sweep();
    const { Item: kept } = await documentClient().send(
      new GetCommand({ TableName: tableName, Key: SWEEP_CURSORS_KEY, ConsistentRead: true }),
    );
    expect(kept?.cursors).toEqual({});
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
    const api = as('api', () => wireApi(envOf('api'), SILENT as never));
    const enqueue = async (key: string, body: Record<string, unknown> = {}, tenant?: string) => {
      const result = await api(
        apiEvent({
          method: 'POST',
          path: '/v1/messages',
          body: validBody(body),
          headers: { 'idempotency-key': key },
          ...(tenant ? { tenant } : {}),
        }),
      );
      expect(result.statusCode).toBe(202);
      return JSON.parse(result.body ?? '{}').id as string;
    };
    // One receive may leave a copy behind, or bring back earlier ones whose visibility ended (the SQS
    // emulator under load): the receives go on until they hold a copy of the message the step is about.
    const receiveCopyOf = async (id: string) => {
      const copies: Awaited<ReturnType<typeof receiveAll>> = [];
      await eventually(
        `a copy of ${id} on the send queue`,
        async () => {
          copies.push(...(await receiveAll(sendQueue.url)));
          return copies.some((copy) => JSON.parse(copy.Body ?? '{}').id === id);
        },
        { withinMs: 30_000, everyMs: 100 },
      );
      return copies;
    };
    const sendOnce = async (sender: ReturnType<typeof wireSender>, id: string) => {
      await sender.handle(sqsEvent(await receiveCopyOf(id), sendQueue.arn));
    };
    const senders: ReturnType<typeof wireSender>[] = [];
    const wired = (overrides: Record<string, string> = {}) => {
      const sender = as('sender', () => wireSender(envOf('sender', overrides)));
      senders.push(sender);
      return sender;
    };
    try {
      const sender = wired();
      // The message the api retries later is refused at RCPT TO (failed) whichever transaction it
      // rides in, and another one is deferred after the dot.
      const bounceMe = (address: string) =>
        address === 'bounce-me@example.com' ? { code: 550, message: '5.1.1 User unknown' } : undefined;
      const deferAfterDot = { code: 451, message: '4.3.0 Try later' };
      smtp.script(
        { rcptTo: bounceMe },
        { rcptTo: bounceMe, afterData: deferAfterDot },
        { rcptTo: bounceMe, afterData: deferAfterDot },
        { rcptTo: bounceMe },
      );
      await sendOnce(sender, messageIds[0] ?? '');
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
      // Only the early copy: whatever else the receives took comes back for the next steps.
      const earlyCopies = (await receiveCopyOf(early)).filter(
        (copy) => JSON.parse(copy.Body ?? '{}').id === early,
      );
      expect(earlyCopies).toHaveLength(1);
      const transactions = smtp.transactions;
      await sender.handle(sqsEvent(earlyCopies, sendQueue.arn));
      expect(smtp.transactions).toBe(transactions);

      // A message whose attachment is gone before its send: S3 tells the sender 404 (its
      // s3:ListBucket), and the message fails without a transaction (DESIGN §13, decision 0171).
      const lost = await enqueue('lost-attachment', {
        to: ['lost@example.com'],
        attachments: [{ filename: 'gone.pdf', content: Buffer.from('%PDF-1.4').toString('base64') }],
      });
      await loseAttachments(lost);
      await sendOnce(sender, lost);
      expect(await messageStatus(lost)).toBe('failed');
      expect(smtp.transactions).toBe(transactions);

      // A test-side message the simulator rejects ends `failed` with its retention (DESIGN §14), its
      // body an item of its own: after the body's TTL the sender reads the state's, which a retry may
      // have taken back meanwhile (decision 0181).
      const rejected = await enqueue(
        'test-side-reject',
        { to: [`reject@${SIMULATOR_DOMAIN}`], text: randomBytes(12_000).toString('base64') },
        testSideOf('acme'),
      );
      await sendOnce(sender, rejected);
      expect(await messageStatus(rejected)).toBe('failed');

      // A 421 after DATA is this message's outcome: with one attempt allowed, its copy moves to the DLQ.
      smtp.script({ afterData: { code: 421, message: '4.4.2 Closing connection' } });
      const dead = await enqueue('dead', { to: ['dead@example.com'] });
      deadId = dead;
      await sendOnce(wired({ POSTDATE_MAX_ATTEMPTS: '1' }), dead);
      expect(
        (await receiveAll(queueUrls.sendDeadLetter)).map((copy) => JSON.parse(copy.Body ?? '{}').id),
      ).toContain(dead);

      // SES's throttling reply slows every sender down: the gate item takes the rate factor.
      smtp.script({ afterData: { code: 454, message: 'Throttling failure: Maximum sending rate exceeded' } });
      // Its body too large for its record: the sender reads it apart.
      const throttled = await enqueue('throttled', {
        to: ['throttled@example.com'],
        text: randomBytes(12_000).toString('base64'),
      });
      await sendOnce(wired(), throttled);
      expect((await readGate())?.breaker?.rate_factor).toBeLessThan(1);
      smtp.script({});
      await resetGate();

      // A relay that refuses connections: the breaker opens on the sending gate item.
      await smtp.close();
      const outage = wired();
      for (const key of ['outage-1', 'outage-2', 'outage-3']) {
        await sendOnce(outage, await enqueue(key, { to: [`${key}@example.com`] }));
      }
      expect((await readGate())?.breaker?.state).toBe('open');
    } finally {
      for (const sender of senders) await sender.close();
    }
  });

  it('api: a dead message retried by hand, and a failed one whose attachments it finds still stored', async () => {
    const api = as('api', () => wireApi(envOf('api'), SILENT as never));
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
    const sweep = as('sweeper', () => wireSweeper(envOf('sweeper'), SILENT as never, { count: () => {} }));
    await sweep();
    const after = await readGate();
    expect(after?.breaker?.token).toBeDefined();
    expect(after?.breaker?.token).not.toBe(before?.breaker?.token);
  });

  it('bounces: an SES hard bounce suppresses the address for the message tenant', async () => {
    const bounce = as('bounces', () => wireBounces(envOf('bounces'), SILENT, () => {}));
    await bounce(snsEvent(permanentBounce(messageIds[0] ?? '', ['bounce-me@example.com'])));
  });
});

describe('the recorded requests, evaluated against each function role in the synthesized template', {
  timeout: 120_000,
}, () => {
  it('denies none', async () => {
    const { resolve } = templateResolver(template, names);
    const requests = readRecordedRequests(recordFile).flatMap(iamRequestsOf);
    // Each distinct request once: most are the same item kind asked again.
    const distinct = new Map(requests.map((request) => [describeRequest(request, true), request]));
    const denied: string[] = [];
    for (const request of distinct.values()) {
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

  it('makes in a scenario every request a function can build, or lists it on UNRECORDED_CALLS', async () => {
    const made = recordedCalls();
    const unmade = [...(await codeCallsOf())].filter(
      (call) => !made.has(call) && UNRECORDED_CALLS[call] === undefined,
    );
    expect(unmade).toEqual([]);
  });

  it('lists on UNRECORDED_CALLS only requests a function can build and no scenario makes', async () => {
    const made = recordedCalls();
    const canMake = await codeCallsOf();
    const stale = Object.keys(UNRECORDED_CALLS).filter((call) => made.has(call) || !canMake.has(call));
    expect(stale).toEqual([]);
  });

  it("finds in the functions' code every request a scenario made (the reading misses none)", async () => {
    const canMake = await codeCallsOf();
    expect([...recordedCalls()].filter((call) => !canMake.has(call))).toEqual([]);
  });

  it('allows each call on UNRECORDED_CALLS, built as the code builds it, by the statement it names', async () => {
    const { resolve } = templateResolver(template, names);
    const refused: string[] = [];
    for (const request of unrecordedRequests(resolve)) {
      const role = roleOf(request.function as PostdateFunctionName);
      const call = `${request.function} ${request.action}`;
      const sid = UNRECORDED_CALLS[call]?.grantedBy;
      const statement = roleStatements(template, role, resolve).filter((one) => one.Sid === sid);
      for (const decision of [
        await evaluate(request, resolve),
        await simulateStatements(role, statement, request),
      ])
        if (decision !== 'Allowed') refused.push(`${call} (${sid}) ${decision}: ${describeRequest(request)}`);
    }
    expect(refused).toEqual([]);
  });

  it('runs every place a function builds an AWS request, or lists its call on UNRECORDED_CALLS', async () => {
    reached ??= coverage.reached(callSites);
    const ran = await reached;
    const missed = [...(await sitesOfFunctions())].flatMap(([name, sites]) =>
      sites
        .filter((site) => !ran.has(site))
        .filter((site) => site.actions.some((action) => UNRECORDED_CALLS[`${name} ${action}`] === undefined))
        .map((site) => `${name}: ${site.file}:${site.line} ${site.what} (${site.key})`),
    );
    expect(missed).toEqual([]);
  });

  it('allows no grant wider than the requests it covers need: no wildcard, key kind or unscoped table beyond them', () => {
    expect(grantsWithUse().flatMap((grant) => grant.tooWide)).toEqual([]);
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
function grantsWithUse(): { key: string; seen: boolean; tooWide: string[] }[] {
  const { resolve } = templateResolver(template, names);
  const requests = [
    ...readRecordedRequests(recordFile).flatMap(iamRequestsOf),
    ...unrecordedRequests(resolve),
  ];
  const short = shortNames(resolve);
  const grants: { key: string; seen: boolean; tooWide: string[] }[] = [];
  for (const name of POSTDATE_FUNCTIONS) {
    const made = requests.filter((request) => request.function === name);
    const polled = eventSourceQueues(name, resolve);
    const service = lambdaServiceGrants(name, resolve);
    for (const statement of roleStatements(template, roleOf(name), resolve)) {
      if (statement.Effect !== 'Allow') continue;
      const patterns = leadingKeyPatterns(statement) ?? [undefined];
      for (const action of statement.Action) {
        for (const resource of statement.Resource) {
          if (service.has(`${action} ${resource}`)) continue;
          if (SQS_POLLER_ACTIONS.test(action) && polled.has(resource)) continue;
          if (
            SEND_COMPANIONS.test(action) &&
            statement.Action.includes('sqs:SendMessage') &&
            ALLOWED_BUT_NOT_MADE[`${name} sqs:SendMessage ${short(resource)}`] !== undefined
          )
            continue;
          for (const pattern of patterns) {
            const key = `${name} ${action} ${short(resource)}${pattern ? ` ${pattern}` : ''}`;
            const keysOf = (request: IamRequest) =>
              ((request.context['dynamodb:LeadingKeys'] ?? []) as string[]).filter(
                (leading) => pattern === undefined || globMatches(pattern, leading),
              );
            const covered = made.filter(
              (request) =>
                request.action === action &&
                globMatches(resource, request.resource) &&
                (pattern === undefined || keysOf(request).length > 0),
            );
            const tooWide = [
              ...new Set(
                covered.flatMap((request) => {
                  const needed = [
                    resource.includes('*') && narrowestResource(request.resource) !== resource
                      ? `${key}: ${short(narrowestResource(request.resource))} would do`
                      : undefined,
                    ...keysOf(request).map((leading) => {
                      const narrowest = narrowestKey(leading, resource !== arnOf.table(tableName));
                      return (pattern?.includes('*') || pattern === undefined) &&
                        narrowest !== undefined &&
                        narrowest !== pattern
                        ? `${key}: ${narrowest} would do`
                        : undefined;
                    }),
                    ...Object.keys(request.context)
                      .filter((condition) => SCOPING_CONDITIONS.has(condition))
                      .map((condition) => {
                        // The values the statement allows (a Null test only asks that one is present).
                        const allowed = Object.entries(statement.Condition ?? {}).flatMap(
                          ([operator, test]) =>
                            operator !== 'Null' && condition in test ? [test[condition] ?? []].flat() : [],
                        );
                        const made = new Set(covered.flatMap((one) => [one.context[condition] ?? []].flat()));
                        if (allowed.length === 0) return `${key}: unscoped by ${condition}`;
                        const unmade = allowed.filter((value) => !made.has(value));
                        return unmade.length > 0
                          ? `${key}: ${condition} ${unmade.join(', ')} never made`
                          : undefined;
                      }),
                  ];
                  return needed.filter((reason) => reason !== undefined);
                }),
              ),
            ];
            grants.push({ key, seen: covered.length > 0, tooWide });
          }
        }
      }
    }
  }
  return grants;
}

/**
 * Partition-key prefixes whose keys carry an id, a tenant or a shard, so a grant may name the whole
 * kind (`MSG#*`, the `due` index's `due#*`); any other key of the table (the sending gate's) a grant
 * must name whole. An index key of no kind here leads with a tenant (the listing indexes): no
 * condition could be narrower than none.
 */
const ID_KEY_PREFIXES = [
  ...Object.values(PARTITION_PREFIX),
  ...Object.values(WEBHOOK_PARTITION_PREFIX),
  dueShardPk(0).slice(0, -1),
  waitingShardPk('failed', 0).split('failed')[0] ?? '',
  uncopiedDeadShardPk(0).slice(0, -1),
].sort((a, b) => b.length - a.length);

/** The narrowest `dynamodb:LeadingKeys` pattern that allows this key and every other of its kind. */
function narrowestKey(key: string, onIndex: boolean): string | undefined {
  const prefix = ID_KEY_PREFIXES.find((kind) => key.startsWith(kind));
  if (prefix !== undefined) return `${prefix}*`;
  return onIndex ? undefined : key;
}

/**
 * The narrowest resource pattern that allows this ARN and every other the same code builds: an S3
 * object by its key's first folder (`messages/*`), a schedule by its name's prefix (`pd-*`, names
 * `pd-{id}-{rev}`); any other ARN whole.
 */
function narrowestResource(arn: string): string {
  const object = /^(arn:aws:s3:::[^/]+\/[^/]+\/)./.exec(arn);
  if (object) return `${object[1]}*`;
  const schedule = /^(arn:aws:scheduler:[^/]+:schedule\/[^/]+\/[^-/]+-)./.exec(arn);
  if (schedule) return `${schedule[1]}*`;
  return arn;
}

/**
 * Condition keys a recorded request carries that its grant must test: passing a role to any
 * service, or putting events of any source, is wider.
 */
const SCOPING_CONDITIONS = new Set(['iam:PassedToService', 'events:source']);

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
    [arnOf.bucket(s3.bucket), 'attachmentBucket'],
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
};

interface UnrecordedCall {
  /** Why no scenario here makes it. */
  readonly why: string;
  /** The Sid of the function's statement that grants it: the request must be allowed by it alone. */
  readonly grantedBy: string;
  /** The request as the code makes it in AWS: its resource ARN and condition keys. */
  readonly resource: (resolve: (value: unknown) => unknown) => string;
  readonly context?: Readonly<Record<string, string | string[]>>;
}

/**
 * Requests a function's code can build (`function action`) that no scenario here makes, each with
 * why, the statement that grants it, and the request as the code builds it in AWS, which is
 * simulated like a recorded one (and counts as one for the grant checks). Nothing else may be left
 * unmade: a rare path's missing or wrong grant would otherwise fail only in AWS, with AccessDenied.
 */
const UNRECORDED_CALLS: Readonly<Record<string, UnrecordedCall>> = {
  'sender secretsmanager:GetSecretValue': {
    why: "a relay's login is read in AWS only (POSTDATE_LOCAL reads its user and pass from the environment); relaySecrets.test.ts reads it as a deployed sender finds it, for one relay and for two",
    grantedBy: 'ReadSmtpSecret',
    // The one relay's secret, made by the stack (core/relays.ts `relaySecretArn`).
    resource: (resolve) => String(resolve(stack.resolve(postdate.smtpSecret.secretArn))),
  },
};

/**
 * `action resource` grants Lambda itself uses with the function's role, never its code: writing to
 * the function's own log group, and reading the table's stream where that is its event source
 * (ListStreams takes no resource but `*`).
 */
function lambdaServiceGrants(name: PostdateFunctionName, resolve: (value: unknown) => unknown): Set<string> {
  const fn = template.toJSON().Resources[logicalIdOf(functionOf(name))];
  const logGroup = String(resolve({ 'Fn::GetAtt': [fn.Properties.LoggingConfig.LogGroup.Ref, 'Arn'] }));
  const grants = ['logs:CreateLogStream', 'logs:PutLogEvents'].map((action) => `${action} ${logGroup}`);
  const streams = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))
    .filter((mapping) => mapping.Properties.FunctionName?.Ref === logicalIdOf(functionOf(name)))
    .map((mapping) => String(resolve(mapping.Properties.EventSourceArn)))
    .filter((arn) => arn.startsWith('arn:aws:dynamodb:'));
  for (const stream of streams) {
    grants.push('dynamodb:ListStreams *');
    for (const action of ['DescribeStream', 'GetRecords', 'GetShardIterator'])
      grants.push(`dynamodb:${action} ${stream}`);
  }
  return new Set(grants);
}

/**
 * What Lambda's poller does on a queue that is the function's event source. On that queue only:
 * the same actions on any other queue (a DLQ the function walks itself) must be seen made.
 */
const SQS_POLLER_ACTIONS = /^sqs:(ReceiveMessage|DeleteMessage|GetQueueAttributes|GetQueueUrl)$/;

/**
 * What CDK's `grantSendMessages` grants beside `sqs:SendMessage` in the same statement (the queue's
 * URL and attributes): exempt only on a queue Lambda itself sends to (the allow-list's failure
 * destinations, granted by CDK); a queue the function's code sends to is granted sqs:SendMessage alone.
 */
const SEND_COMPANIONS = /^sqs:(GetQueueAttributes|GetQueueUrl)$/;

/** The ARNs of the queues the template maps to the function as event sources. */
function eventSourceQueues(name: PostdateFunctionName, resolve: (value: unknown) => unknown): Set<string> {
  const fn = logicalIdOf(functionOf(name));
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
  return new Set(
    mappings
      .filter((mapping) => mapping.Properties.FunctionName?.Ref === fn)
      .map((mapping) => String(resolve(mapping.Properties.EventSourceArn)))
      .filter((arn) => arn.startsWith('arn:aws:sqs:')),
  );
}

function describeRequest(request: IamRequest, withFunction = false): string {
  return `${withFunction ? `${request.function} ` : ''}${request.action} ${request.resource} ${JSON.stringify(request.context)}`;
}

function functionOf(name: PostdateFunctionName): IConstruct {
  const fn = name === 'bounces' ? postdate.bounces : postdate.functions[name];
  if (fn === undefined) throw new Error(`no ${name} function in the stack`);
  return fn;
}

function roleOf(name: PostdateFunctionName): string {
  const resource = template.toJSON().Resources[logicalIdOf(functionOf(name))];
  return resource.Properties.Role['Fn::GetAtt'][0];
}

async function evaluate(request: IamRequest, resolve: (value: unknown) => unknown): Promise<string> {
  return simulate(template, roleOf(request.function as PostdateFunctionName), request, resolve);
}

/** The requests of UNRECORDED_CALLS, as the code builds them in AWS. */
function unrecordedRequests(resolve: (value: unknown) => unknown): IamRequest[] {
  return Object.entries(UNRECORDED_CALLS).map(([call, listed]) => {
    const [name = '', action = ''] = call.split(' ');
    return { function: name, action, resource: listed.resource(resolve), context: listed.context ?? {} };
  });
}

/** `function action` of every request a scenario made. */
function recordedCalls(): Set<string> {
  const requests = readRecordedRequests(recordFile).flatMap(iamRequestsOf);
  return new Set(requests.map((request) => `${request.function} ${request.action}`));
}

/** `function action` of every request a function's code can build. */
async function codeCallsOf(): Promise<Set<string>> {
  const calls = new Set<string>();
  for (const [name, sites] of await sitesOfFunctions())
    for (const site of sites) for (const action of site.actions) calls.add(`${name} ${action}`);
  return calls;
}
