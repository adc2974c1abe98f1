import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { expect } from 'vitest';
import { NodemailerMailer, type SmtpTimeouts } from '../../lambdas/adapters/NodemailerMailer.js';
import { SqsCopyVisibility } from '../../lambdas/adapters/SqsCopyVisibility.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { createApiHandler } from '../../lambdas/api/createApiHandler.js';
import { encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import type { SenderCountMetric, SenderTimeMetric } from '../../lambdas/core/metricNames.js';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import type { CopyVisibility } from '../../lambdas/ports/CopyVisibility.js';
import type { DispatchQueue, QueuedCopy } from '../../lambdas/ports/DispatchQueue.js';
import type { Log } from '../../lambdas/ports/Log.js';
import type { Mailer } from '../../lambdas/ports/Mailer.js';
import type { SenderMetrics } from '../../lambdas/ports/SenderMetrics.js';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import type { SmtpCredentialsSource } from '../../lambdas/ports/SmtpCredentialsSource.js';
import { type SenderSettings, SHORT_RETRY_SECONDS } from '../../lambdas/sender/copyRun.js';
import { createSenderHandler, type SenderDependencies } from '../../lambdas/sender/createSenderHandler.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import type { MessageStateRecord } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import type { QueueArns, QueueUrls } from '../../local/createResources.js';
import { toLambdaSqsRecord } from '../../local/runners/sqsRecordFormat.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { apiEvent } from '../api/events.js';
import { documentClient, freshQueues, freshTable, queueDepth, sqsClient } from '../support/awsLocal.js';
import { type MessageFixture, putMessage, readState, TENANT } from './records.js';

/**
 * Everything a sender test needs, real where a real part exists: DynamoDB Local, the SQS emulator,
 * a scripted smtp-server, nodemailer, and the sender handler driven the way Lambda drives it (receive
 * a batch, call the handler, delete the copies it did not report as failures). Time the sender sees
 * is a clock the test moves; SQS keeps real time, so backoffs in these tests are 0–2 seconds.
 */

/**
 * Compressed settings: 3 SMTP attempts before the DLQ, backoff of at most 1 s, 1 s early-copy wait,
 * and SMTP limits of about a second: the phase before the dot 1.5 s, the reply to it at least 1 s.
 */
export const TEST_SETTINGS: SenderSettings = {
  maxAttempts: 3,
  retryBaseSeconds: 1,
  retryCapSeconds: 1,
  leaseSeconds: 120,
  retentionDays: 30,
  maxEarlyWaitMs: 1000,
  timing: { smtpTimeoutSeconds: 1, smtpReplyTimeoutSeconds: 1 },
  allowedFrom: ['*'],
  // Today's value: a test that waits a kept copy's return on the real queue passes a shorter one.
  shortRetrySeconds: SHORT_RETRY_SECONDS,
};

/** One whole attempt under TEST_SETTINGS (2 × 1 s + 1 s + the outcome-write reserve) and a little more. */
export const TEST_TIMEOUT_SECONDS = attemptBudgetMs(TEST_SETTINGS.timing) / 1000 + 1;

/**
 * The mailers' SMTP limits in these tests. The greeting has 5 s, so only the phase before the dot
 * (1.5 s, connect and greeting included) bounds it: the relay runs in the test's own process, and
 * after any stall of the event loop Node runs expired timers before it reads the sockets, so a short
 * greeting limit can beat a greeting that is already waiting. Only a test whose relay never greets
 * uses a short one ({@link SHORT_GREETING_SMTP_TIMEOUTS}).
 */
export const FAST_SMTP_TIMEOUTS: SmtpTimeouts = {
  connectionMs: 1000,
  greetingMs: 5000,
  dnsMs: 1000,
  preDotMs: 1500,
  replyMs: 1000,
};

/** For a relay that never sends its greeting: the greeting limit (400 ms) ends the attempt, well inside the phase before the dot. */
export const SHORT_GREETING_SMTP_TIMEOUTS: SmtpTimeouts = { ...FAST_SMTP_TIMEOUTS, greetingMs: 400 };

/** A pooled mailer to the scripted relay, as the sender uses it (no STARTTLS, Message-IDs @mail.test). */
export function smtpMailer(
  smtp: Pick<TestSmtpServer, 'host' | 'port'>,
  options: { timeouts?: SmtpTimeouts; credentials?: SmtpCredentialsSource } = {},
): NodemailerMailer {
  return new NodemailerMailer({
    host: smtp.host,
    port: smtp.port,
    secure: false,
    requireTls: false,
    messageIdDomain: 'mail.test',
    credentials: options.credentials ?? environmentSmtpCredentials({ user: undefined, pass: undefined }),
    timeouts: options.timeouts ?? FAST_SMTP_TIMEOUTS,
  });
}

/** A Lambda context with this much time left (on the real clock; the sender reads it once). */
export function contextWithRemaining(milliseconds: number): Pick<Context, 'getRemainingTimeInMillis'> {
  return { getRemainingTimeInMillis: () => milliseconds };
}

export class TestClock {
  constructor(public ms = Date.now()) {}
  readonly now = (): Date => new Date(this.ms);
  advance(milliseconds: number): void {
    this.ms += milliseconds;
  }
}

export class RecordingMetrics implements SenderMetrics {
  readonly counts = new Map<string, number>();
  /** The counts given a relay (DESIGN §15), by `name@relay`. */
  readonly relayCounts = new Map<string, number>();
  readonly timings: { name: SenderTimeMetric; value: number; relay?: string | undefined }[] = [];
  count(name: SenderCountMetric, value = 1, relay?: string): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + value);
    if (relay !== undefined) {
      const key = `${name}@${relay}`;
      this.relayCounts.set(key, (this.relayCounts.get(key) ?? 0) + value);
    }
  }
  milliseconds(name: SenderTimeMetric, value: number, relay?: string): void {
    this.timings.push({ name, value, relay });
  }
  of(name: SenderCountMetric, relay?: string): number {
    return (relay === undefined ? this.counts.get(name) : this.relayCounts.get(`${name}@${relay}`)) ?? 0;
  }
}

/** Every log line the sender wrote, to check none of them carries an address. */
export class RecordingLog implements Log {
  readonly lines: { level: string; message: string; attributes: Record<string, unknown> }[] = [];
  debug(message: string, attributes: Record<string, unknown>): void {
    this.lines.push({ level: 'debug', message, attributes });
  }
  info(message: string, attributes: Record<string, unknown>): void {
    this.lines.push({ level: 'info', message, attributes });
  }
  warn(message: string, attributes: Record<string, unknown>): void {
    this.lines.push({ level: 'warn', message, attributes });
  }
  error(message: string, attributes: Record<string, unknown>): void {
    this.lines.push({ level: 'error', message, attributes });
  }
  text(): string {
    return JSON.stringify(this.lines);
  }
}

/** The send queue seen through a recorder, to check the exact DelaySeconds of re-enqueued copies. */
export class RecordingQueue implements DispatchQueue {
  readonly enqueued: QueuedCopy[] = [];
  constructor(private readonly inner: DispatchQueue) {}
  enqueue(copies: readonly QueuedCopy[]) {
    this.enqueued.push(...copies);
    return this.inner.enqueue(copies);
  }
}

/** The send queue's real visibility changes, each one's seconds kept in `asked` (the hides the handler asks for). */
export class RecordingVisibility implements CopyVisibility {
  readonly asked: number[] = [];
  private readonly real: SqsCopyVisibility;
  constructor(queueUrl: string) {
    this.real = new SqsCopyVisibility(sqsClient(), queueUrl);
  }
  change(receiptHandle: string, seconds: number) {
    this.asked.push(seconds);
    return this.real.change(receiptHandle, seconds);
  }
}

/** Shared per test file: one table, one SMTP server and one pooled mailer. */
export interface SenderWorld {
  readonly tableName: string;
  /** The table's stream (NEW_AND_OLD_IMAGES), for a test that reads the events the sender's writes make. */
  readonly streamArn: string;
  readonly documents: DynamoDBDocumentClient;
  readonly smtp: TestSmtpServer;
  readonly mailer: Mailer;
  close(): Promise<void>;
}

export async function startSenderWorld(
  options: {
    credentials?: { username: string; password: string };
    mailerCredentials?: SmtpCredentialsSource;
  } = {},
): Promise<SenderWorld> {
  const [{ tableName, streamArn }, smtp] = await Promise.all([
    freshTable('sender'),
    startSmtpServer(options.credentials ? { credentials: options.credentials } : {}),
  ]);
  const mailer = smtpMailer(
    smtp,
    options.mailerCredentials ? { credentials: options.mailerCredentials } : {},
  );
  return {
    tableName,
    streamArn,
    documents: documentClient(),
    smtp,
    mailer,
    async close() {
      await mailer.close();
      await smtp.close();
    },
  };
}

export interface SenderRig {
  readonly world: SenderWorld;
  readonly urls: QueueUrls;
  readonly arns: QueueArns;
  readonly clock: TestClock;
  readonly metrics: RecordingMetrics;
  readonly log: RecordingLog;
  readonly queue: RecordingQueue;
  /** In-process waits the sender asked for (they advance the clock instead of sleeping). */
  readonly sleeps: number[];
  readonly handler: SenderHandler;
  /** Another sender (its own handler, same table, queue and relay), e.g. for races. */
  newHandler(overrides?: Partial<SenderDependencies>): SenderHandler;
  putMessage(fixture?: MessageFixture): Promise<MessageStateRecord>;
  state(id: string): Promise<MessageStateRecord>;
  /** Puts a `{v:1,id,rev}` copy on the send queue (or the raw body given). */
  dispatch(copy: { id: string; rev: number } | string, delaySeconds?: number): Promise<void>;
  /** Receives up to `max` copies (waiting up to `waitSeconds`) as Lambda would hand them over. */
  receive(options?: { max?: number; waitSeconds?: number; queueUrl?: string }): Promise<SQSRecord[]>;
  /** Calls a handler with the records and applies its answer: deletes every copy not reported failed. */
  run(
    records: SQSRecord[],
    handler?: SenderHandler,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ): Promise<SQSBatchResponse>;
  /** Receives the next copy (one) and runs it as a batch; fails the test if nothing arrives. */
  deliverNext(): Promise<{ records: SQSRecord[]; response: SQSBatchResponse }>;
  /** Counts on a queue: messages stored (not delayed), in flight, delayed. */
  depth(queueUrl?: string): Promise<{ stored: number; inFlight: number; delayed: number }>;
  /** SMTP messages received for one Postdate id. */
  received(id: string): TestSmtpServer['received'];
  /** Of those, the ones the server accepted (a delivery, not a refusal). */
  accepted(id: string): TestSmtpServer['received'];
}

export type SenderHandler = (
  event: SQSEvent,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
) => Promise<SQSBatchResponse>;

export async function createSenderRig(
  world: SenderWorld,
  options: {
    settings?: Partial<SenderSettings>;
    random?: () => number;
    maxSendRate?: number;
    /** The handlers' mailer instead of the world's (e.g. one with other limits); the caller closes it. */
    mailer?: Mailer;
    /** Where the handlers read attachments (DESIGN §13). */
    attachments?: SenderDependencies['attachments'];
  } = {},
): Promise<SenderRig> {
  const { urls, arns } = await freshQueues(options.settings?.maxAttempts ?? TEST_SETTINGS.maxAttempts);
  const sqs = sqsClient();
  const clock = new TestClock();
  const metrics = new RecordingMetrics();
  const log = new RecordingLog();
  const queue = new RecordingQueue(new SqsDispatchQueue(sqs, urls.send));
  const sleeps: number[] = [];
  // The list's lookups age by the rig's clock (decision 0173): a test advances it past the window.
  const store = new DynamoSenderStore(world.documents, world.tableName, {
    suppressionLookups: { now: clock.now },
  });
  const settings = { ...TEST_SETTINGS, ...options.settings };

  const newHandler = (overrides: Partial<SenderDependencies> = {}) =>
    createSenderHandler({
      store,
      templates: new DynamoTemplateStore(world.documents, world.tableName),
      mailer: options.mailer ?? world.mailer,
      queue,
      deadLetters: new SqsDispatchQueue(sqs, urls.sendDeadLetter),
      visibility: new SqsCopyVisibility(sqs, urls.send),
      settings,
      timeoutSeconds: TEST_TIMEOUT_SECONDS,
      maxSendRate: options.maxSendRate,
      now: clock.now,
      random: options.random ?? (() => 0),
      sleep: async (milliseconds) => {
        sleeps.push(milliseconds);
        clock.advance(milliseconds);
      },
      log,
      metrics,
      ...(options.attachments ? { attachments: options.attachments } : {}),
      ...overrides,
    });
  const handler = newHandler();

  const receive = async (receiveOptions: { max?: number; waitSeconds?: number; queueUrl?: string } = {}) => {
    const queueUrl = receiveOptions.queueUrl ?? urls.send;
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: receiveOptions.max ?? 10,
        WaitTimeSeconds: receiveOptions.waitSeconds ?? 0,
        AttributeNames: ['All'],
      }),
    );
    const arn = queueUrl === urls.send ? arns.send : arns.sendDeadLetter;
    return (Messages ?? []).map((message) => toLambdaSqsRecord(message, arn));
  };

  const run = async (
    records: SQSRecord[],
    using = handler,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ) => {
    const response = await using({ Records: records }, context);
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    for (const record of records) {
      if (failed.has(record.messageId)) continue;
      await sqs.send(new DeleteMessageCommand({ QueueUrl: urls.send, ReceiptHandle: record.receiptHandle }));
    }
    return response;
  };

  return {
    world,
    urls,
    arns,
    clock,
    metrics,
    log,
    queue,
    sleeps,
    handler,
    newHandler,
    putMessage: (fixture) => putMessage(world.documents, world.tableName, clock.now(), fixture),
    state: (id) => readState(world.documents, world.tableName, id),
    async dispatch(copy, delaySeconds = 0) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: urls.send,
          MessageBody: typeof copy === 'string' ? copy : encodeDispatchPayload(copy),
          DelaySeconds: delaySeconds,
        }),
      );
    },
    receive,
    run,
    async deliverNext() {
      // One at a time: the emulator answers as soon as it has `max` copies, else at the end of the wait.
      const records = await receive({ waitSeconds: 3, max: 1 });
      if (records.length === 0) throw new Error('no copy arrived on the send queue');
      const response = await run(records);
      return { records, response };
    },
    async depth(queueUrl = urls.send) {
      const { visible, inFlight, delayed } = await queueDepth(sqs, queueUrl);
      return { stored: visible, inFlight, delayed };
    },
    received: (id) => world.smtp.received.filter((message) => message.postdateId === id),
    accepted: (id) =>
      world.smtp.received.filter((message) => message.postdateId === id && message.outcome === 'accepted'),
  };
}

/**
 * The real store with some of its operations replaced: for the failures and races DynamoDB Local
 * cannot be made to produce on demand (a throttled read, a write that never happens, a raise landing
 * between two steps). Everything not replaced goes to `store`.
 */
/**
 * Delivers the next copy and checks that the sender failed message `id` before any SMTP transaction:
 * no batch failure, nothing received, `failed` with no attempt, and a permanent error without SMTP
 * codes whose message is `message` (a string or a matcher). Returns the record for further checks.
 */
export async function expectFailedBeforeSmtp(
  rig: SenderRig,
  id: string,
  message: unknown,
): Promise<MessageStateRecord> {
  const { response } = await rig.deliverNext();
  expect(response.batchItemFailures).toEqual([]);
  expect(rig.received(id)).toEqual([]);
  const state = await rig.state(id);
  expect(state.status).toBe('failed');
  expect(state.attempts).toBe(0);
  expect(state.last_error).toEqual({ class: 'permanent', code: null, enhanced_code: null, message });
  return state;
}

export function storeWith(store: SenderStore, replaced: Partial<SenderStore>): SenderStore {
  return {
    readState: (id) => store.readState(id),
    readBody: (id) => store.readBody(id),
    readGroupVersion: (tenant, key) => store.readGroupVersion(tenant, key),
    claim: (input) => store.claim(input),
    recordOutcome: (input) => store.recordOutcome(input),
    release: (input) => store.release(input),
    settleUnsent: (input) => store.settleUnsent(input),
    hold: (input) => store.hold(input),
    settleScreened: (input) => store.settleScreened(input),
    finishBodyLifetime: (state) => store.finishBodyLifetime(state),
    recordDeadLetter: (letter) => store.recordDeadLetter(letter),
    suppressions: store.suppressions,
    ...replaced,
  };
}

/**
 * The user's `DELETE /v1/messages/{id}` (cancel), `GET /v1/messages/{id}` (the view with its
 * `history`), `PATCH /v1/messages/{id}` (reschedule) or `POST /v1/messages/{id}/retry`, DESIGN §3,
 * answered by the real api handler on the sender's table: what a user sees of, and can do with, the
 * message the sender left.
 */
function messageThroughApi(method: 'GET' | 'DELETE' | 'PATCH' | 'POST', action = '') {
  return (
    world: Pick<SenderWorld, 'documents' | 'tableName'>,
    id: string,
    now: () => Date,
    body?: Record<string, unknown>,
  ): Promise<{ readonly status: number; readonly json: Record<string, unknown> }> =>
    callApi(
      world,
      now,
      apiEvent({
        method,
        path: `/v1/messages/${id}${action}`,
        routeKey: `${method} /v1/messages/{id}${action}`,
        pathParameters: { id },
        tenant: TENANT,
        ...(body === undefined ? {} : { body }),
      }),
    );
}

export const cancelThroughApi = messageThroughApi('DELETE');
export const getThroughApi = messageThroughApi('GET');
export const rescheduleThroughApi = messageThroughApi('PATCH');
export const retryThroughApi = messageThroughApi('POST', '/retry');

/** The user's `PUT /v1/groups/{key}` `{version}` (DESIGN §3, §4 Freshness), answered by the real api handler. */
export const raiseGroupThroughApi = (
  world: Pick<SenderWorld, 'documents' | 'tableName'>,
  key: string,
  version: number,
  now: () => Date,
) => putThroughApi(world, now, { collection: 'groups', parameter: 'key', value: key }, { version });

/** The user's `PUT /v1/suppressions/{address}` (DESIGN §12), answered by the real api handler on the sender's table. */
export const suppressThroughApi = (
  world: Pick<SenderWorld, 'documents' | 'tableName'>,
  address: string,
  now: () => Date,
) => putThroughApi(world, now, { collection: 'suppressions', parameter: 'address', value: address });

/**
 * The user's `POST /v1/messages` under `key` (DESIGN §3), answered by the real api handler on the
 * sender's table: the records as the enqueue writes them. No copy is queued: the test dispatches it.
 */
export const enqueueThroughApi = (
  world: Pick<SenderWorld, 'documents' | 'tableName'>,
  key: string,
  body: Record<string, unknown>,
  now: () => Date,
) =>
  callApi(
    world,
    now,
    apiEvent({
      method: 'POST',
      path: '/v1/messages',
      routeKey: 'POST /v1/messages',
      headers: { 'Idempotency-Key': key },
      tenant: TENANT,
      body,
    }),
  );

/** A `PUT /v1/{collection}/{parameter}` on one item, answered by the real api handler. */
function putThroughApi(
  world: Pick<SenderWorld, 'documents' | 'tableName'>,
  now: () => Date,
  { collection, parameter, value }: { collection: string; parameter: string; value: string },
  body?: Record<string, unknown>,
): Promise<{ readonly status: number; readonly json: Record<string, unknown> }> {
  return callApi(
    world,
    now,
    apiEvent({
      method: 'PUT',
      path: `/v1/${collection}/${encodeURIComponent(value)}`,
      routeKey: `PUT /v1/${collection}/{${parameter}}`,
      pathParameters: { [parameter]: value },
      tenant: TENANT,
      ...(body === undefined ? {} : { body }),
    }),
  );
}

async function callApi(
  world: Pick<SenderWorld, 'documents' | 'tableName'>,
  now: () => Date,
  event: ReturnType<typeof apiEvent>,
): Promise<{ readonly status: number; readonly json: Record<string, unknown> }> {
  const silent = { info: () => {}, warn: () => {}, error: () => {} };
  const handle = createApiHandler({
    store: new DynamoApiStore(world.documents, world.tableName),
    templates: new DynamoTemplateStore(world.documents, world.tableName, now),
    config: {
      allowedFrom: ['*@example.com'],
      defaultFrom: 'postdate@example.com',
      maxHorizonDays: 400,
      maxAttempts: TEST_SETTINGS.maxAttempts,
      retentionDays: TEST_SETTINGS.retentionDays,
    },
    now,
    random: Math.random,
    logger: silent,
    sleep: async () => {},
  });
  const result = await handle(event);
  return {
    status: result.statusCode ?? 0,
    json: result.body ? (JSON.parse(result.body) as Record<string, unknown>) : {},
  };
}
