import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ReceiveMessageCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { encodeDispatchPayload, parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { isTerminal, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import { runWithConcurrency } from '../../lambdas/core/runWithConcurrency.js';
import {
  byStatusPk,
  byTenantPk,
  createdSortKey,
  duePk,
  type MessageStateRecord,
  messagePk,
} from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { queueDepth } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

/**
 * Puts copies on the DLQ the way they get there in production: the sender puts each one there
 * itself, marked `"dlq": true` and naming the death (its record's `death`, decision 0149), when its
 * message becomes `dead`. A copy given no `death` is one parked before deaths were named.
 */
export async function deadLetter(
  sqs: SQSClient,
  urls: { send: string; sendDeadLetter: string },
  copies: readonly { id: string; rev: number; death?: number | undefined }[],
): Promise<void> {
  for (let start = 0; start < copies.length; start += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: urls.sendDeadLetter,
        Entries: copies.slice(start, start + 10).map((copy, i) => ({
          Id: String(i),
          MessageBody: encodeDispatchPayload({ ...copy, dlq: true }),
        })),
      }),
    );
  }
  await eventually(
    `${copies.length} visible on the send DLQ`,
    async () => (await visibleCount(sqs, urls.sendDeadLetter)) === copies.length,
  );
}

export async function visibleCount(sqs: SQSClient, queueUrl: string): Promise<number> {
  return (await queueDepth(sqs, queueUrl)).visible;
}

/** Reads every copy on a queue (and deletes nothing: they become visible again after `hideSeconds`). */
export async function drainIds(sqs: SQSClient, queueUrl: string): Promise<{ id: string; rev: number }[]> {
  const copies: { id: string; rev: number }[] = [];
  for (let empty = 0; empty < 2; ) {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    if (!Messages || Messages.length === 0) {
      empty++;
      continue;
    }
    for (const message of Messages) {
      const parsed = parseDispatchPayload(message.Body ?? '');
      if (parsed.ok) copies.push({ id: parsed.payload.id, rev: parsed.payload.rev });
    }
  }
  return copies.sort((a, b) => a.id.localeCompare(b.id));
}

export interface SeedMessage {
  readonly id: string;
  readonly tenant?: string;
  readonly status: MessageStatus;
  readonly rev?: number;
  readonly createdAt: string;
  readonly sendAt?: string;
  /** For non-terminal messages: when it should have moved on (defaults to sendAt). */
  readonly dueAt?: string;
  readonly tags?: Record<string, string>;
  readonly lastError?: MessageStateRecord['last_error'];
  readonly history?: MessageStateRecord['history'];
  readonly attempts?: number;
  /** Its deadline (DESIGN §5 "Deadlines"). @default none */
  readonly notAfter?: string;
}

/** The state record as the API and the sender write it, with every index key (docs/data-model.md). */
export function stateRecord(seed: SeedMessage): MessageStateRecord {
  const tenant = seed.tenant ?? 'acme';
  const sendAt = seed.sendAt ?? seed.createdAt;
  const live = !isTerminal(seed.status);
  return {
    pk: messagePk(seed.id),
    sk: ITEM_SORT_KEY.messageState,
    id: seed.id,
    tenant,
    status: seed.status,
    rev: seed.rev ?? 1,
    send_at: sendAt,
    not_after: seed.notAfter ?? null,
    created_at: seed.createdAt,
    updated_at: seed.createdAt,
    attempts: seed.attempts ?? 0,
    last_error: seed.lastError ?? null,
    history: seed.history ?? [],
    group: null,
    on_ambiguous: 'retry',
    tags: seed.tags ?? {},
    metadata: {},
    lst_pk: byStatusPk(tenant, seed.status, seed.id),
    lst_sk: createdSortKey(seed.createdAt, seed.id),
    tnt_pk: byTenantPk(tenant, seed.id),
    tnt_sk: createdSortKey(seed.createdAt, seed.id),
    ...(live ? { due_pk: duePk(seed.id), due_at: seed.dueAt ?? sendAt } : {}),
  };
}

export async function seedMessages(
  documents: DynamoDBDocumentClient,
  tableName: string,
  seeds: readonly SeedMessage[],
): Promise<MessageStateRecord[]> {
  const records = seeds.map(stateRecord);
  const batches = Array.from({ length: Math.ceil(records.length / 25) }, (_, n) =>
    records.slice(n * 25, n * 25 + 25),
  );
  // A few batches at once: DynamoDB Local answers them on threads of its own (3,000 messages took
  // 12 s one batch at a time here, alone, and over 120 s under a loaded run).
  await runWithConcurrency(batches, 4, (batch) =>
    documents.send(
      new BatchWriteCommand({
        RequestItems: { [tableName]: batch.map((record) => ({ PutRequest: { Item: record } })) },
      }),
    ),
  );
  return records;
}

/** A URL-safe id like the API's (26 characters), distinct per `n`. */
export function messageId(n: number): string {
  return `01JQ5${String(n).padStart(21, '0')}`;
}

/**
 * The real entry through the bin shim (`cli/postdate.mjs`), as an operator runs it, with `env` over
 * this process's; never rejects: a failed run answers its exit code and output.
 */
export async function runBin(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  { fromSource = false } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  // `fromSource`: `npx tsx cli/postdate.ts`, as the repository's own `npm run cli` does.
  const [command, entry] = fromSource
    ? ['npx', ['tsx', 'cli/postdate.ts']]
    : [process.execPath, ['cli/postdate.mjs']];
  try {
    const { stdout, stderr } = await promisify(execFile)(command, [...entry, ...args], {
      env: { ...process.env, NO_COLOR: '1', ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      stdout: failed.stdout ?? '',
      stderr: failed.stderr ?? '',
    };
  }
}

let running: Promise<unknown> = Promise.resolve();

/** Lines a local function printed (Powertools' JSON log lines and EMF documents), one JSON object each. */
function isFunctionsOutput(text: string): boolean {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return lines.length > 0 && lines.every((line) => /^\{.*"service":"postdate[-"].*\}\s*$/.test(line));
}

/**
 * The CLI's `main` (cli/postdate.ts) in this process, with `env` over this process's variables and
 * `cwd` as its directory, stdout and stderr captured: what `runBin` answers, without starting a
 * process (a spawn costs about 0.25 s of CPU: node, the bundle, the SDK; decision 0274). For tests
 * of what a command does and prints; what only a process shows (the bin as installed, a signal, a
 * closed pipe, the credential chain of a bare environment) stays with `runBin`. One run at a time:
 * it borrows this process's environment, directory, streams and exit code, and gives them back; what
 * a local stack's functions print meanwhile is passed on, not taken for the CLI's output.
 */
export function runMain(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  { cwd }: { cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const result = running.then(() => runMainNow(args, env, cwd));
  running = result.catch(() => undefined);
  return result;
}

async function runMainNow(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd: string | undefined,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [{ main }, { EXIT }] = await Promise.all([
    import('../../cli/postdate.js'),
    import('../../cli/cliErrors.js'),
  ]);
  const saved = new Map<string, string | undefined>();
  for (const [name, value] of Object.entries({ NO_COLOR: '1', ...env })) {
    saved.set(name, process.env[name]);
    process.env[name] = value;
  }
  const stdout: string[] = [];
  const stderr: string[] = [];
  const streams = { out: process.stdout.write, err: process.stderr.write };
  // A local stack's functions in this process's workers print meanwhile (their JSON logs, their EMF
  // metrics): those lines are not the CLI's, and go on to the stream as it was (a walk's capture).
  const capture = (into: string[], stream: NodeJS.WriteStream, write: typeof process.stdout.write) =>
    ((chunk: string | Uint8Array, ...rest: never[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      if (isFunctionsOutput(text)) return write.call(stream, chunk, ...rest);
      into.push(text);
      return true;
    }) as typeof process.stdout.write;
  const directory = process.cwd();
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  process.stdout.write = capture(stdout, process.stdout, streams.out);
  process.stderr.write = capture(stderr, process.stderr, streams.err);
  let code: number;
  try {
    if (cwd !== undefined) process.chdir(cwd);
    code = await main(args);
  } catch (error) {
    // As runAsProcess (cli/postdate.ts) reports a failure that escaped every handler.
    stderr.push(`postdate: ${error instanceof Error ? error.message : String(error)}\n`);
    code = EXIT.failed;
  } finally {
    process.stdout.write = streams.out;
    process.stderr.write = streams.err;
    process.chdir(directory);
    process.exitCode = exitCode;
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}
