/**
 * Which stack the CLI talks to, and the AWS clients for it.
 *
 * - **local** (the default): the stack `npm start` runs — DynamoDB Local, the SQS emulator and the
 *   Scheduler emulator on loopback (ports from AWS_ENDPOINT_URL_* or POSTDATE_*_PORT, defaults as in
 *   local/localEnv.ts), static dummy credentials, the local stack's resource names.
 * - **aws**: chosen as soon as a resource name is given (`--table`, `--queue-url`, `--dlq-url`,
 *   `--relay-failures-url`, `--event-failures-url`, `--schedule-dlq-url`, or POSTDATE_TABLE_NAME in the environment); the usual credential chain
 *   and region. Endpoints still honour AWS_ENDPOINT_URL_* (how the tests point it at the emulators).
 *
 * - **aws from a stack**: `--stack <name>` reads the names from the stack's CloudFormation outputs
 *   (cli/stackTarget.ts), then comes here with them as if they were flags.
 */
import { DynamoDBClient, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueDoesNotExist,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { lazyS3AttachmentStore } from '../lambdas/adapters/LazyS3AttachmentStore.js';
import { CONFIG_SETTINGS, RESOURCE_SETTINGS } from '../lambdas/core/configSpec.js';
import type { AttachmentStore } from '../lambdas/ports/AttachmentStore.js';
import { QUEUE, SCHEDULE_GROUP } from '../lib/queueLayout.js';
import { EVENT_FAILURE_QUEUE, WEBHOOK_QUEUE } from '../lib/webhookLayout.js';
import { LOCAL_ATTACHMENT_BUCKET, LOCAL_PORT_DEFAULTS } from '../local/localEnv.js';
import { readStackFile, type StackFile } from '../local/stackFile.js';
import { CliError, isNetworkError, StackUnreachableError, UsageError } from './cliErrors.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** The global options every command accepts (commander turns `--queue-url` into `queueUrl`). */
export interface TargetOptions {
  readonly local?: boolean;
  readonly stack?: string;
  readonly table?: string;
  readonly queueUrl?: string;
  readonly dlqUrl?: string;
  readonly relayFailuresUrl?: string;
  readonly eventFailuresUrl?: string;
  readonly scheduleDlqUrl?: string;
  readonly region?: string;
  readonly dynamodbEndpoint?: string;
  readonly sqsEndpoint?: string;
  readonly schedulerEndpoint?: string;
}

/**
 * The names the local stack gives its resources (local/, `npm start`). The queues are found by name
 * (`{prefix}-{logical name}` as local/createResources.ts creates them), so their URLs need no port.
 */
export const LOCAL_NAMES = {
  tableName: 'postdate-outbox',
  queuePrefix: 'postdate',
  scheduleGroup: SCHEDULE_GROUP.logicalName,
  schedulerRoleArn: 'arn:aws:iam::000000000000:role/postdate-local-scheduler',
  attachmentBucket: LOCAL_ATTACHMENT_BUCKET,
  region: 'us-east-1',
} as const;

export type TargetMode = 'local' | 'aws';

/** Resource names as far as they are known; queue URLs may still be looked up by name. */
export interface ResourceRefs {
  readonly tableName: string;
  readonly sendQueue: QueueRef | undefined;
  readonly deadLetterQueue: QueueRef | undefined;
  readonly relayFailureQueue: QueueRef | undefined;
  /** The event producer's failure queue (locally `postdate-event-failures`, decision 0283). */
  readonly eventFailureQueue: QueueRef | undefined;
  /**
   * The webhook queue: `webhooks test|retry` put a copy on it, `event-failures redrive` hands it to
   * the producer's logic. Locally its logical name, as the local stack creates it.
   */
  readonly webhookQueue: QueueRef | undefined;
  readonly eventBusName: string | undefined;
  readonly attachmentBucket: string | undefined;
  /** The schedules' dead-letter queue, to read (`schedule-failures`). */
  readonly scheduleDeadLetterQueue: QueueRef | undefined;
  readonly scheduleGroup: string | undefined;
  readonly schedulerRoleArn: string | undefined;
  /**
   * Where new schedules park what the scheduler cannot deliver (`relay-failures redrive` creates
   * schedules): POSTDATE_SCHEDULE_DLQ_ARN as the relay has it, else the queue read above.
   */
  readonly scheduleDeadLetter: { readonly arn: string } | QueueRef | undefined;
}

export type QueueRef = { readonly url: string } | { readonly name: string };

export interface Target {
  readonly mode: TargetMode;
  readonly refs: ResourceRefs;
  readonly endpoints: { readonly dynamodb: string; readonly sqs: string; readonly scheduler: string };
  readonly dynamodb: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /**
   * The environment the target was opened with, where the CLI's settings are read: with `--stack`,
   * the stack's output `Settings` over the shell's environment (cli/stackTarget.ts).
   */
  readonly env: Env;
  /** What the operator should know about how the target was opened (printed on stderr). */
  readonly warnings: readonly string[];
  /**
   * The relays in order, comma-separated, as the stack itself lists them: its output `RelayNames`
   * (`--stack`) or the running local stack's file. Undefined when only this shell can say.
   */
  readonly stackRelayNames: string | undefined;
  /** The running local stack's POSTDATE_MESSAGE_ID_DOMAIN, from its file; undefined otherwise. */
  readonly stackMessageIdDomain: string | undefined;
  /**
   * The stack's HTTP API, for the commands that call it: POSTDATE_API_URL (with `--stack`, its
   * output `ApiUrl`), else locally the running stack's file, else the local default port.
   */
  readonly apiUrl: string | undefined;
  /** Built on first use: only `relay-failures redrive` and `event-failures redrive` need them. */
  scheduler(): SchedulerClient;
  streams(): DynamoDBStreamsClient;
  eventBridge(): EventBridgeClient;
  attachments(bucket: string): AttachmentStore;
}

/**
 * How long a connection may take before the endpoint counts as unreachable, locally as in AWS. A
 * stopped local stack refuses the connection on loopback at once: this never decides that case. It
 * decides a connection made but handled late: after a blocked event loop, Node runs the due timers
 * before the poll that would see the connection made. A shorter one (1.5 s locally, until decision
 * 0299) took a running stack for a stopped one when this process was blocked that long right after
 * a request (a busy machine, a big synchronous load).
 */
const CONNECTION_TIMEOUT_MS = 5_000;

/** Decides local or AWS from the options and the environment (pure: no client is built). */
export function resolveMode(options: TargetOptions, env: Env): TargetMode {
  // A deployed stack; its names are read from its outputs first (cli/stackTarget.ts).
  if (options.stack !== undefined) return 'aws';
  if (options.local) return 'local';
  const named =
    options.table ??
    options.queueUrl ??
    options.dlqUrl ??
    options.relayFailuresUrl ??
    options.eventFailuresUrl ??
    options.scheduleDlqUrl ??
    env.POSTDATE_TABLE_NAME;
  return named !== undefined && named !== '' ? 'aws' : 'local';
}

/** The resource names for a mode, from the options, then the environment, then the local defaults. */
export function resolveRefs(mode: TargetMode, options: TargetOptions, env: Env): ResourceRefs {
  const pick = (flag: string | undefined, variable: string): string | undefined => {
    const value = flag ?? env[variable];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const queue = (url: string | undefined, logicalName: string): QueueRef | undefined =>
    url !== undefined
      ? { url }
      : mode === 'local'
        ? { name: `${LOCAL_NAMES.queuePrefix}-${logicalName}` }
        : undefined;
  const tableName =
    pick(options.table, 'POSTDATE_TABLE_NAME') ?? (mode === 'local' ? LOCAL_NAMES.tableName : undefined);
  if (tableName === undefined) throw new UsageError('no table: pass --table or set POSTDATE_TABLE_NAME');
  const scheduleDlqArn = pick(undefined, 'POSTDATE_SCHEDULE_DLQ_ARN');
  const scheduleDeadLetterQueue = queue(
    pick(options.scheduleDlqUrl, 'POSTDATE_SCHEDULE_DLQ_URL'),
    QUEUE.scheduleDeadLetter.logicalName,
  );
  return {
    tableName,
    sendQueue: queue(pick(options.queueUrl, 'POSTDATE_SEND_QUEUE_URL'), 'send'),
    deadLetterQueue: queue(pick(options.dlqUrl, 'POSTDATE_SEND_DLQ_URL'), 'send-dlq'),
    relayFailureQueue: queue(
      pick(options.relayFailuresUrl, 'POSTDATE_RELAY_FAILURE_QUEUE_URL'),
      'relay-failures',
    ),
    eventFailureQueue: queue(
      pick(options.eventFailuresUrl, 'POSTDATE_EVENT_FAILURE_QUEUE_URL'),
      EVENT_FAILURE_QUEUE.logicalName,
    ),
    webhookQueue: queue(pick(undefined, 'POSTDATE_WEBHOOK_QUEUE_URL'), WEBHOOK_QUEUE.logicalName),
    eventBusName: pick(undefined, 'POSTDATE_EVENT_BUS_NAME'),
    attachmentBucket:
      pick(undefined, RESOURCE_SETTINGS.attachmentBucket.variable) ??
      (mode === 'local' ? LOCAL_NAMES.attachmentBucket : undefined),
    scheduleGroup:
      pick(undefined, 'POSTDATE_SCHEDULE_GROUP') ??
      (mode === 'local' ? LOCAL_NAMES.scheduleGroup : undefined),
    schedulerRoleArn:
      pick(undefined, 'POSTDATE_SCHEDULER_ROLE_ARN') ??
      (mode === 'local' ? LOCAL_NAMES.schedulerRoleArn : undefined),
    scheduleDeadLetterQueue,
    scheduleDeadLetter: scheduleDlqArn !== undefined ? { arn: scheduleDlqArn } : scheduleDeadLetterQueue,
  };
}

/** Builds the clients for the options and environment of one CLI run. */
export function openTarget(
  options: TargetOptions,
  env: Env = process.env,
  readRunningStack: () => StackFile | undefined = () => readStackFile(),
): Target {
  const mode = resolveMode(options, env);
  const refs = resolveRefs(mode, options, env);
  const local = mode === 'local';
  const loopback = (port: number) => `http://127.0.0.1:${port}`;
  const localPort = (variable: string, fallback: number) => {
    const raw = env[variable]?.trim();
    return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback;
  };
  // A stack `npm start` runs here says where it listens (local/stackFile.ts); the port variables
  // and the defaults come after it.
  const running = local ? readRunningStack() : undefined;
  const endpointFor = (flag: string | undefined, variable: string, localDefault: string) =>
    flag ?? env[variable] ?? env.AWS_ENDPOINT_URL ?? (local ? localDefault : undefined);
  const localEndpoint = (
    part: 'dynamodbEndpoint' | 'sqsEndpoint' | 'schedulerEndpoint',
    variable: string,
    fallback: number,
  ) =>
    env[variable] === undefined && running !== undefined
      ? running[part]
      : loopback(localPort(variable, fallback));
  const dynamodbEndpoint = endpointFor(
    options.dynamodbEndpoint,
    'AWS_ENDPOINT_URL_DYNAMODB',
    localEndpoint('dynamodbEndpoint', 'POSTDATE_DYNAMODB_PORT', LOCAL_PORT_DEFAULTS.dynamodb),
  );
  const sqsEndpoint = endpointFor(
    options.sqsEndpoint,
    'AWS_ENDPOINT_URL_SQS',
    localEndpoint('sqsEndpoint', 'POSTDATE_SQS_PORT', LOCAL_PORT_DEFAULTS.sqs),
  );
  const schedulerEndpoint = endpointFor(
    options.schedulerEndpoint,
    'AWS_ENDPOINT_URL_SCHEDULER',
    localEndpoint('schedulerEndpoint', 'POSTDATE_SCHEDULER_PORT', LOCAL_PORT_DEFAULTS.scheduler),
  );
  // The attachments' S3: the SDK's own variable in AWS; locally the emulator `npm start` runs.
  const s3Endpoint =
    env[RESOURCE_SETTINGS.attachmentEndpoint.variable] ??
    env.AWS_ENDPOINT_URL_S3 ??
    (local
      ? (running?.s3Endpoint ?? loopback(localPort('POSTDATE_S3_PORT', LOCAL_PORT_DEFAULTS.s3)))
      : undefined);
  const region =
    options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? (local ? LOCAL_NAMES.region : undefined);
  const common = {
    ...(region !== undefined ? { region } : {}),
    // The emulators accept any credentials. Fixed ones locally mean a laptop without AWS credentials
    // works, and an expired SSO session of a real profile never stands in the way of the local stack.
    ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    // Locally, fail fast: a stack that is not running should say so at once, not after retries.
    ...(local ? { maxAttempts: 2 } : {}),
    requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS, requestTimeout: 30_000 },
  };
  const hint = local
    ? 'is `npm start` running? (or pass --table/--queue-url for AWS)'
    : 'check the region, the network and any AWS_ENDPOINT_URL_* setting';
  const shown = (endpoint: string | undefined, service: string) =>
    endpoint ??
    `the ${service} endpoint of region ${region ?? '(no region set: pass --region or set AWS_REGION)'}`;

  const dynamodb = new DynamoDBClient({
    ...common,
    ...(dynamodbEndpoint ? { endpoint: dynamodbEndpoint } : {}),
  });
  dynamodb.middlewareStack.add(
    errorTranslator('DynamoDB', shown(dynamodbEndpoint, 'DynamoDB'), hint, refs),
    TRANSLATOR,
  );
  const sqs = new SQSClient({ ...common, ...(sqsEndpoint ? { endpoint: sqsEndpoint } : {}) });
  sqs.middlewareStack.add(errorTranslator('SQS', shown(sqsEndpoint, 'SQS'), hint, refs), TRANSLATOR);
  let scheduler: SchedulerClient | undefined;
  let streams: DynamoDBStreamsClient | undefined;
  let eventBridge: EventBridgeClient | undefined;

  return {
    mode,
    refs,
    env,
    warnings: [],
    stackRelayNames: running?.relayNames?.join(','),
    stackMessageIdDomain: running?.messageIdDomain,
    apiUrl:
      env.POSTDATE_API_URL?.trim() ||
      (local
        ? (running?.apiUrl ?? loopback(localPort(CONFIG_SETTINGS.port.variable, LOCAL_PORT_DEFAULTS.api)))
        : undefined),
    endpoints: {
      dynamodb: shown(dynamodbEndpoint, 'DynamoDB'),
      sqs: shown(sqsEndpoint, 'SQS'),
      scheduler: shown(schedulerEndpoint, 'Scheduler'),
    },
    dynamodb,
    documents: DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
    sqs,
    scheduler() {
      if (scheduler === undefined) {
        scheduler = new SchedulerClient({
          ...common,
          ...(schedulerEndpoint ? { endpoint: schedulerEndpoint } : {}),
        });
        scheduler.middlewareStack.add(
          errorTranslator('the Scheduler', shown(schedulerEndpoint, 'Scheduler'), hint),
          TRANSLATOR,
        );
      }
      return scheduler;
    },
    streams() {
      if (streams === undefined) {
        streams = new DynamoDBStreamsClient({
          ...common,
          ...(dynamodbEndpoint ? { endpoint: dynamodbEndpoint } : {}),
        });
        streams.middlewareStack.add(
          errorTranslator('DynamoDB Streams', shown(dynamodbEndpoint, 'DynamoDB'), hint),
          TRANSLATOR,
        );
      }
      return streams;
    },
    // EventBridge only in AWS (the local stack has no bus): its
    // endpoint comes from the SDK's own AWS_ENDPOINT_URL_* when set.
    eventBridge() {
      eventBridge ??= new EventBridgeClient(common);
      return eventBridge;
    },
    attachments(bucket) {
      return lazyS3AttachmentStore({
        bucket,
        endpoint: s3Endpoint,
        config: {
          ...(region !== undefined ? { region } : {}),
          ...(local ? { credentials: common.credentials } : {}),
        },
      });
    },
  };
}

/**
 * A middleware that translates, at the edge, the failures an operator must read as one line: nothing
 * answered at the endpoint (after the SDK's own retries), the table or a queue does not exist.
 * Everything else passes through unchanged. Added at the `initialize` step, outside the retries.
 */
export function errorTranslator(service: string, endpoint: string, hint: string, refs?: ResourceRefs) {
  return <Args, Result>(next: (args: Args) => Promise<Result>) =>
    async (args: Args): Promise<Result> => {
      try {
        return await next(args);
      } catch (error) {
        if (isNetworkError(error)) throw new StackUnreachableError(service, endpoint, hint, error);
        if (error instanceof ResourceNotFoundException && refs !== undefined) {
          throw new CliError(
            `DynamoDB at ${endpoint} has no table "${refs.tableName}" (or one of its indexes) — ${hint}`,
            undefined,
            { cause: error },
          );
        }
        if (error instanceof QueueDoesNotExist) {
          throw new CliError(`SQS at ${endpoint}: the queue does not exist — ${hint}`, undefined, {
            cause: error,
          });
        }
        throw error;
      }
    };
}

const TRANSLATOR = { step: 'initialize', name: 'postdateCliErrors' } as const;

/**
 * The API and the key the commands that call it use (`messages enqueue`, `attachments upload`): the
 * flags, else the target's API (Target `apiUrl`) and POSTDATE_API_KEY.
 */
export function apiOf(
  target: Pick<Target, 'apiUrl' | 'env'>,
  options: { readonly apiUrl?: string; readonly apiKey?: string },
): { readonly baseUrl: string; readonly apiKey: string } {
  const baseUrl = options.apiUrl ?? target.apiUrl;
  const apiKey = options.apiKey ?? target.env.POSTDATE_API_KEY;
  if (!baseUrl) {
    throw new UsageError(
      'no API URL: pass --api-url, --stack NAME (its output ApiUrl), or set POSTDATE_API_URL',
    );
  }
  if (!apiKey)
    throw new UsageError('no API key: pass --api-key or set POSTDATE_API_KEY (a key of the tenant)');
  return { baseUrl, apiKey };
}

/** The queue's URL: given, or looked up by name (local stack). */
export async function queueUrlOf(sqs: SQSClient, ref: QueueRef | undefined, what: string): Promise<string> {
  if (ref === undefined) {
    throw new UsageError(`no ${what} URL: ${QUEUE_FLAG_HINT[what] ?? 'pass its URL'}`);
  }
  if ('url' in ref) return ref.url;
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: ref.name }));
  if (QueueUrl === undefined) throw new CliError(`SQS answered no URL for the queue ${ref.name}`);
  return QueueUrl;
}

const QUEUE_FLAG_HINT: Record<string, string> = {
  'send queue': 'pass --queue-url or set POSTDATE_SEND_QUEUE_URL',
  'dead-letter queue': 'pass --dlq-url or set POSTDATE_SEND_DLQ_URL',
  'relay failure queue': 'pass --relay-failures-url or set POSTDATE_RELAY_FAILURE_QUEUE_URL',
  'event failure queue':
    'pass --event-failures-url or set POSTDATE_EVENT_FAILURE_QUEUE_URL (stack output EventFailureQueueUrl)',
  'webhook queue': 'set POSTDATE_WEBHOOK_QUEUE_URL (stack output WebhookQueueUrl)',
  'schedule dead-letter queue':
    'pass --schedule-dlq-url or set POSTDATE_SCHEDULE_DLQ_URL (stack output ScheduleDeadLetterQueueUrl)',
};

/** A queue's ARN (what StartMessageMoveTask and the scheduler's targets take). */
export async function queueArnOf(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new CliError(`SQS answered no ARN for ${queueUrl}`);
  return arn;
}
