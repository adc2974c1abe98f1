import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DescribeTableCommand, DynamoDBClient, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import {
  ConflictException,
  CreateScheduleGroupCommand,
  GetScheduleGroupCommand,
  SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type {
  APIGatewayProxyEventV2,
  APIGatewayRequestAuthorizerEventV2,
  Context,
  ScheduledEvent,
} from 'aws-lambda';
import { type Config, loadConfig } from '../lambdas/core/config.js';
import { createApiKey } from '../lambdas/keys/apiKeys.js';
import { RELAY_STREAM_FILTER } from '../lambdas/store/tableLayout.js';
import {
  RELAY_STREAM as DEPLOYED_RELAY_STREAM,
  SENDER_QUEUE as DEPLOYED_SENDER_QUEUE,
} from '../lib/eventSourceLayout.js';
import { SCHEDULE_GROUP } from '../lib/queueLayout.js';
import { createOutboxTable, createQueues, type QueueArns, type QueueUrls } from './createResources.js';
import { startDynamoDbLocal } from './dynamodbLocal.js';
import { type HttpFrontEnd, type PartState, type Readiness, startHttpFrontEnd } from './http/httpFrontEnd.js';
import {
  applyEnvironment,
  claimPorts,
  configEnvironment,
  LOCAL_PORT_DEFAULTS,
  type LocalPart,
  type LocalPorts,
} from './localEnv.js';
import { FunctionSandboxes, type FunctionTimeout, type LoadResult } from './runners/functionSandbox.js';
import { type SqsRunner, startSqsRunner } from './runners/sqsRunner.js';
import { startStreamRunner } from './runners/streamRunner.js';
import {
  type FireEvent,
  type SchedulerFaults,
  startSchedulerEmulator,
} from './scheduler/startSchedulerEmulator.js';
import { startMailViewer } from './smtp/mailViewer.js';
import { type SmtpSink, startSmtpSink } from './smtp/smtpSink.js';
import { startLocalSqs } from './sqsServer.js';

/** The functions of DESIGN §1, by the directory of their `handler.ts`. */
export const FUNCTIONS = ['api', 'authorizer', 'relay', 'sender', 'sweeper'] as const;
export type FunctionName = (typeof FUNCTIONS)[number];
/**
 * The functions behind an event source or a schedule: each runs in worker sandboxes and is killed
 * at its function timeout (local/runners/functionSandbox.ts). The api and authorizer run in this
 * process behind the HTTP front end, whose 30 s integration timeout bounds them.
 */
export const SANDBOXED_FUNCTIONS = ['relay', 'sender', 'sweeper'] as const;
export type SandboxedFunctionName = (typeof SANDBOXED_FUNCTIONS)[number];
/** One invocation killed at its function timeout: see `LocalStackOptions.onFunctionTimeout`. */
export type FunctionTimeoutKill = FunctionTimeout<SandboxedFunctionName>;

/** The local runners read like the deployed event sources (lib/eventSourceLayout.ts), plus local-only polling. */
const RELAY_STREAM = {
  ...DEPLOYED_RELAY_STREAM,
  timeoutMs: DEPLOYED_RELAY_STREAM.timeoutSeconds * 1000,
} as const;
export const SENDER_QUEUE = {
  ...DEPLOYED_SENDER_QUEUE,
  maxConcurrency: 5,
  waitTimeSeconds: 1,
  /** The default sender timeout; the stack uses `config.senderTimeoutSeconds`. */
  timeoutMs: DEPLOYED_SENDER_QUEUE.timeoutSeconds * 1000,
} as const;
/**
 * The sweeper's timeout: SWEEPER_TIMEOUT_SECONDS of lib/postdateProps.ts (not imported here, it
 * would load aws-cdk-lib into the local stack; test/local/functionTimeouts.test.ts holds them equal).
 */
export const SWEEPER_TIMEOUT_MS = 120_000;
/** The local sweeper runs at start and then this often (5 min in AWS). */
const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

/** Names of the local resources; fixed so that a data dir finds its table again after a restart. */
export const LOCAL_RESOURCES = {
  tableName: 'postdate-outbox',
  queuePrefix: 'postdate',
  scheduleGroup: SCHEDULE_GROUP.logicalName,
  schedulerRoleArn: 'arn:aws:iam::000000000000:role/postdate-local-scheduler',
  tenant: 'local',
} as const;

export interface LocalStackOptions {
  /** From `loadConfig(env, 'local')`; the handlers see exactly these values. */
  readonly config: Config;
  /** Overrides `config.dataDir`: DynamoDB under `dynamodb/`, schedules under `scheduler/`, mail under `mail/`. */
  readonly dataDir?: string;
  /** Ports of the parts (defaults in localEnv.ts, the API's from `config.port`); 0 picks a free port. */
  readonly ports?: Partial<Record<LocalPart, number>>;
  /** Options of the SMTP sink; ignored when `config.smtp.host` points at a real relay. */
  readonly smtp?: { readonly maxBytes?: number };
  /** JVM tuning of DynamoDB Local: `fast-start` (default) or `peak` for long benchmark runs. */
  readonly dynamodbJvm?: 'fast-start' | 'peak';
  /** How often the sweeper runs after the one at start. */
  readonly sweepIntervalMs?: number;
  /**
   * Fault hooks of the Scheduler emulator (chaos runs): fire a schedule twice, or late, or fail a
   * delivery attempt. See `SchedulerFaults`.
   */
  readonly schedulerFaults?: SchedulerFaults;
  /** Called after every invocation of a schedule (chaos runs count the double and late firings). */
  readonly onScheduleFire?: (event: FireEvent) => void;
  /**
   * `external`: this stack runs no event source for the sender; another process does, against the
   * same emulators, with `functionEnvironment` and `startSenderEventSource` (so that a chaos run can
   * SIGKILL the sender alone). @default 'in-process'
   */
  readonly sender?: 'in-process' | 'external';
  /**
   * Function timeouts (ms) in place of the deployed ones (sender: `config.senderTimeoutSeconds`;
   * relay and sweeper: lib/eventSourceLayout.ts, lib/postdateProps.ts), e.g. short ones in tests.
   */
  readonly functionTimeoutsMs?: Readonly<Partial<Record<SandboxedFunctionName, number>>>;
  /**
   * Called once per invocation killed at its function timeout (times in epoch ms; `records` is the
   * size of the killed batch, 0 for the sweeper). The stack also logs each kill as one line.
   */
  readonly onFunctionTimeout?: (kill: FunctionTimeoutKill) => void;
  /**
   * Modules (absolute paths) every relay, sender and sweeper sandbox imports before its handler,
   * as a layer would (a chaos run's fault-injecting SDK middleware). The api and authorizer run in
   * this process and need none.
   */
  readonly functionPreload?: readonly string[];
  /** No progress lines on stdout, and the functions log only warnings (tests). */
  readonly quiet?: boolean;
  readonly log?: (line: string) => void;
}

export interface LocalStack {
  readonly apiUrl: string;
  readonly apiKey: string;
  /** Undefined when SMTP_HOST points at a real relay (no sink, no viewer). */
  readonly mailViewerUrl: string | undefined;
  readonly smtpSink: SmtpSink | undefined;
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly schedulerEndpoint: string;
  readonly tableName: string;
  readonly streamArn: string;
  readonly queueUrls: QueueUrls;
  readonly queueArns: QueueArns;
  readonly ports: LocalPorts;
  /** Each function: loaded, or why not. */
  readonly functions: Readonly<Record<FunctionName, 'loaded' | 'not built'>>;
  /** Each sandboxed function's timeout (ms), as enforced. */
  readonly functionTimeoutsMs: Readonly<Record<SandboxedFunctionName, number>>;
  /**
   * The environment the handlers read at cold start (configuration, endpoints, resource names,
   * SMTP): what each function sandbox is given, and what a process that runs a function outside the
   * stack must be given.
   */
  readonly functionEnvironment: Readonly<Record<string, string>>;
  readiness(): Promise<Readiness>;
  /** Resolves once the relay's stream and the send queue have nothing visible left to hand over. */
  idle(): Promise<void>;
  /** Runs the sweeper once now (what its timer does every `sweepIntervalMs`). */
  sweep(): Promise<void>;
  stop(): Promise<void>;
}

type AnyHandler = (event: unknown, context: Context) => Promise<unknown>;

interface Stoppable {
  readonly name: string;
  stop(): Promise<void> | void;
}

const HOST = '127.0.0.1';
/** Counts the stacks started in this process (each gets its own api and authorizer module instances). */
let stackInstances = 0;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Starts the whole local stack (DESIGN §7): DynamoDB Local, the SQS and Scheduler emulators, the
 * table, queues and schedule group from the shared definitions, a seeded API key, the handlers
 * behind their local event sources, the sweeper, the HTTP front end and the SMTP sink with its
 * viewer. `stop()` stops everything in reverse order. The relay, sender and sweeper run in worker
 * sandboxes with their environment given explicitly, killed at their function timeouts. The api
 * and authorizer run in this process and read `process.env` at cold start, like Lambda, so two
 * stacks must not run in one process at the same time; one after the other is fine (each stack
 * imports its own instances of those modules).
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const { config } = options;
  const log = options.quiet ? () => undefined : (options.log ?? ((line: string) => console.log(line)));
  const timeoutsMs: Record<SandboxedFunctionName, number> = {
    sender: options.functionTimeoutsMs?.sender ?? config.senderTimeoutSeconds * 1000,
    relay: options.functionTimeoutsMs?.relay ?? RELAY_STREAM.timeoutMs,
    sweeper: options.functionTimeoutsMs?.sweeper ?? SWEEPER_TIMEOUT_MS,
  };
  const reportKill = (kill: FunctionTimeoutKill) => {
    log(describeKill(kill, timeoutsMs[kill.functionName]));
    options.onFunctionTimeout?.(kill);
  };
  const dataDir = options.dataDir ?? config.dataDir;
  const started: Stoppable[] = [];
  const restoreEnv: (() => void)[] = [];
  const functionEnvironment: Record<string, string> = {};
  const applyForFunctions = (values: Readonly<Record<string, string>>) => {
    Object.assign(functionEnvironment, values);
    restoreEnv.push(applyEnvironment(values));
  };
  const stopAll = async () => {
    for (const part of started.reverse()) {
      try {
        await part.stop();
      } catch (error) {
        log(`stopping ${part.name} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    started.length = 0;
    for (const restore of restoreEnv.reverse()) restore();
    restoreEnv.length = 0;
  };

  try {
    const ports = await claimPorts({ ...LOCAL_PORT_DEFAULTS, api: config.port, ...options.ports }, HOST);
    const externalSmtp = config.smtp.host !== undefined;

    // Static configuration first: Powertools reads its variables when a handler module is imported.
    applyForFunctions({
      ...configEnvironment(config),
      POSTDATE_LOCAL: 'true',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_DYNAMODB: `http://${HOST}:${ports.dynamodb}`,
      AWS_ENDPOINT_URL_SQS: `http://${HOST}:${ports.sqs}`,
      AWS_ENDPOINT_URL_SCHEDULER: `http://${HOST}:${ports.scheduler}`,
      POWERTOOLS_SERVICE_NAME: process.env.POWERTOOLS_SERVICE_NAME ?? 'postdate',
      POWERTOOLS_METRICS_NAMESPACE: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'Postdate',
      POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED ?? 'true',
      ...(options.quiet ? { POWERTOOLS_LOG_LEVEL: 'WARN' } : {}),
      ...(externalSmtp ? {} : { SMTP_HOST: HOST, SMTP_PORT: String(ports.smtp) }),
    });
    if (externalSmtp) {
      applyForFunctions({
        SMTP_HOST: config.smtp.host ?? '',
        ...(config.smtp.port !== undefined ? { SMTP_PORT: String(config.smtp.port) } : {}),
      });
    }

    stackInstances += 1;
    const handlersLoading = loadInProcessHandlers(stackInstances);
    const dynamodbStarting = startDynamoDbLocal({
      port: ports.dynamodb,
      host: HOST,
      ...(dataDir ? { dataDir: join(dataDir, 'dynamodb') } : {}),
      ...(options.dynamodbJvm ? { jvm: options.dynamodbJvm } : {}),
    });
    // Awaited below, after the in-process parts started; marked handled now so that an early
    // failure (no java) is not reported as an unhandled rejection meanwhile.
    dynamodbStarting.catch(() => undefined);
    const sqs = await startLocalSqs({ port: ports.sqs, host: HOST });
    started.push({ name: 'the SQS emulator', stop: () => sqs.stop() });
    const scheduler = await startSchedulerEmulator({
      port: ports.scheduler,
      host: HOST,
      sqsEndpoint: sqs.endpoint,
      ...(dataDir ? { dataDir: join(dataDir, 'scheduler') } : {}),
      ...(options.schedulerFaults ? { faults: options.schedulerFaults } : {}),
      ...(options.onScheduleFire ? { onFire: options.onScheduleFire } : {}),
    });
    started.push({ name: 'the Scheduler emulator', stop: () => scheduler.stop() });
    let sink: SmtpSink | undefined;
    let mailViewerUrl: string | undefined;
    if (!externalSmtp) {
      const smtpSink = await startSmtpSink({
        port: ports.smtp,
        host: HOST,
        ...(dataDir ? { dataDir: join(dataDir, 'mail') } : {}),
        ...(options.smtp?.maxBytes !== undefined ? { maxBytes: options.smtp.maxBytes } : {}),
      });
      sink = smtpSink;
      started.push({ name: 'the SMTP sink', stop: () => smtpSink.stop() });
      const viewer = await startMailViewer({ port: ports.mailViewer, host: HOST, sink: smtpSink });
      mailViewerUrl = viewer.url;
      started.push({ name: 'the mail viewer', stop: () => viewer.stop() });
    }
    const dynamodb = await dynamodbStarting.catch(async (error: unknown) => {
      // The handler imports may still be running; let them settle before the caller exits.
      await handlersLoading.catch(() => undefined);
      throw error;
    });
    started.push({ name: 'DynamoDB Local', stop: () => dynamodb.stop() });

    const clients = localClients(dynamodb.endpoint, sqs.endpoint, scheduler.endpoint);
    started.push({ name: 'the AWS clients', stop: () => clients.destroy() });
    const table = await ensureTable(clients.dynamodb, LOCAL_RESOURCES.tableName);
    const queues = await createQueues(clients.sqs, {
      prefix: LOCAL_RESOURCES.queuePrefix,
      maxAttempts: config.maxAttempts,
      // The visibility follows the timeout the sender runs with (a test may shorten it).
      senderTimeoutSeconds: Math.ceil(timeoutsMs.sender / 1000),
    });
    await ensureScheduleGroup(clients.scheduler, LOCAL_RESOURCES.scheduleGroup);
    applyForFunctions({
      POSTDATE_TABLE_NAME: LOCAL_RESOURCES.tableName,
      POSTDATE_SEND_QUEUE_URL: queues.urls.send,
      POSTDATE_SEND_DLQ_URL: queues.urls.sendDeadLetter,
      POSTDATE_SEND_QUEUE_ARN: queues.arns.send,
      POSTDATE_SCHEDULE_GROUP: LOCAL_RESOURCES.scheduleGroup,
      POSTDATE_SCHEDULER_ROLE_ARN: LOCAL_RESOURCES.schedulerRoleArn,
      POSTDATE_SCHEDULE_DLQ_ARN: queues.arns.scheduleDeadLetter,
      POSTDATE_RELAY_FAILURE_QUEUE_URL: queues.urls.relayFailures,
    });
    // The environment is complete: each sandboxed function starts its first sandbox (a cold start
    // that then serves the first invocation) while the API key is seeded.
    const sandboxes = Object.fromEntries(
      SANDBOXED_FUNCTIONS.map((name) => [
        name,
        existsSync(handlerFile(name))
          ? localFunctionSandboxes(name, {
              environment: functionEnvironment,
              timeoutMs: timeoutsMs[name],
              ...(options.functionPreload ? { preload: options.functionPreload } : {}),
            })
          : undefined,
      ]),
    ) as Record<SandboxedFunctionName, FunctionSandboxes | undefined>;
    for (const name of SANDBOXED_FUNCTIONS) {
      const own = sandboxes[name];
      if (own) started.push({ name: `the ${name} sandboxes`, stop: () => own.close() });
    }
    const sandboxesLoading = Promise.all(
      SANDBOXED_FUNCTIONS.map(
        async (name): Promise<[SandboxedFunctionName, LoadResult | undefined]> => [
          name,
          await sandboxes[name]?.load(),
        ],
      ),
    );
    const apiKey = await seedApiKey(clients.dynamodb, config.apiKey);

    const inProcess = await handlersLoading;
    const loads = Object.fromEntries(await sandboxesLoading) as Record<
      SandboxedFunctionName,
      LoadResult | undefined
    >;
    const notes: Record<FunctionName, string | undefined> = {
      api: inProcess.api.note,
      authorizer: inProcess.authorizer.note,
      relay: noteOf(loads.relay),
      sender: noteOf(loads.sender),
      sweeper: noteOf(loads.sweeper),
    };
    const built: Record<FunctionName, boolean> = {
      api: inProcess.api.handler !== undefined,
      authorizer: inProcess.authorizer.handler !== undefined,
      relay: loads.relay?.loaded === true,
      sender: loads.sender?.loaded === true,
      sweeper: loads.sweeper?.loaded === true,
    };
    for (const name of FUNCTIONS) {
      if (!built[name]) log(`${name} handler not built yet${notes[name] ? ` (${notes[name]})` : ''}`);
    }
    // An external sender runs in another process: this stack only checked that it loads.
    if (options.sender === 'external') await sandboxes.sender?.close();

    const runners: { idle(): Promise<void> }[] = [];
    const relay = built.relay ? sandboxes.relay : undefined;
    if (relay) {
      const runner = startStreamRunner({
        dynamodbEndpoint: dynamodb.endpoint,
        streamArn: table.streamArn,
        handler: relay,
        onFunctionTimeout: (kill) => reportKill({ ...kill, functionName: 'relay' }),
        batchSize: RELAY_STREAM.batchSize,
        maxAttempts: RELAY_STREAM.retryAttempts,
        bisectOnError: true,
        onFailure: { sqsEndpoint: sqs.endpoint, queueUrl: queues.urls.relayFailures },
        filter: RELAY_STREAM_FILTER,
        // A reused table's old records were handled before the restart; the sweeper covers any gap.
        startingPosition: table.existed ? 'LATEST' : 'TRIM_HORIZON',
        log: (message: string, error?: unknown) =>
          log(`relay event source: ${message}${describeError(error)}`),
      });
      runners.push(runner);
      started.push({ name: 'the stream runner', stop: () => runner.stop() });
    }

    const externalSender = options.sender === 'external';
    const sender = externalSender || !built.sender ? undefined : sandboxes.sender;
    if (sender) {
      const runner = startSqsRunner({
        ...senderQueueReading(sqs.endpoint, queues.urls.send, queues.arns.send),
        handler: sender,
        onFunctionTimeout: (kill) => reportKill({ ...kill, functionName: 'sender' }),
        log: (message: string, error?: unknown) =>
          log(`sender event source: ${message}${describeError(error)}`),
      });
      runners.push(runner);
      started.push({ name: 'the SQS runner', stop: () => runner.stop() });
    }

    const sweeper = built.sweeper ? sandboxes.sweeper : undefined;
    const sweep = periodicSweep(sweeper, log, (kill) => reportKill({ ...kill, functionName: 'sweeper' }));
    if (sweeper) {
      await sweep.runOnce();
      sweep.start(options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
      started.push({ name: 'the sweeper', stop: () => sweep.stop() });
    }

    const functions = Object.fromEntries(
      FUNCTIONS.map((name) => [name, built[name] ? 'loaded' : 'not built']),
    ) as Record<FunctionName, 'loaded' | 'not built'>;
    const readiness = async (): Promise<Readiness> => {
      const probes = await Promise.all([
        probe(() =>
          clients.dynamodb.send(
            new DescribeTableCommand({ TableName: LOCAL_RESOURCES.tableName }),
            timeout(),
          ),
        ),
        probe(() =>
          clients.sqs.send(
            new GetQueueAttributesCommand({ QueueUrl: queues.urls.send, AttributeNames: ['QueueArn'] }),
            timeout(),
          ),
        ),
        probe(() =>
          clients.scheduler.send(
            new GetScheduleGroupCommand({ Name: LOCAL_RESOURCES.scheduleGroup }),
            timeout(),
          ),
        ),
        sink ? probe(() => smtpGreets(HOST, sink.port)) : Promise.resolve<PartState>('external'),
        mailViewerUrl ? probe(() => fetchAnswers(mailViewerUrl)) : Promise.resolve<PartState>('external'),
      ]);
      const [dynamodbState, sqsState, schedulerState, smtpState, viewerState] = probes;
      const parts: Record<string, PartState> = {
        dynamodb: dynamodbState ?? 'down',
        sqs: sqsState ?? 'down',
        scheduler: schedulerState ?? 'down',
        smtp: smtpState ?? 'down',
        mailViewer: viewerState ?? 'down',
        relayEventSource: relay ? 'up' : 'not built',
        senderEventSource: externalSender ? 'external' : sender ? 'up' : 'not built',
      };
      for (const name of FUNCTIONS) {
        parts[`${name}Function`] = built[name] ? 'up' : 'not built';
      }
      return { ready: Object.values(parts).every((state) => state !== 'down'), parts };
    };

    const frontEnd: HttpFrontEnd = await startHttpFrontEnd({
      port: ports.api,
      host: HOST,
      api: inProcess.api.handler as
        | ((event: APIGatewayProxyEventV2, context: Context) => Promise<unknown>)
        | undefined,
      authorizer: inProcess.authorizer.handler as
        | ((event: APIGatewayRequestAuthorizerEventV2, context: Context) => Promise<unknown>)
        | undefined,
      readiness,
      log: (line) => log(`http: ${line}`),
    });
    started.push({ name: 'the HTTP front end', stop: () => frontEnd.stop() });

    return {
      apiUrl: frontEnd.url,
      apiKey,
      mailViewerUrl,
      smtpSink: sink,
      dynamodbEndpoint: dynamodb.endpoint,
      sqsEndpoint: sqs.endpoint,
      schedulerEndpoint: scheduler.endpoint,
      tableName: LOCAL_RESOURCES.tableName,
      streamArn: table.streamArn,
      queueUrls: queues.urls,
      queueArns: queues.arns,
      ports,
      functions,
      functionTimeoutsMs: timeoutsMs,
      functionEnvironment,
      readiness,
      sweep: () => sweep.runOnce(),
      idle: async () => {
        await Promise.all(runners.map((runner) => runner.idle()));
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** How the deployed mapping reads the send queue (batch size, maximum concurrency), plus local polling. */
function senderQueueReading(sqsEndpoint: string, queueUrl: string, queueArn: string) {
  return {
    sqsEndpoint,
    queueUrl,
    queueArn,
    batchSize: SENDER_QUEUE.batchSize,
    maxConcurrency: SENDER_QUEUE.maxConcurrency,
    waitTimeSeconds: SENDER_QUEUE.waitTimeSeconds,
  } as const;
}

/**
 * The sender's SQS event source as the deployed mapping reads the send queue (batch size, maximum
 * concurrency), with the sender in worker sandboxes killed at its function timeout: used by the
 * stack, and by a process that runs the sender on its own next to a stack started with
 * `sender: 'external'` (given that stack's `functionEnvironment`).
 */
export function startSenderEventSource(options: {
  readonly sqsEndpoint: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  /** The sender's environment: the stack's `functionEnvironment` (plus anything the caller adds). */
  readonly environment: Readonly<Record<string, string>>;
  /** @default POSTDATE_SENDER_TIMEOUT_SECONDS of `environment` (its `loadConfig`), 240 s unset */
  readonly timeoutMs?: number;
  /** Modules each sender sandbox imports before the handler (see `LocalStackOptions.functionPreload`). */
  readonly preload?: readonly string[];
  /** Called once per invocation killed at its timeout (its batch comes back after the visibility timeout). */
  readonly onFunctionTimeout?: (kill: FunctionTimeoutKill) => void;
  readonly log: (message: string, error?: unknown) => void;
}): SqsRunner {
  const timeoutMs = options.timeoutMs ?? loadConfig(options.environment, 'local').senderTimeoutSeconds * 1000;
  const { onFunctionTimeout } = options;
  return startSqsRunner({
    ...senderQueueReading(options.sqsEndpoint, options.queueUrl, options.queueArn),
    handler: localFunctionSandboxes('sender', {
      environment: options.environment,
      timeoutMs,
      ...(options.preload ? { preload: options.preload } : {}),
    }),
    ...(onFunctionTimeout
      ? {
          onFunctionTimeout: (kill: FunctionTimeout) =>
            onFunctionTimeout({ ...kill, functionName: 'sender' }),
        }
      : {}),
    log: options.log,
  });
}

/** `lambdas/{name}/handler.ts`. */
function handlerFile(name: FunctionName): string {
  return join(ROOT, 'lambdas', name, 'handler.ts');
}

/** A sandboxed function of the stack, as its CDK construct deploys it (`postdate-{name}`). */
function localFunctionSandboxes(
  name: SandboxedFunctionName,
  options: {
    readonly environment: Readonly<Record<string, string>>;
    readonly timeoutMs: number;
    readonly preload?: readonly string[];
  },
): FunctionSandboxes {
  return new FunctionSandboxes({
    name,
    file: handlerFile(name),
    contextFunctionName: `postdate-${name}`,
    // Each sandbox would repeat the SDK's warning that this Node (20) is old; Lambda runs 22.
    environment: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...options.environment },
    timeoutMs: options.timeoutMs,
    ...(options.preload ? { preload: options.preload } : {}),
  });
}

function noteOf(load: LoadResult | undefined): string | undefined {
  return load && !load.loaded ? load.note : undefined;
}

function describeKill(kill: FunctionTimeoutKill, timeoutMs: number): string {
  const what = kill.functionName === 'sweeper' ? 'a sweep' : `a batch of ${kill.records} record(s)`;
  return (
    `${kill.functionName}: invocation killed at its ${timeoutMs} ms timeout (${what}, started ` +
    `${new Date(kill.startedAt).toISOString()}, killed ${new Date(kill.killedAt).toISOString()}); ` +
    'its effects so far stand, its response is lost'
  );
}

interface LoadedHandler {
  readonly handler: AnyHandler | undefined;
  readonly note?: string;
}

/**
 * Imports the api and authorizer `handler.ts` into this process; one that is missing or fails to
 * load is reported, not faked.
 */
async function loadInProcessHandlers(instance: number): Promise<Record<'api' | 'authorizer', LoadedHandler>> {
  const entries = await Promise.all(
    (['api', 'authorizer'] as const).map(async (name): Promise<[typeof name, LoadedHandler]> => {
      const file = handlerFile(name);
      if (!existsSync(file)) return [name, { handler: undefined }];
      try {
        // A fresh module instance per stack: each handler caches its wiring (clients, endpoints,
        // queue URLs) at cold start, and a second stack in the same process has other ones.
        const url = `${pathToFileURL(file).href}?stack=${instance}`;
        const module: { handler?: unknown } = await import(url);
        if (typeof module.handler !== 'function') {
          return [name, { handler: undefined, note: 'it exports no handler function' }];
        }
        return [name, { handler: module.handler as AnyHandler }];
      } catch (error) {
        const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
        return [name, { handler: undefined, note: `it failed to load: ${reason}` }];
      }
    }),
  );
  return Object.fromEntries(entries) as Record<'api' | 'authorizer', LoadedHandler>;
}

function localClients(dynamodbEndpoint: string, sqsEndpoint: string, schedulerEndpoint: string) {
  const common = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const dynamodb = new DynamoDBClient({ ...common, endpoint: dynamodbEndpoint, maxAttempts: 2 });
  const sqs = new SQSClient({ ...common, endpoint: sqsEndpoint, maxAttempts: 2 });
  const scheduler = new SchedulerClient({ ...common, endpoint: schedulerEndpoint, maxAttempts: 2 });
  return {
    dynamodb,
    sqs,
    scheduler,
    destroy() {
      dynamodb.destroy();
      sqs.destroy();
      scheduler.destroy();
    },
  };
}

/** Creates the outbox table, or finds it again in a data dir after a restart. */
async function ensureTable(
  dynamodb: DynamoDBClient,
  tableName: string,
): Promise<{ streamArn: string; existed: boolean }> {
  try {
    return { streamArn: await createOutboxTable(dynamodb, tableName), existed: false };
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    const streamArn = Table?.LatestStreamArn;
    if (!streamArn)
      throw new Error(`table ${tableName} exists without a stream: delete the data dir to reset`);
    return { streamArn, existed: true };
  }
}

async function ensureScheduleGroup(scheduler: SchedulerClient, name: string): Promise<void> {
  try {
    await scheduler.send(new CreateScheduleGroupCommand({ Name: name }));
  } catch (error) {
    if (!(error instanceof ConflictException)) throw error;
  }
}

/**
 * Seeds the API key of tenant `local`: POSTDATE_API_KEY when set (createApiKey is a no-op for a key
 * that already exists after a restart on a kept database), otherwise a new one.
 */
async function seedApiKey(dynamodb: DynamoDBClient, fixed: string | undefined): Promise<string> {
  const created = await createApiKey(DynamoDBDocumentClient.from(dynamodb), LOCAL_RESOURCES.tableName, {
    tenant: LOCAL_RESOURCES.tenant,
    secret: fixed,
    now: new Date(),
  });
  return created.secret;
}

/** The sweeper at start and on a timer, in its sandbox; a run never overlaps the previous one. */
function periodicSweep(
  sweeper: FunctionSandboxes | undefined,
  log: (line: string) => void,
  onTimeout: (kill: FunctionTimeout) => void,
) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const runOnce = async (): Promise<void> => {
    if (!sweeper) return;
    if (running) return running;
    running = (async () => {
      try {
        const outcome = await sweeper.invoke(0, scheduledEvent());
        if (outcome.kind === 'threw') {
          log(`sweeper: ${outcome.error.name}: ${outcome.error.message}`);
        } else if (outcome.kind === 'timedOut') {
          onTimeout({
            functionName: sweeper.name,
            startedAt: outcome.startedAt,
            killedAt: outcome.killedAt,
            records: 0,
          });
        }
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  return {
    runOnce,
    start(intervalMs: number) {
      timer = setInterval(() => void runOnce(), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

function scheduledEvent(): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:000000000000:rule/postdate-local-sweep'],
    detail: {},
  };
}

const timeout = () => ({ abortSignal: AbortSignal.timeout(1000) });

async function probe(check: () => Promise<unknown>): Promise<PartState> {
  try {
    await check();
    return 'up';
  } catch {
    return 'down';
  }
}

/** Connects and waits for the 220 greeting, then says QUIT. */
function smtpGreets(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    socket.setTimeout(1000, () => socket.destroy(new Error('SMTP greeting timed out')));
    socket.once('data', (chunk: Buffer) => {
      const greeted = chunk.toString().startsWith('220');
      socket.end('QUIT\r\n');
      if (greeted) resolve();
      else reject(new Error('no 220 greeting'));
    });
    socket.once('error', reject);
  });
}

/** Any HTTP answer means the server is up (the probe does not make it render anything). */
async function fetchAnswers(url: string): Promise<void> {
  const response = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(1000) });
  await response.arrayBuffer();
}

function describeError(error: unknown): string {
  if (error === undefined) return '';
  return error instanceof Error ? `: ${error.name}: ${error.message}` : `: ${String(error)}`;
}
