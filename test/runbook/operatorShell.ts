/**
 * What every runbook walk (test/runbook/*.test.ts, decisions 0262 and 0281) does as the on-call
 * operator on a local stack: run `npx postdate …` against that stack's table and emulators, as
 * `--stack` would name them, and enqueue a message through the real HTTP API.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  type QueueAttributeName,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { expect } from 'vitest';
import { RELAY_NAMES_VARIABLE } from '../../cli/relaysCommands.js';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import { CLI_SETTINGS } from '../../lib/stackOutputs.js';
import { WEBHOOK_QUEUE } from '../../lib/webhookLayout.js';
import { LOCAL_RESOURCES } from '../../local/localResources.js';
import type { LocalStack } from '../../local/localStack.js';
import { THROTTLE_FAULT_PATH } from '../../local/scheduler/schedulerHttpServer.js';
import type { ThrottleView } from '../../local/scheduler/throttleFault.js';
import { runBin, runMain } from '../cli/cliFixtures.js';
import { eventually } from '../support/eventually.js';

export type Postdate = (...args: string[]) => Promise<{ stdout: string; code: number; stderr?: string }>;

/**
 * The operator's `postdate` against this stack: by default the CLI's main in this process
 * (`runMain`, decision 0274: the stack takes nothing from process.env, local/localStack.ts); with
 * `bin`, the real entry point `cli/postdate.mjs` in a process of its own. The shell is set up as
 * operations.md's "Tools and setup" sets it: the resource names, the relays in order
 * (POSTDATE_RELAY_NAMES, the output `RelayNames`), and the CLI's settings exported from the
 * functions' own environment (its loop over the relay's variables; `--stack` takes them from the
 * output `Settings`). `env` adds anything else.
 */
export function operatorCli(
  stack: LocalStack,
  { bin = false, env = {} }: { bin?: boolean; env?: Readonly<Record<string, string>> } = {},
): Postdate {
  const run = bin ? runBin : runMain;
  const settings = Object.fromEntries(
    CLI_SETTINGS.map((name) => CONFIG_SETTINGS[name].variable)
      .filter((variable) => stack.functionEnvironment[variable] !== undefined)
      .map((variable) => [variable, stack.functionEnvironment[variable] as string]),
  );
  return (...args) =>
    run(['--table', stack.tableName, ...args], {
      AWS_ENDPOINT_URL_DYNAMODB: stack.dynamodbEndpoint,
      AWS_ENDPOINT_URL_SQS: stack.sqsEndpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
      POSTDATE_SEND_DLQ_URL: stack.queueUrls.sendDeadLetter,
      POSTDATE_SEND_QUEUE_URL: stack.queueUrls.send,
      POSTDATE_SCHEDULE_DLQ_URL: stack.queueUrls.scheduleDeadLetter,
      POSTDATE_RELAY_FAILURE_QUEUE_URL: stack.queueUrls.relayFailures,
      [RELAY_NAMES_VARIABLE]: stack.relayNames.join(','),
      ...(stack.functionEnvironment.POSTDATE_WEBHOOK_QUEUE_URL === undefined
        ? {}
        : { POSTDATE_WEBHOOK_QUEUE_URL: stack.functionEnvironment.POSTDATE_WEBHOOK_QUEUE_URL }),
      ...settings,
      ...env,
    });
}

/** POST /v1/messages with the stack's key; expects 202 and answers the message's id. */
export async function enqueue(
  stack: LocalStack,
  idempotencyKey: string,
  message: Readonly<Record<string, unknown>> = {},
): Promise<string> {
  const answer = await fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ to: ['ada@example.com'], subject: 'Runbook', text: 'Hello.', ...message }),
  });
  expect(answer.status, await answer.clone().text()).toBe(202);
  return ((await answer.json()) as { id: string }).id;
}

/** `messages show <id> --json`'s message. */
export async function shownMessage(
  postdate: Postdate,
  id: string,
): Promise<{ status: string; attempts: number; history: { outcome: string }[] }> {
  const { stdout } = await postdate('--json', 'messages', 'show', id);
  return (
    JSON.parse(stdout) as { message: { status: string; attempts: number; history: { outcome: string }[] } }
  ).message;
}

/** Whether the AWS CLI is on the PATH. */
const AWS_CLI = spawnSync('aws', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * `aws sqs …` as the runbook writes it, against the stack's SQS emulator (`--endpoint-url` added:
 * the AWS CLI v1 reads no AWS_ENDPOINT_URL_SQS); answers stdout, trimmed. `npm test` needs only
 * Node.js and Java (README): without the AWS CLI on the PATH the same SQS actions go through the SDK
 * (`sqsAction`).
 */
export async function awsCli(stack: LocalStack, ...args: string[]): Promise<string> {
  if (!AWS_CLI) return sqsAction(stack.sqsEndpoint, args);
  const { stdout } = await promisify(execFile)('aws', [...args, '--endpoint-url', stack.sqsEndpoint], {
    env: {
      ...process.env,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
      AWS_DEFAULT_REGION: 'us-east-1',
    },
    timeout: 60_000,
  });
  return stdout.trim();
}

/**
 * The `aws sqs` commands the walks run, as the SDK's actions, answering what the CLI prints: with
 * `--query … --output text` the value, without it the CLI's JSON (4-space indent); the move task's JSON.
 */
async function sqsAction(endpoint: string, args: readonly string[]): Promise<string> {
  const sqs = new SQSClient(localClientOptions(endpoint));
  const option = (name: string) => {
    const value = args[args.indexOf(name) + 1];
    if (!args.includes(name) || value === undefined) throw new Error(`aws ${args.join(' ')}: no ${name}`);
    return value;
  };
  try {
    switch (args[1]) {
      case 'get-queue-url':
        return (await sqs.send(new GetQueueUrlCommand({ QueueName: option('--queue-name') }))).QueueUrl ?? '';
      case 'get-queue-attributes': {
        const name = option('--attribute-names') as QueueAttributeName;
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: option('--queue-url'), AttributeNames: [name] }),
        );
        return args.includes('--query')
          ? (Attributes?.[name] ?? '')
          : JSON.stringify({ Attributes: { [name]: Attributes?.[name] } }, null, 4);
      }
      case 'set-queue-attributes':
        await sqs.send(
          new SetQueueAttributesCommand({
            QueueUrl: option('--queue-url'),
            Attributes: JSON.parse(option('--attributes')),
          }),
        );
        return '';
      case 'receive-message': {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: option('--queue-url'),
            MaxNumberOfMessages: args.includes('--max-number-of-messages')
              ? Number(option('--max-number-of-messages'))
              : 1,
            WaitTimeSeconds: 0,
          }),
        );
        // `--query 'Messages[0].[ReceiptHandle,Body]' --output text` (procedure 6): the two, tab-separated.
        if (args.includes('--query')) {
          const [first] = Messages;
          return first === undefined ? 'None' : `${first.ReceiptHandle}\t${first.Body}`;
        }
        const messages = Messages.map(({ MessageId, ReceiptHandle, MD5OfBody, Body }) => ({
          MessageId,
          ReceiptHandle,
          MD5OfBody,
          Body,
        }));
        return messages.length === 0 ? '' : JSON.stringify({ Messages: messages }, null, 4);
      }
      case 'delete-message':
        await sqs.send(
          new DeleteMessageCommand({
            QueueUrl: option('--queue-url'),
            ReceiptHandle: option('--receipt-handle'),
          }),
        );
        return '';
      case 'start-message-move-task':
        return JSON.stringify(
          await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: option('--source-arn') })),
        );
      default:
        throw new Error(`aws ${args.join(' ')}: not one of the walks' commands`);
    }
  } finally {
    sqs.destroy();
  }
}

/** An SDK client's options for one of the local stack's emulators (any keys will do). */
export function localClientOptions(endpoint: string) {
  return {
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
}

/** The stack's HTTP API with its key: the status and the JSON answer, read by its documented shape. */
export function stackApi(stack: LocalStack) {
  return async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const response = await fetch(`${stack.apiUrl}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the test reads answers by their documented shape
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };
}

/**
 * What this process writes to stdout and stderr from now until `restore()`: the local functions'
 * log events among it, as CloudWatch Logs would hold them, read by `of(service)` (Powertools' JSON
 * lines of `postdate-relay`, `postdate-webhooks`, …; with `of(METRICS.service)`, their EMF metric
 * documents). `echo: false` keeps those lines and the EMF documents off the console (a stack whose
 * functions log at INFO or publish metrics); everything else is written on as before.
 */
export function capturedLogs({ echo = true }: { echo?: boolean } = {}): {
  of(service: string): string[];
  restore(): void;
} {
  const written: string[] = [];
  const streams = [process.stdout, process.stderr] as const;
  const writes = streams.map((stream) => stream.write);
  streams.forEach((stream, i) => {
    const write = writes[i] as typeof stream.write;
    stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      written.push(String(chunk));
      if (!echo && String(chunk).includes('"service":"postdate')) return true;
      return write.call(stream, chunk, ...rest);
    }) as typeof stream.write;
  });
  return {
    of: (service) =>
      written
        .join('')
        .split('\n')
        .filter((line) => line.startsWith('{') && line.includes(`"service":"${service}"`)),
    restore: () =>
      streams.forEach((stream, i) => {
        stream.write = writes[i] as typeof stream.write;
      }),
  };
}

/** A webhook delivery as `GET /v1/webhooks/{id}/deliveries` lists it (the fields the walks read). */
export interface ListedDelivery {
  readonly id: string;
  readonly event_id: string;
  readonly status: string;
  readonly attempts: number;
  readonly next_attempt_at: string | null;
}

/** An endpoint's deliveries through the API, newest first; with `status`, only those. */
export async function webhookDeliveries(
  stack: LocalStack,
  endpoint: string,
  status?: string,
): Promise<ListedDelivery[]> {
  const path = `/v1/webhooks/${endpoint}/deliveries${status ? `?status=${status}` : ''}`;
  return (await stackApi(stack)(path)).json.items;
}

/** The queue's depth as the runbook reads it: `aws sqs get-queue-attributes … ApproximateNumberOfMessages`. */
export async function queueDepth(stack: LocalStack, queueUrl: string): Promise<number> {
  return Number(
    await awsCli(
      stack,
      'sqs',
      'get-queue-attributes',
      '--queue-url',
      queueUrl,
      '--attribute-names',
      'ApproximateNumberOfMessages',
      '--query',
      'Attributes.ApproximateNumberOfMessages',
      '--output',
      'text',
    ),
  );
}
/**
 * Runbook procedure 7's situation, made for real (decisions 0281, 0289): a failure on our side, not
 * the endpoint's. The webhook queue's redrive is compressed to one receive (deployed: 20, over 41 to
 * 89 minutes: lib/webhookLayout.ts), DynamoDB Local is stopped (SIGSTOP) so that the delivery
 * function cannot read a delivery and fails its copy, until `count` copies are in the webhook DLQ,
 * and it is resumed whatever happens. The DLQ's URL and ARN (step 1's `WDLQ`, `WDLQ_ARN`) and its
 * depth as the AWS CLI reads it.
 */
export async function webhookCopiesInTheirDlq(
  stack: LocalStack,
  count: number,
): Promise<{ readonly WDLQ: string; readonly WDLQ_ARN: string; depth(): Promise<number> }> {
  const aws = (...args: string[]) => awsCli(stack, ...args);
  const name = `${LOCAL_RESOURCES.queuePrefix}-${WEBHOOK_QUEUE.deadLetter.logicalName}`;
  const WDLQ = await aws(
    'sqs',
    'get-queue-url',
    '--queue-name',
    name,
    '--query',
    'QueueUrl',
    '--output',
    'text',
  );
  const WDLQ_ARN = await aws(
    'sqs',
    'get-queue-attributes',
    '--queue-url',
    WDLQ,
    '--attribute-names',
    'QueueArn',
    '--query',
    'Attributes.QueueArn',
    '--output',
    'text',
  );
  const depth = () => queueDepth(stack, WDLQ);
  await aws(
    'sqs',
    'set-queue-attributes',
    '--queue-url',
    stack.functionEnvironment.POSTDATE_WEBHOOK_QUEUE_URL as string,
    '--attributes',
    JSON.stringify({ RedrivePolicy: JSON.stringify({ deadLetterTargetArn: WDLQ_ARN, maxReceiveCount: 1 }) }),
  );
  const java = dynamodbPid(stack);
  process.kill(java, 'SIGSTOP');
  try {
    await eventually(
      `${count} copies in the webhook DLQ`,
      async () => (await depth()) === count || undefined,
      {
        withinMs: 120_000,
        everyMs: 1000,
      },
    );
  } finally {
    process.kill(java, 'SIGCONT');
  }
  return { WDLQ, WDLQ_ARN, depth };
}

/** DynamoDB Local of this stack: the java child of this process listening on its port. */
function dynamodbPid(stack: LocalStack): number {
  const lines = execFileSync('ps', ['--ppid', String(process.pid), '-o', 'pid=,args='], { encoding: 'utf8' });
  const line = lines
    .split('\n')
    .find((entry) => /\bjava\b/.test(entry) && entry.includes(`-port ${stack.ports.dynamodb}`));
  if (line === undefined)
    throw new Error(`no DynamoDB Local on port ${stack.ports.dynamodb} among:\n${lines}`);
  return Number(line.trim().split(/\s+/)[0]);
}

/**
 * The operator's `curl -X PUT|DELETE|GET $SCHEDULER/local-faults/throttle` (local/EMULATORS.md): the
 * Scheduler emulator refusing operations as the service throttles them (decision 0286).
 */
export async function schedulerThrottle(
  stack: LocalStack,
  method: 'PUT' | 'DELETE' | 'GET',
  body?: unknown,
): Promise<ThrottleView> {
  const answer = await fetch(`${stack.schedulerEndpoint}${THROTTLE_FAULT_PATH}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(answer.status).toBe(200);
  return (await answer.json()) as ThrottleView;
}

/** The tenant cancelling (DELETE) or moving (PATCH) a message through the HTTP API: 200, or the test fails. */
export async function tenantChanges(
  stack: LocalStack,
  method: 'PATCH' | 'DELETE',
  id: string,
  body?: unknown,
): Promise<void> {
  const answer = await stackApi(stack)(`/v1/messages/${id}`, { method, body });
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
}

/** What the stack's SMTP sink received of a message: each delivery's arrival (epoch ms). */
export function sinkArrivals(stack: LocalStack, id: string): number[] {
  return (stack.smtpSink?.messages() ?? [])
    .filter((mail) => mail.postdateId === id)
    .map((mail) => Date.parse(mail.receivedAt));
}
