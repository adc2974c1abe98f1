/**
 * `postdate dlq show` and `postdate dlq redrive`: the send queue's dead-letter queue.
 *
 * The DLQ holds `{v, id, rev}` copies whose receives reached POSTDATE_MAX_ATTEMPTS; their records are
 * `dead`. Redriving a copy puts it back on the send queue, where the sender's claim accepts it for a
 * `dead` record with the same rev (docs/data-model.md). A copy whose rev is stale (the message was
 * retried or cancelled since) is dropped by the sender, so redriving never sends twice.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
  UnsupportedOperation,
} from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsDispatchQueue } from '../lambdas/adapters/SqsDispatchQueue.js';
import { type DispatchPayload, parseDispatchPayload } from '../lambdas/core/dispatchPayload.js';
import { readStateRecords } from '../lambdas/store/stateReads.js';
import { CliError, UsageError } from './cliErrors.js';
import {
  type Column,
  formatDuration,
  type Output,
  paint,
  printFields,
  printTable,
  statusTone,
} from './output.js';
import { queueArnOf } from './target.js';

export interface DlqDeps {
  readonly sqs: SQSClient;
  readonly dlqUrl: string;
  readonly now: () => Date;
  /** To show each sampled message's status; optional (the DLQ alone still answers). */
  readonly table?: { readonly documents: DynamoDBDocumentClient; readonly tableName: string };
  /** Long-poll seconds for each receive while scanning; 0 in tests. @default 1 */
  readonly waitSeconds?: number;
  readonly sleep?: (milliseconds: number) => Promise<void>;
}

export interface RedriveDeps extends DlqDeps {
  readonly sendQueueUrl: string;
  /** How often a running move task is polled. @default 1000 */
  readonly pollMilliseconds?: number;
}

// ---------------------------------------------------------------------------------------------- show

export interface DlqSampleEntry {
  readonly id: string | null;
  readonly rev: number | null;
  /** The record's status now, when the table was read (null: no table, or no such record). */
  readonly status: string | null;
  readonly receiveCount: number | null;
  /** Since the copy was first put on the send queue (SQS keeps SentTimestamp across the move). */
  readonly ageMs: number | null;
  readonly sqsMessageId: string | null;
  /** Why the body is not a `{v, id, rev}` payload, when it is not. */
  readonly unreadable: string | null;
}

export interface DlqShowReport {
  readonly queueUrl: string;
  /** Visible copies (ApproximateNumberOfMessages). */
  readonly count: number;
  /** Copies received by someone right now (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
  /** The oldest age among the sampled copies (the exact oldest is CloudWatch's ApproximateAgeOfOldestMessage). */
  readonly oldestSampledAgeMs: number | null;
  readonly sample: readonly DlqSampleEntry[];
}

export interface DlqShowOptions {
  /** How many copies to peek at. @default 10 */
  readonly sample?: number;
  /** How long peeked copies are hidden before they are released again. @default 30 */
  readonly peekSeconds?: number;
}

/**
 * Counts the DLQ and peeks at a sample. SQS cannot peek: a sampled copy is received (hidden for
 * `peekSeconds`, its receive count + 1) and then made visible again at once with
 * ChangeMessageVisibility 0. The receive count of a DLQ copy drives nothing (the DLQ has no redrive
 * policy, and a redriven copy starts a new count on the send queue), but a consumer reading the DLQ
 * at that moment would not see those copies for an instant.
 */
export async function dlqShow(deps: DlqDeps, options: DlqShowOptions, out: Output): Promise<DlqShowReport> {
  const sampleSize = options.sample ?? 10;
  if (!Number.isInteger(sampleSize) || sampleSize < 0 || sampleSize > 100) {
    throw new UsageError('--sample must be a whole number from 0 to 100');
  }
  const counts = await queueCounts(deps.sqs, deps.dlqUrl);
  const received: Message[] = [];
  try {
    while (received.length < sampleSize) {
      const batch = await receive(
        deps,
        Math.min(10, sampleSize - received.length),
        options.peekSeconds ?? 30,
      );
      if (batch.length === 0) break;
      received.push(...batch);
    }
  } finally {
    await release(deps.sqs, deps.dlqUrl, received);
  }
  const now = deps.now().getTime();
  const parsed = received.map((message) => ({ message, payload: parseDispatchPayload(message.Body ?? '') }));
  const statuses = deps.table
    ? await readStatuses(
        deps.table,
        parsed.flatMap((entry) => (entry.payload.ok ? [entry.payload.payload.id] : [])),
      )
    : new Map<string, string>();
  const sample: DlqSampleEntry[] = parsed.map(({ message, payload }) => {
    const sent = Number(message.Attributes?.SentTimestamp);
    const receives = Number(message.Attributes?.ApproximateReceiveCount);
    return {
      id: payload.ok ? payload.payload.id : null,
      rev: payload.ok ? payload.payload.rev : null,
      status: payload.ok ? (statuses.get(payload.payload.id) ?? null) : null,
      receiveCount: Number.isFinite(receives) ? receives : null,
      ageMs: Number.isFinite(sent) ? Math.max(0, now - sent) : null,
      sqsMessageId: message.MessageId ?? null,
      unreadable: payload.ok ? null : payload.reason,
    };
  });
  const ages = sample.flatMap((entry) => (entry.ageMs === null ? [] : [entry.ageMs]));
  const report: DlqShowReport = {
    queueUrl: deps.dlqUrl,
    count: counts.visible,
    inFlight: counts.notVisible,
    oldestSampledAgeMs: ages.length > 0 ? Math.max(...ages) : null,
    sample,
  };
  renderShow(report, out);
  return report;
}

function renderShow(report: DlqShowReport, out: Output): void {
  if (out.json) {
    out.data(report);
    return;
  }
  printFields(out, [
    ['queue', report.queueUrl],
    ['messages', paint(out, report.count > 0 ? 'red' : 'green', String(report.count))],
    ['in flight', String(report.inFlight)],
    [
      'oldest (sampled)',
      report.oldestSampledAgeMs === null ? '-' : formatDuration(report.oldestSampledAgeMs),
    ],
  ]);
  if (report.sample.length === 0) return;
  out.line('');
  const columns: Column<DlqSampleEntry>[] = [
    { header: 'ID', value: (row) => row.id ?? `(unreadable: ${row.unreadable ?? '?'})` },
    { header: 'REV', value: (row) => (row.rev === null ? '-' : String(row.rev)), align: 'right' },
    {
      header: 'STATUS',
      value: (row) => row.status ?? '-',
      tone: (row) => (row.status ? statusTone(row.status) : undefined),
    },
    { header: 'AGE', value: (row) => (row.ageMs === null ? '-' : formatDuration(row.ageMs)), align: 'right' },
    {
      header: 'RECEIVES',
      value: (row) => (row.receiveCount === null ? '-' : String(row.receiveCount)),
      align: 'right',
    },
  ];
  printTable(out, columns, report.sample);
}

// ------------------------------------------------------------------------------------------- redrive

export interface RedriveOptions {
  /** Message ids (the `id` of the `{v, id, rev}` body, not SQS message ids). */
  readonly ids?: readonly string[];
  readonly all?: boolean;
  /** Messages per second. */
  readonly rate?: number;
  readonly dryRun?: boolean;
  /** `--all`: return once the move task has started instead of following it. */
  readonly wait?: boolean;
  /** `--ids`: how long copies are hidden while the DLQ is scanned. @default 300 */
  readonly hideSeconds?: number;
  /** `--ids`: stop after this many copies were looked at. @default 100000 */
  readonly maxScan?: number;
}

export interface SelectiveRedriveReport {
  readonly mode: 'ids';
  readonly dryRun: boolean;
  readonly requested: readonly string[];
  /** Copies moved (or, in a dry run, that would be moved): one per copy found in the DLQ. */
  readonly moved: readonly Pick<DispatchPayload, 'id' | 'rev'>[];
  /** Requested ids with no copy in the DLQ. */
  readonly notFound: readonly string[];
  /** Copies found but not moved because the send queue refused them (they stay in the DLQ). */
  readonly failed: readonly Pick<DispatchPayload, 'id' | 'rev'>[];
  readonly scanned: number;
}

export interface MoveTaskReport {
  readonly mode: 'all';
  readonly dryRun: boolean;
  /** How the move ran: SQS's StartMessageMoveTask, or receive/resend/delete where it is unsupported. */
  readonly method: 'message-move-task' | 'receive-resend-delete';
  readonly status: string;
  readonly toMove: number;
  readonly moved: number;
  readonly failureReason: string | null;
  readonly taskHandle: string | null;
}

export type RedriveReport = SelectiveRedriveReport | MoveTaskReport;

const ID_PATTERN = /^[0-9A-Za-z_-]{1,32}$/;

export async function dlqRedrive(
  deps: RedriveDeps,
  options: RedriveOptions,
  out: Output,
): Promise<RedriveReport> {
  const ids = options.ids ?? [];
  if (ids.length > 0 === (options.all === true)) {
    throw new UsageError('give either --ids <id...> or --all');
  }
  if (
    options.rate !== undefined &&
    (!Number.isFinite(options.rate) || options.rate <= 0 || options.rate > 500)
  ) {
    throw new UsageError('--rate must be a number of messages per second from 1 to 500');
  }
  const bad = ids.filter((id) => !ID_PATTERN.test(id));
  if (bad.length > 0) throw new UsageError(`not a message id: ${bad.join(', ')}`);
  const report = options.all
    ? await redriveAll(deps, options, out)
    : await redriveIds(deps, ids, options, out);
  renderRedrive(report, out);
  return report;
}

/**
 * Moves exactly the copies whose payload id is one of `ids`: receive → SendMessage to the send queue
 * → DeleteMessage from the DLQ, one copy at a time in that order, so a crash in between leaves a
 * duplicate copy (harmless: the sender drops it) and never a lost one. Every other copy received
 * while scanning is hidden until the scan ends and then released with ChangeMessageVisibility 0.
 */
async function redriveIds(
  deps: RedriveDeps,
  ids: readonly string[],
  options: RedriveOptions,
  out: Output,
): Promise<SelectiveRedriveReport> {
  const queue = new SqsDispatchQueue(deps.sqs, deps.sendQueueUrl);
  const pace = pacer(options.rate, deps.sleep);
  const dryRun = options.dryRun === true;
  const failed: Pick<DispatchPayload, 'id' | 'rev'>[] = [];
  const scan = await handleChosen(deps, ids, options, 'moved', out, async (message, copy) => {
    if (dryRun) return 'keep';
    await pace();
    const result = await queue.enqueue([{ payload: copy, delaySeconds: 0 }]);
    if (result.failed.length > 0) {
      failed.push(copy);
      return 'refused';
    }
    await deleteCopies(deps.sqs, deps.dlqUrl, [message]);
    return 'done';
  });
  return {
    mode: 'ids',
    dryRun,
    requested: [...ids],
    moved: scan.handled,
    notFound: scan.notFound,
    failed,
    scanned: scan.scanned,
  };
}

export interface DropReport {
  readonly dryRun: boolean;
  readonly requested: readonly string[];
  /** Copies deleted from the DLQ (or, in a dry run, that would be). */
  readonly dropped: readonly Pick<DispatchPayload, 'id' | 'rev'>[];
  readonly notFound: readonly string[];
  readonly scanned: number;
}

/**
 * Deletes the chosen ids' copies from the DLQ without sending them: for messages an operator has
 * decided must not go out. Their records stay `dead` (terminal; they expire with the retention).
 */
export async function dlqDrop(
  deps: DlqDeps,
  options: { ids: readonly string[]; dryRun?: boolean; hideSeconds?: number; maxScan?: number },
  out: Output,
): Promise<DropReport> {
  if (options.ids.length === 0) throw new UsageError('give the ids to drop with --ids <id...>');
  const bad = options.ids.filter((id) => !ID_PATTERN.test(id));
  if (bad.length > 0) throw new UsageError(`not a message id: ${bad.join(', ')}`);
  const dryRun = options.dryRun === true;
  const scan = await handleChosen(deps, options.ids, options, 'dropped', out, async (message) => {
    if (dryRun) return 'keep';
    await deleteCopies(deps.sqs, deps.dlqUrl, [message]);
    return 'done';
  });
  const report: DropReport = {
    dryRun,
    requested: [...options.ids],
    dropped: scan.handled,
    notFound: scan.notFound,
    scanned: scan.scanned,
  };
  if (out.json) {
    out.data(report);
  } else {
    out.line(
      `${dryRun ? 'would drop' : 'dropped'} ${report.dropped.length} of ${report.requested.length} requested messages (scanned ${report.scanned}); their records stay dead`,
    );
    if (report.notFound.length > 0)
      out.warn(paint(out, 'red', `not in the DLQ: ${report.notFound.join(', ')}`));
  }
  return report;
}

/**
 * Scans the DLQ for the copies whose payload id is one of `ids` and hands each to `handle`, one at a
 * time: `done` (it took the copy off the DLQ), `keep` (dry run: leave it) or `refused` (leave it,
 * the handler recorded why). Every other copy received while scanning stays hidden until the scan
 * ends (so it is not received twice) and is then released with ChangeMessageVisibility 0. The scan
 * stops once every id was found, at an empty receive, or after `maxScan` copies.
 */
async function handleChosen(
  deps: DlqDeps,
  ids: readonly string[],
  options: { hideSeconds?: number; maxScan?: number },
  verb: string,
  out: Output,
  handle: (
    message: Message,
    copy: Pick<DispatchPayload, 'id' | 'rev'>,
  ) => Promise<'done' | 'keep' | 'refused'>,
): Promise<{ handled: Pick<DispatchPayload, 'id' | 'rev'>[]; notFound: string[]; scanned: number }> {
  const wanted = new Set(ids);
  const found = new Set<string>();
  const handled: Pick<DispatchPayload, 'id' | 'rev'>[] = [];
  const held: Message[] = [];
  const maxScan = options.maxScan ?? 100_000;
  let scanned = 0;
  try {
    while (found.size < wanted.size && scanned < maxScan) {
      const batch = await receive(deps, 10, options.hideSeconds ?? 300);
      if (batch.length === 0) break;
      scanned += batch.length;
      for (const message of batch) {
        const parsed = parseDispatchPayload(message.Body ?? '');
        if (!parsed.ok || !wanted.has(parsed.payload.id)) {
          held.push(message);
          continue;
        }
        found.add(parsed.payload.id);
        const copy = { id: parsed.payload.id, rev: parsed.payload.rev };
        const outcome = await handle(message, copy);
        if (outcome !== 'done') held.push(message);
        if (outcome !== 'refused') handled.push(copy);
        out.progress(verb, found.size, wanted.size);
      }
    }
  } finally {
    await release(deps.sqs, deps.dlqUrl, held);
  }
  return { handled, notFound: ids.filter((id) => !found.has(id)), scanned };
}

/**
 * Moves every copy with SQS's own StartMessageMoveTask (DLQ → send queue, at `rate` per second) and
 * follows it until it ends, drawing a progress bar on a TTY. Where the service answers that the
 * operation is unsupported (an emulator), it falls back to receive/resend/delete of every copy and
 * says so in the report's `method`.
 */
async function redriveAll(deps: RedriveDeps, options: RedriveOptions, out: Output): Promise<MoveTaskReport> {
  const counts = await queueCounts(deps.sqs, deps.dlqUrl);
  if (options.dryRun) {
    return {
      mode: 'all',
      dryRun: true,
      method: 'message-move-task',
      status: 'DRY_RUN',
      toMove: counts.visible,
      moved: 0,
      failureReason: null,
      taskHandle: null,
    };
  }
  const sourceArn = await queueArnOf(deps.sqs, deps.dlqUrl);
  const destinationArn = await queueArnOf(deps.sqs, deps.sendQueueUrl);
  let taskHandle: string | undefined;
  try {
    const started = await deps.sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: sourceArn,
        DestinationArn: destinationArn,
        ...(options.rate !== undefined ? { MaxNumberOfMessagesPerSecond: Math.floor(options.rate) } : {}),
      }),
    );
    taskHandle = started.TaskHandle;
  } catch (error) {
    if (!(error instanceof UnsupportedOperation)) throw error;
    out.warn('StartMessageMoveTask is not supported here: moving every copy by receive/resend/delete');
    return moveEveryCopy(deps, options, counts.visible, out);
  }
  const sleep = deps.sleep ?? defaultSleep;
  for (;;) {
    const { Results } = await deps.sqs.send(
      new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }),
    );
    const task = Results?.[0];
    const status = task?.Status ?? 'UNKNOWN';
    const moved = task?.ApproximateNumberOfMessagesMoved ?? 0;
    const toMove = task?.ApproximateNumberOfMessagesToMove ?? counts.visible;
    out.progress('moved', moved, toMove);
    if (status !== 'RUNNING' || options.wait === false) {
      return {
        mode: 'all',
        dryRun: false,
        method: 'message-move-task',
        status,
        toMove,
        moved,
        failureReason: task?.FailureReason ?? null,
        taskHandle: taskHandle ?? null,
      };
    }
    await sleep(deps.pollMilliseconds ?? 1000);
  }
}

async function moveEveryCopy(
  deps: RedriveDeps,
  options: RedriveOptions,
  toMove: number,
  out: Output,
): Promise<MoveTaskReport> {
  const queue = new SqsDispatchQueue(deps.sqs, deps.sendQueueUrl);
  const pace = pacer(options.rate, deps.sleep);
  const held: Message[] = [];
  let moved = 0;
  try {
    for (;;) {
      const batch = await receive(deps, 10, options.hideSeconds ?? 300);
      if (batch.length === 0) break;
      for (const message of batch) {
        const parsed = parseDispatchPayload(message.Body ?? '');
        if (!parsed.ok) {
          held.push(message);
          continue;
        }
        await pace();
        const result = await queue.enqueue([{ payload: parsed.payload, delaySeconds: 0 }]);
        if (result.failed.length > 0) {
          held.push(message);
          continue;
        }
        await deleteCopies(deps.sqs, deps.dlqUrl, [message]);
        moved++;
        out.progress('moved', moved, toMove);
      }
    }
  } finally {
    await release(deps.sqs, deps.dlqUrl, held);
  }
  return {
    mode: 'all',
    dryRun: false,
    method: 'receive-resend-delete',
    status: held.length === 0 ? 'COMPLETED' : 'PARTIAL',
    toMove,
    moved,
    failureReason: held.length === 0 ? null : `${held.length} copies were unreadable or refused and stay`,
    taskHandle: null,
  };
}

function renderRedrive(report: RedriveReport, out: Output): void {
  if (out.json) {
    out.data(report);
    return;
  }
  const verb = report.dryRun ? 'would move' : 'moved';
  if (report.mode === 'all') {
    if (report.dryRun) {
      out.line(`dry run: ${report.toMove} messages would be moved from the DLQ to the send queue`);
      return;
    }
    const tone = report.status === 'COMPLETED' ? 'green' : report.status === 'RUNNING' ? 'yellow' : 'red';
    out.line(
      `${paint(out, tone, report.status)}: ${report.moved} of ${report.toMove} messages moved to the send queue (${report.method})`,
    );
    if (report.status === 'RUNNING') {
      out.line('the move task keeps running; `postdate dlq show` reports what is left');
    }
    if (report.failureReason) out.warn(`reason: ${report.failureReason}`);
    return;
  }
  out.line(
    `${verb} ${report.moved.length} of ${report.requested.length} requested messages (scanned ${report.scanned})`,
  );
  printTable(
    out,
    [
      { header: 'ID', value: (row: Pick<DispatchPayload, 'id' | 'rev'>) => row.id },
      { header: 'REV', value: (row) => String(row.rev), align: 'right' },
    ],
    report.moved,
  );
  if (report.notFound.length > 0) {
    out.warn(paint(out, 'red', `not in the DLQ: ${report.notFound.join(', ')}`));
  }
  if (report.failed.length > 0) {
    out.warn(paint(out, 'red', `the send queue refused: ${report.failed.map((copy) => copy.id).join(', ')}`));
  }
}

/** Whether a redrive did all it was asked (the entry point's exit code). */
export function redriveSucceeded(report: RedriveReport): boolean {
  if (report.mode === 'all')
    return report.dryRun || report.status === 'COMPLETED' || report.status === 'RUNNING';
  return report.notFound.length === 0 && report.failed.length === 0;
}

// ------------------------------------------------------------------------------------------- helpers

async function queueCounts(
  sqs: SQSClient,
  queueUrl: string,
): Promise<{ visible: number; notVisible: number }> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(Attributes?.ApproximateNumberOfMessages ?? 0),
    notVisible: Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

async function receive(deps: DlqDeps, max: number, hideSeconds: number): Promise<Message[]> {
  const { Messages } = await deps.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: deps.dlqUrl,
      MaxNumberOfMessages: max,
      VisibilityTimeout: hideSeconds,
      WaitTimeSeconds: deps.waitSeconds ?? 1,
      MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
      // The SQS emulator (local-aws-sqs 2.0.2) reads only the older parameter name.
      AttributeNames: ['All'],
    }),
  );
  return Messages ?? [];
}

/** Makes received copies visible again at once (ChangeMessageVisibility 0), ten per request. */
async function release(sqs: SQSClient, queueUrl: string, messages: readonly Message[]): Promise<void> {
  const handles = messages.flatMap((message) => (message.ReceiptHandle ? [message.ReceiptHandle] : []));
  for (let start = 0; start < handles.length; start += 10) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: handles.slice(start, start + 10).map((handle, i) => ({
          Id: String(i),
          ReceiptHandle: handle,
          VisibilityTimeout: 0,
        })),
      }),
    );
  }
}

async function deleteCopies(sqs: SQSClient, queueUrl: string, messages: readonly Message[]): Promise<void> {
  const entries = messages.flatMap((message, i) =>
    message.ReceiptHandle ? [{ Id: String(i), ReceiptHandle: message.ReceiptHandle }] : [],
  );
  if (entries.length === 0) return;
  const result = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
  if ((result.Failed ?? []).length > 0) {
    // The copy is on the send queue already; the one left in the DLQ is a harmless duplicate.
    throw new CliError('SQS refused to delete a redriven copy from the DLQ; it stays there as a duplicate');
  }
}

async function readStatuses(
  table: NonNullable<DlqDeps['table']>,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const states = await readStateRecords(table.documents, table.tableName, ids);
  return new Map([...states].map(([id, state]) => [id, state.status]));
}

/** A wait before each send so that at most `rate` go out per second; no wait without a rate. */
function pacer(
  rate: number | undefined,
  sleep: ((ms: number) => Promise<void>) | undefined,
): () => Promise<void> {
  if (rate === undefined) return async () => {};
  const interval = 1000 / rate;
  const wait = sleep ?? defaultSleep;
  let next = 0;
  return async () => {
    const now = Date.now();
    if (next > now) await wait(next - now);
    next = Math.max(now, next) + interval;
  };
}

function defaultSleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
