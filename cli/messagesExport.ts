/**
 * `postdate messages export --since … --until … [--status …] [--with-bodies]` (DESIGN §6): every
 * message created in a time range, as JSON Lines, oldest first — its state, its attempts with the
 * relay's replies, and with `--with-bodies` its content. For audits, and for recovery after a
 * disaster together with DynamoDB's point-in-time recovery (docs/recovery.md).
 *
 * It reads through the indexes (never a table scan): `by_tenant` (several statuses: filtered on the
 * record), or `by_status` for one status, whose sort key `{created_at}#{id}` makes the range one key condition per shard; the shards are merged in
 * order, and the records read in batches of 100. A first pass counts the range (keys only, a few
 * read units) so the progress bar has a total.
 *
 * Without `--with-bodies` a line carries no address (the state record holds none; stored replies
 * are redacted). With it, the body's recipients and content are in the file (a template message's
 * `data` too): treat it as personal data.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { StoredAttachment } from '../lambdas/core/attachments.js';
import { retentionRanOut } from '../lambdas/core/messageLifetime.js';
import type { MessageStatus } from '../lambdas/core/messageStatus.js';
import type { PinnedTemplate } from '../lambdas/core/templateRequests.js';
import { batchGetItems } from '../lambdas/store/batchGetItems.js';
import { bodyOfStoredItem, inlineBodyOf } from '../lambdas/store/bodyContent.js';
import {
  byStatusShardPk,
  byTenantShardPk,
  idOfCreatedSortKey,
  isMessageBodyRecord,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
} from '../lambdas/store/messageRecord.js';
import { type MessageView, messageView } from '../lambdas/store/messageView.js';
import { readStateRecords } from '../lambdas/store/stateReads.js';
import {
  INDEX,
  INDEX_SHARDS,
  type IndexDefinition,
  ITEM_SORT_KEY,
  KEY,
} from '../lambdas/store/tableLayout.js';
import { UsageError } from './cliErrors.js';
import { parseSince, statusOf } from './messagesCommands.js';
import type { Output } from './output.js';

export interface ExportDeps {
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now: () => Date;
  /** The tenants to look in when `--tenant` is not given (every tenant that has an API key). */
  readonly tenants: () => Promise<readonly string[]>;
}

export interface ExportOptions {
  /** Created at or after (ISO, or `30m` / `6h` / `2d` ago). */
  readonly since: string;
  /** Created before (ISO or relative). @default now */
  readonly until?: string;
  /** One status or several, comma-separated. @default every status */
  readonly status?: string;
  readonly tenant?: string;
  readonly withBodies?: boolean;
}

/** Where the lines go: stdout or a file; `write` resolves when the sink can take more. */
export interface LineSink {
  write(line: string): Promise<void>;
}

export interface ExportReport {
  readonly since: string;
  readonly until: string;
  readonly statuses: readonly MessageStatus[] | null;
  readonly tenants: readonly string[];
  /** Lines written. */
  readonly exported: number;
  /** Listed by the index but gone (or of another status) when read: deleted by TTL, or moved on. */
  readonly skipped: number;
}

/**
 * One line of the export: the state record's own fields as stored (the history with redacted replies
 * and the relay's ids, the template's pin, the attachments with their keys in the bucket), the
 * optional ones made explicit nulls, and the recipient counts as the API's view gives them.
 */
export type ExportedMessage = Pick<
  MessageStateRecord,
  | 'id'
  | 'tenant'
  | 'status'
  | 'rev'
  | 'send_at'
  | 'not_after'
  | 'created_at'
  | 'updated_at'
  | 'attempts'
  | 'last_error'
  | 'on_ambiguous'
  | 'group'
  | 'tags'
  | 'metadata'
  | 'history'
> & {
  readonly sent_at: string | null;
  readonly provider_message_id: string | null;
  /** The relay that id comes from (DESIGN §15). */
  readonly relay: string | null;
  /** The API's own counts (store/messageView.ts): accepted, pending, rejected, suppressed. */
  readonly recipients: MessageView['recipients'];
  /** A template message's template and pinned version (DESIGN §10); null for an inline one. */
  readonly template: PinnedTemplate | null;
  readonly attachments: readonly StoredAttachment[];
  /** Only with `--with-bodies`; null when the body is gone (its TTL passed). */
  readonly body?: ExportedBody | null;
};

/**
 * The body's envelope and content as stored (text and html read back from either stored form); a
 * template message's subject, text and html are empty (rendered at send time) and its `data` is here.
 */
export type ExportedBody = Pick<
  MessageBodyRecord,
  'from' | 'to' | 'cc' | 'bcc' | 'reply_to' | 'subject' | 'text' | 'html' | 'headers'
> & {
  /** A template message's data (its stored JSON, which JSON gives back as it was: decision 0156). */
  readonly data: unknown;
};

/** Records read per batch (BatchGetItem's limit) and index entries per query page. */
const BATCH = 100;

export async function messagesExport(
  deps: ExportDeps,
  options: ExportOptions,
  sink: LineSink,
  out: Output,
): Promise<ExportReport> {
  const now = deps.now();
  const since = parseSince(options.since, now);
  const until = options.until === undefined ? now.toISOString() : parseUntil(options.until, now);
  if (until <= since) throw new UsageError(`--until (${until}) must be after --since (${since})`);
  const statuses = parseStatuses(options.status);
  const tenants = options.tenant !== undefined ? [options.tenant] : [...(await deps.tenants())].sort();
  const partitions = tenants.flatMap((tenant) => partitionsOf(tenant, statuses));

  const total = (
    await Promise.all(partitions.map((partition) => countRange(deps, partition, since, until)))
  ).reduce((sum, count) => sum + count, 0);
  let exported = 0;
  let skipped = 0;
  let listed = 0;
  out.progress('exporting', 0, total);
  // Tenant by tenant, each one's partitions merged into one stream ordered by (created_at, id).
  for (const tenant of tenants) {
    const streams = partitionsOf(tenant, statuses).map((partition) =>
      rangeKeys(deps, partition, since, until),
    );
    for await (const ids of batches(mergeAscending(streams), BATCH)) {
      const read = await readStateRecords(deps.documents, deps.tableName, ids);
      // One past its retention is gone, as the API answers, whenever DynamoDB deletes it (decision 0205).
      const states = new Map([...read].filter(([, state]) => !retentionRanOut(state.expires_at, now)));
      // Bodies only of the records that are exported: a several-status read lists every status.
      const wanted = ids.filter((id) => {
        const state = states.get(id);
        return state !== undefined && (statuses === null || statuses.includes(state.status));
      });
      const bodies = options.withBodies === true ? await readBodies(deps, wanted, states) : undefined;
      for (const id of ids) {
        const state = states.get(id);
        // The index is eventually consistent: a record gone (TTL) or of another status is not exported.
        if (state === undefined || state.tenant !== tenant) {
          skipped++;
          continue;
        }
        if (statuses !== null && !statuses.includes(state.status)) {
          // Read from `by_tenant`, any status is listed; from `by_status`, this one moved on.
          if (statuses.length === 1) skipped++;
          continue;
        }
        await sink.write(JSON.stringify(exportedMessage(state, bodies)));
        exported++;
      }
      listed += ids.length;
      out.progress('exporting', listed, Math.max(total, listed));
    }
  }
  const report: ExportReport = { since, until, statuses, tenants, exported, skipped };
  // stderr: stdout carries the lines. On a terminal the bar has shown the way; this is the last word.
  out.warn(
    `exported ${exported} message${exported === 1 ? '' : 's'} created in [${since}, ${until})` +
      (skipped > 0 ? `; ${skipped} listed by the index were gone or had moved on when read` : ''),
  );
  return report;
}

function parseUntil(value: string, now: Date): string {
  try {
    return parseSince(value, now);
  } catch {
    throw new UsageError(`--until: "${value}" is neither an ISO time nor like 30m, 6h, 2d`);
  }
}

/**
 * The lines' destination: a file (created or truncated) or stdout, and how many lines it holds.
 * stdout's writes wait for the stream to drain, so a large export piped into a slow consumer does not
 * pile up in memory. A file's are synchronous, each line whole before the next: a run interrupted at
 * any moment (SIGINT, SIGTERM: the process exits from the signal's handler) leaves every line counted
 * in the file and no half line, where a stream's lines still queued were lost (decision 0248).
 */
export function openLineSink(path: string | undefined): {
  sink: LineSink;
  /** Lines handed whole to the file (or to stdout) so far. */
  written(): number;
  close(): Promise<void>;
} {
  let written = 0;
  if (path !== undefined) {
    const file = openSync(path, 'w');
    return {
      sink: {
        async write(line) {
          const bytes = Buffer.from(`${line}\n`);
          for (let at = 0; at < bytes.length; ) at += writeSync(file, bytes, at);
          written++;
        },
      },
      written: () => written,
      close: async () => closeSync(file),
    };
  }
  // Removed at close: a caller that runs main in its own process (the tests) runs many commands.
  let onError: (error: Error) => void = () => {};
  const failed = new Promise<never>((_, reject) => {
    onError = reject;
  });
  failed.catch(() => {});
  process.stdout.once('error', onError);
  return {
    sink: {
      async write(line) {
        const more = process.stdout.write(`${line}\n`);
        written++;
        if (!more) {
          await Promise.race([new Promise((resolve) => process.stdout.once('drain', resolve)), failed]);
        }
      },
    },
    written: () => written,
    close: async () => {
      process.stdout.off('error', onError);
    },
  };
}

function parseStatuses(value: string | undefined): readonly MessageStatus[] | null {
  if (value === undefined) return null;
  const statuses = value
    .split(',')
    .map((status) => status.trim())
    .filter((status) => status !== '');
  if (statuses.length === 0) throw new UsageError('--status needs at least one status');
  return [...new Set(statuses.map(statusOf))];
}

interface Partition {
  readonly index: IndexDefinition;
  readonly key: string;
}

/**
 * The index partitions that hold a tenant's messages (of some statuses): one per shard. Several
 * statuses are read from `by_tenant`, whose entries never move, and filtered on the record: a message
 * moving between two listed statuses while `by_status` partitions were merged would be listed twice,
 * or not at all. One status is its own `by_status` partitions (a message leaves or joins them, once).
 */
function partitionsOf(tenant: string, statuses: readonly MessageStatus[] | null): Partition[] {
  if (statuses === null || statuses.length > 1) {
    return Array.from({ length: INDEX_SHARDS.byTenant }, (_, shard) => ({
      index: INDEX.byTenant,
      key: byTenantShardPk(tenant, shard),
    }));
  }
  return statuses.flatMap((status) =>
    Array.from({ length: INDEX_SHARDS.byStatus }, (_, shard) => ({
      index: INDEX.byStatus,
      key: byStatusShardPk(tenant, status, shard),
    })),
  );
}

/**
 * `{created_at}#{id}` BETWEEN since AND until is created_at in [since, until): a key always has
 * `#id` after the time, so a key created exactly at `until` sorts after `until` itself.
 */
function rangeQuery(deps: ExportDeps, partition: Partition, since: string, until: string) {
  return {
    TableName: deps.tableName,
    IndexName: partition.index.indexName,
    KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :since AND :until',
    ExpressionAttributeNames: { '#pk': partition.index.partitionKey, '#sk': partition.index.sortKey },
    ExpressionAttributeValues: { ':pk': partition.key, ':since': since, ':until': until },
  };
}

async function countRange(
  deps: ExportDeps,
  partition: Partition,
  since: string,
  until: string,
): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.documents.send(
      new QueryCommand({
        ...rangeQuery(deps, partition, since, until),
        Select: 'COUNT',
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return count;
}

/** The sort keys of one partition in the range, ascending, a page at a time. */
async function* rangeKeys(
  deps: ExportDeps,
  partition: Partition,
  since: string,
  until: string,
): AsyncGenerator<string> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.documents.send(
      new QueryCommand({
        ...rangeQuery(deps, partition, since, until),
        ScanIndexForward: true,
        Limit: BATCH,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const key = item[partition.index.sortKey];
      if (typeof key === 'string') yield key;
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
}

/** Merges ascending streams of sort keys into one ascending stream of ids (a k-way merge). */
export async function* mergeAscending(streams: readonly AsyncIterator<string>[]): AsyncGenerator<string> {
  const heads = await Promise.all(streams.map((stream) => stream.next()));
  for (;;) {
    let smallest = -1;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i];
      if (head === undefined || head.done) continue;
      const best = heads[smallest];
      if (smallest < 0 || (best !== undefined && !best.done && head.value < best.value)) smallest = i;
    }
    if (smallest < 0) return;
    const head = heads[smallest] as IteratorYieldResult<string>;
    yield idOfCreatedSortKey(head.value);
    heads[smallest] = await (streams[smallest] as AsyncIterator<string>).next();
  }
}

async function* batches<T>(items: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let batch: T[] = [];
  for await (const item of items) {
    batch.push(item);
    if (batch.length === size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

async function readBodies(
  deps: ExportDeps,
  ids: readonly string[],
  states: ReadonlyMap<string, MessageStateRecord>,
): Promise<Map<string, MessageBodyRecord>> {
  const bodies = new Map<string, MessageBodyRecord>();
  // A small message's body is inside its state record (docs/data-model.md); the others are items.
  const separate: string[] = [];
  for (const id of ids) {
    const state = states.get(id);
    const inline = state === undefined ? undefined : inlineBodyOf(state);
    if (inline === undefined) separate.push(id);
    else bodies.set(messagePk(id), inline);
  }
  const items = await batchGetItems(
    deps.documents,
    deps.tableName,
    separate.map((id) => ({ [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody })),
  );
  for (const item of items) {
    const pk = item[KEY.partition];
    const body = typeof pk === 'string' ? bodyOfStoredItem(item, pk) : undefined;
    if (isMessageBodyRecord(body) && typeof pk === 'string') bodies.set(pk, body);
  }
  return bodies;
}

function exportedMessage(
  state: MessageStateRecord,
  bodies: Map<string, MessageBodyRecord> | undefined,
): ExportedMessage {
  const view = messageView(state, { withHistory: false });
  const line: ExportedMessage = {
    id: state.id,
    tenant: state.tenant,
    status: state.status,
    rev: state.rev,
    send_at: state.send_at,
    not_after: state.not_after ?? null,
    created_at: state.created_at,
    updated_at: state.updated_at,
    sent_at: state.sent_at ?? null,
    attempts: state.attempts ?? 0,
    last_error: state.last_error ?? null,
    provider_message_id: state.provider_message_id ?? null,
    relay: state.relay ?? null,
    recipients: view.recipients,
    template: view.template,
    attachments: state.attachments ?? [],
    on_ambiguous: state.on_ambiguous,
    group: state.group ?? null,
    tags: state.tags ?? {},
    metadata: state.metadata ?? {},
    history: state.history ?? [],
  };
  if (bodies === undefined) return line;
  const body = bodies.get(messagePk(state.id));
  return {
    ...line,
    body:
      body === undefined
        ? null
        : {
            from: body.from,
            to: body.to,
            cc: body.cc ?? [],
            bcc: body.bcc ?? [],
            reply_to: body.reply_to ?? null,
            subject: body.subject,
            text: body.text ?? null,
            html: body.html ?? null,
            headers: body.headers ?? {},
            data: body.data_json === undefined ? null : JSON.parse(body.data_json),
          },
  };
}
