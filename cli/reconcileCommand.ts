/**
 * `postdate reconcile`: does every accepted message have a truthful place? For each tenant and a
 * window of creation times it counts, through the indexes only (never a table scan):
 *
 * - **accepted**: messages created in the window (the `by_tenant` index, written once per message),
 *   less the gone, as every read says (0205): a record past its retention DynamoDB has not deleted yet,
 *   or an id without a record created more than the retention ago, which the index names a moment
 *   after DynamoDB deleted its record (core/messageLifetime.ts `mayBeDeleted`, decision 0212);
 * - their state records' statuses, grouped as **pending** (`scheduled`), **in flight** (`sending`,
 *   `retrying`), **dispatched** (reached a sender: in flight + `sent`, `failed`, `dead`, `unknown`)
 *   and **terminal** (every terminal status), overall, per tenant and per tag;
 * - an **index check**: the `by_status` index's entries for each status, less the gone ids', against
 *   the records' own statuses, and accepted ids whose record is missing (a younger id without one);
 * - the **stuck** list from the sparse `due` index: non-terminal messages overdue by more than the
 *   sweep grace (the sweeper re-dispatches these; a message listed twice in a row is really stuck);
 * - **sending**: whether any relay takes mail (every relay's breaker and drain, as `relays status`
 *   decides it) and the operator's pauses. While no relay takes mail or a pause holds its kind, a
 *   waiting message is overdue by design: it is listed as **held**, not stuck, by the sweeper's own
 *   rule (core/sweepDecision.ts `sendersHold`), and only a stuck one makes reconcile exit 1.
 */
import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mayBeDeleted, retentionRanOut } from '../lambdas/core/messageLifetime.js';
import { isTerminal, MESSAGE_STATUSES, type MessageStatus } from '../lambdas/core/messageStatus.js';
import { runWithConcurrency } from '../lambdas/core/runWithConcurrency.js';
import { overdueSinceMs, type SendersHold, sendersHold } from '../lambdas/core/sweepDecision.js';
import type { DueCursor, DueEntry, DueIndex } from '../lambdas/ports/DueIndex.js';
import { BATCH_GET_LIMIT } from '../lambdas/store/batchGetItems.js';
import type { MessageStateRecord } from '../lambdas/store/messageRecord.js';
import {
  byStatusShardPk,
  byTenantShardPk,
  createdAtOfSortKey,
  idOfCreatedSortKey,
} from '../lambdas/store/messageRecord.js';
import { readStateRecords } from '../lambdas/store/stateReads.js';
import { INDEX, INDEX_SHARDS, type IndexDefinition } from '../lambdas/store/tableLayout.js';
import { UsageError } from './cliErrors.js';
import { parseSince } from './messagesCommands.js';
import {
  type Column,
  formatDuration,
  type Output,
  paint,
  printFields,
  printTable,
  statusTone,
} from './output.js';
import type { RelaysDeps } from './relaysCommands.js';
import { readSending, render as renderSending, type SendingStatus } from './sendingCommands.js';

export interface ReconcileDeps {
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly dueIndex: DueIndex;
  readonly now: () => Date;
  readonly tenants: () => Promise<readonly string[]>;
  /** POSTDATE_SWEEP_GRACE_SECONDS: how overdue a message must be to count as stuck. */
  readonly graceSeconds: number;
  /** POSTDATE_RETENTION_DAYS: an id without a record created longer ago is gone, not missing. */
  readonly retentionDays: number;
  /** Every configured relay (DESIGN §15): sending is unavailable only when none takes mail. */
  readonly relays: RelaysDeps;
}

export interface ReconcileOptions {
  /** ISO time or relative (`24h`). @default 24h */
  readonly since?: string;
  readonly tenant?: string;
}

export type StatusCounts = Readonly<Record<MessageStatus, number>>;

export interface Tally {
  readonly accepted: number;
  readonly pending: number;
  readonly inFlight: number;
  readonly dispatched: number;
  readonly terminal: number;
  readonly byStatus: StatusCounts;
}

export interface StuckMessage {
  readonly id: string;
  readonly tenant: string | null;
  readonly status: MessageStatus;
  readonly rev: number;
  readonly dueAt: string;
  readonly overdueMs: number;
}

/** An overdue message the senders hold on purpose (the sweeper skips it): why. */
export interface HeldMessage extends StuckMessage {
  readonly heldBy: SendersHold;
}

export interface ReconcileReport {
  readonly since: string;
  readonly now: string;
  readonly tenants: readonly string[];
  readonly graceSeconds: number;
  readonly totals: Tally;
  readonly byTenant: Readonly<Record<string, Tally>>;
  /** One entry per `key=value` tag seen in the window. */
  readonly byTag: Readonly<Record<string, Tally>>;
  readonly indexCheck: {
    readonly consistent: boolean;
    /** Where `by_status` disagrees with the records (index lag right after traffic, or a bad writer). */
    readonly mismatches: readonly { tenant: string; status: MessageStatus; records: number; index: number }[];
    /** Ids in `by_tenant` without a state record, created less than the retention ago. */
    readonly missingRecords: readonly string[];
  };
  readonly stuck: readonly StuckMessage[];
  /** Overdue beyond the grace too, but held by a pause or while no relay takes mail: not stuck. */
  readonly held: readonly HeldMessage[];
  /** The relays and the pauses, as the senders see them (`sending status`'s one reading). */
  readonly sending: SendingStatus;
}

const DISPATCHED: ReadonlySet<MessageStatus> = new Set([
  'sending',
  'retrying',
  'sent',
  'failed',
  'dead',
  'unknown',
] satisfies MessageStatus[]);

export async function reconcile(
  deps: ReconcileDeps,
  options: ReconcileOptions,
  out: Output,
): Promise<ReconcileReport> {
  const now = deps.now();
  const since = parseSince(options.since ?? '24h', now);
  if (since > now.toISOString()) throw new UsageError('--since is in the future');
  const tenants = options.tenant !== undefined ? [options.tenant] : [...(await deps.tenants())].sort();

  const totals = new TallyBuilder();
  const byTenant: Record<string, Tally> = {};
  const byTag = new Map<string, TallyBuilder>();
  const mismatches: { tenant: string; status: MessageStatus; records: number; index: number }[] = [];
  const missingRecords: string[] = [];
  const tenantOf = new Map<string, string>();

  // Every tenant's ids first (index queries, quick), so the bar has a total; reading the records,
  // one consistent BatchGet per 100, is what takes the time (12.8 s for 2,008 locally, decision 0268).
  const acceptedOf = new Map<string, { id: string; createdAt: string }[]>();
  for (const tenant of tenants) acceptedOf.set(tenant, await acceptedIds(deps, tenant, since));
  const total = [...acceptedOf.values()].reduce((sum, accepted) => sum + accepted.length, 0);
  let counted = 0;
  out.progress(COUNTED, counted, total);

  for (const tenant of tenants) {
    const accepted = acceptedOf.get(tenant) ?? [];
    const states = new Map<string, MessageStateRecord>();
    for (let start = 0; start < accepted.length; start += BATCH_GET_LIMIT) {
      const ids = accepted.slice(start, start + BATCH_GET_LIMIT).map(({ id }) => id);
      const read = await readStateRecords(deps.documents, deps.tableName, ids, { consistentRead: true });
      for (const [id, state] of read) states.set(id, state);
      counted += ids.length;
      out.progress(COUNTED, counted, total);
    }
    const tally = new TallyBuilder();
    // Gone, as every read says (decision 0205): a record past its retention still in the table, or
    // one DynamoDB deleted that the indexes still name for a moment (decision 0212).
    const gone = new Set<string>();
    for (const { id, createdAt } of accepted) {
      const state = states.get(id);
      if (state === undefined) {
        if (mayBeDeleted(createdAt, now, deps.retentionDays)) {
          gone.add(id);
          continue;
        }
        missingRecords.push(id);
        tally.accept(null);
        totals.accept(null);
        continue;
      }
      if (retentionRanOut(state.expires_at, now)) {
        gone.add(id);
        continue;
      }
      tenantOf.set(id, tenant);
      tally.accept(state.status);
      totals.accept(state.status);
      for (const [key, value] of Object.entries(state.tags ?? {})) {
        const tag = `${key}=${value}`;
        const builder = byTag.get(tag) ?? new TallyBuilder();
        builder.accept(state.status);
        byTag.set(tag, builder);
      }
    }
    byTenant[tenant] = tally.build();
    const indexed = await statusIndexIds(deps, tenant, since);
    for (const status of MESSAGE_STATUSES) {
      const records = tally.count(status);
      // The index names the gone too, by id (its KEYS_ONLY projection has no `expires_at` to filter
      // on, decision 0208; a deleted record's status is unknown, decision 0212).
      const index = indexed[status].filter((id) => !gone.has(id)).length;
      if (records !== index) mismatches.push({ tenant, status, records, index });
    }
  }

  const sending = await readSending({ relays: deps.relays });
  const { stuck, held } = await overdueMessages(deps, now, tenants, options.tenant !== undefined, sending);
  const report: ReconcileReport = {
    since,
    now: now.toISOString(),
    tenants,
    graceSeconds: deps.graceSeconds,
    totals: totals.build(),
    byTenant,
    byTag: Object.fromEntries(
      [...byTag.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([tag, b]) => [tag, b.build()]),
    ),
    indexCheck: {
      consistent: mismatches.length === 0 && missingRecords.length === 0,
      mismatches,
      missingRecords,
    },
    stuck,
    held,
    sending,
  };
  render(report, out, options.tenant === undefined);
  return report;
}

/**
 * Whether reconcile found nothing to act on (the entry point's exit code). No relay taking mail is
 * something to act on (every relay is down or disabled); one relay failed over to another is not, as
 * the senders see it; a pause is the operator's own doing.
 */
export function reconcileClean(report: ReconcileReport): boolean {
  return report.stuck.length === 0 && report.indexCheck.consistent && report.sending.available;
}

// ------------------------------------------------------------------------------------------- reading

/** The tenant's messages created at or after `since`: `by_tenant`, one query per shard. */
async function acceptedIds(
  deps: ReconcileDeps,
  tenant: string,
  since: string,
): Promise<{ id: string; createdAt: string }[]> {
  const shards = Array.from({ length: INDEX_SHARDS.byTenant }, (_, shard) => shard);
  const perShard = await runWithConcurrency(shards, QUERY_CONCURRENCY, (shard) =>
    windowSortKeys(deps, INDEX.byTenant, byTenantShardPk(tenant, shard), since),
  );
  return perShard
    .flat()
    .map((sortKey) => ({ id: idOfCreatedSortKey(sortKey), createdAt: createdAtOfSortKey(sortKey) }));
}

/**
 * The ids `by_status` names per status for the tenant's window: every shard × every status. Ids, not
 * a Select COUNT: the same pages and read units (a query is billed by what it reads), and an entry
 * of a gone message is told by its id, whatever status it had (decision 0212).
 */
async function statusIndexIds(
  deps: ReconcileDeps,
  tenant: string,
  since: string,
): Promise<Record<MessageStatus, string[]>> {
  const partitions = MESSAGE_STATUSES.flatMap((status) =>
    Array.from({ length: INDEX_SHARDS.byStatus }, (_, shard) => ({ status, shard })),
  );
  const perPartition = await runWithConcurrency(partitions, QUERY_CONCURRENCY, async ({ status, shard }) => ({
    status,
    sortKeys: await windowSortKeys(deps, INDEX.byStatus, byStatusShardPk(tenant, status, shard), since),
  }));
  const ids = Object.fromEntries(MESSAGE_STATUSES.map((status) => [status, [] as string[]])) as Record<
    MessageStatus,
    string[]
  >;
  for (const { status, sortKeys } of perPartition) {
    for (const sortKey of sortKeys) ids[status].push(idOfCreatedSortKey(sortKey));
  }
  return ids;
}

/** The sort keys (`{created_at}#{id}`) of one index partition at or after `since`, every page. */
async function windowSortKeys(
  deps: Pick<ReconcileDeps, 'documents' | 'tableName'>,
  index: IndexDefinition,
  partition: string,
  since: string,
): Promise<string[]> {
  const sortKeys: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await deps.documents.send(
      new QueryCommand({
        TableName: deps.tableName,
        IndexName: index.indexName,
        KeyConditionExpression: '#pk = :pk AND #sk >= :since',
        ProjectionExpression: '#sk',
        ExpressionAttributeNames: { '#pk': index.partitionKey, '#sk': index.sortKey },
        ExpressionAttributeValues: { ':pk': partition, ':since': since },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const sortKey = item[index.sortKey];
      if (typeof sortKey === 'string') sortKeys.push(sortKey);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return sortKeys;
}

/**
 * Overdue entries of the `due` index (every shard), non-terminal, oldest first: held when the
 * senders hold the message on purpose (`sendersHold`, with the pauses and relays `sending` read),
 * else stuck.
 */
async function overdueMessages(
  deps: ReconcileDeps,
  now: Date,
  tenants: readonly string[],
  onlyTheseTenants: boolean,
  sending: Pick<SendingStatus, 'pause' | 'available'>,
): Promise<{ stuck: StuckMessage[]; held: HeldMessage[] }> {
  const before = new Date(now.getTime() - deps.graceSeconds * 1000).toISOString();
  const shards = Array.from({ length: INDEX_SHARDS.due }, (_, shard) => shard);
  const perShard = await runWithConcurrency(shards, QUERY_CONCURRENCY, async (shard) => {
    const found: DueEntry[] = [];
    let cursor: DueCursor | undefined;
    do {
      const page = await deps.dueIndex.overdue({ shard, before, limit: 500, cursor });
      found.push(...page.entries.filter((entry) => !isTerminal(entry.status)));
      cursor = page.cursor;
    } while (cursor !== undefined);
    return found;
  });
  const entries = perShard.flat();
  // The due index holds no tenant: read the few stuck records to say whose they are.
  const states = await readStateRecords(
    deps.documents,
    deps.tableName,
    entries.map((entry) => entry.id),
    { consistentRead: true },
  );
  const holds = { pause: sending.pause, noRelay: !sending.available };
  const overdue = entries
    .map((entry) => {
      const state = states.get(entry.id);
      // A sending record is due at the end of its lease, later than the entry a claim leaves in place
      // (core/sweepDecision.ts, as the sweeper reads it).
      const dueMs = state === undefined ? Date.parse(entry.due_at) : overdueSinceMs(state, entry.due_at);
      const message: StuckMessage = {
        id: entry.id,
        tenant: state?.tenant ?? null,
        // The record is the truth; the index copy may lag a transition by a moment.
        status: state?.status ?? entry.status,
        rev: state?.rev ?? entry.rev,
        dueAt: new Date(dueMs).toISOString(),
        overdueMs: now.getTime() - dueMs,
      };
      return { message, heldBy: state === undefined ? undefined : sendersHold(state, holds, now) };
    })
    .filter(({ message }) => !isTerminal(message.status) && message.overdueMs > deps.graceSeconds * 1000)
    .filter(
      ({ message }) => !onlyTheseTenants || (message.tenant !== null && tenants.includes(message.tenant)),
    )
    .sort((a, b) => (a.message.dueAt < b.message.dueAt ? -1 : a.message.dueAt > b.message.dueAt ? 1 : 0));
  return {
    stuck: overdue.flatMap(({ message, heldBy }) => (heldBy === undefined ? [message] : [])),
    held: overdue.flatMap(({ message, heldBy }) => (heldBy === undefined ? [] : [{ ...message, heldBy }])),
  };
}

/**
 * The progress bar's label (stderr, on a terminal only, never with --json: `Output.progress`, as
 * `messages export` draws it): `[#####---] 1200/2008 messages counted`.
 */
const COUNTED = 'messages counted';

/** Index queries in flight at once: the shards are independent partitions. */
const QUERY_CONCURRENCY = 16;

// ------------------------------------------------------------------------------------------ counting

function emptyCounts(): Record<MessageStatus, number> {
  return Object.fromEntries(MESSAGE_STATUSES.map((status) => [status, 0])) as Record<MessageStatus, number>;
}

class TallyBuilder {
  private accepted = 0;
  private readonly counts = emptyCounts();

  /** One accepted message with its status (null: its record is missing). */
  accept(status: MessageStatus | null): void {
    this.accepted++;
    if (status !== null) this.counts[status]++;
  }

  count(status: MessageStatus): number {
    return this.counts[status];
  }

  build(): Tally {
    const sum = (predicate: (status: MessageStatus) => boolean) =>
      MESSAGE_STATUSES.filter(predicate).reduce((total, status) => total + this.counts[status], 0);
    return {
      accepted: this.accepted,
      pending: this.counts.scheduled,
      inFlight: this.counts.sending + this.counts.retrying,
      dispatched: sum((status) => DISPATCHED.has(status)),
      terminal: sum(isTerminal),
      byStatus: { ...this.counts },
    };
  }
}

// ----------------------------------------------------------------------------------------- rendering

/** `everyKeyedTenant`: no `--tenant`, so the tenants are those with an API key (`deps.tenants`). */
function render(report: ReconcileReport, out: Output, everyKeyedTenant: boolean): void {
  if (out.json) {
    out.data(report);
    return;
  }
  // A tenant that writes only through postdate/outbox has no key: name the way to reach it.
  const keyed = '--tenant T for one that enqueues only through postdate/outbox';
  const tenants = !everyKeyedTenant
    ? report.tenants.join(', ')
    : report.tenants.length > 0
      ? `${report.tenants.join(', ')} (every tenant with an API key; ${keyed})`
      : `(none: no API keys; ${keyed})`;
  printFields(out, [
    ['window', `created since ${report.since} (now ${report.now})`],
    ['tenants', tenants],
  ]);
  out.line('');
  const tallyColumns: Column<[string, Tally]>[] = [
    { header: '', value: ([name]) => name },
    { header: 'ACCEPTED', value: ([, t]) => String(t.accepted), align: 'right' },
    { header: 'PENDING', value: ([, t]) => String(t.pending), align: 'right' },
    { header: 'IN FLIGHT', value: ([, t]) => String(t.inFlight), align: 'right' },
    { header: 'DISPATCHED', value: ([, t]) => String(t.dispatched), align: 'right' },
    { header: 'TERMINAL', value: ([, t]) => String(t.terminal), align: 'right' },
    // Only the statuses that occur, so the table fits a terminal; --json always has all ten.
    ...MESSAGE_STATUSES.filter((status) => report.totals.byStatus[status] > 0).map(
      (status): Column<[string, Tally]> => ({
        header: status.toUpperCase(),
        value: ([, t]) => String(t.byStatus[status]),
        align: 'right',
        tone: ([, t]) => (t.byStatus[status] > 0 ? statusTone(status) : undefined),
      }),
    ),
  ];
  printTable(out, tallyColumns, [
    ['all', report.totals],
    ...Object.entries(report.byTenant).map(([tenant, tally]): [string, Tally] => [`tenant ${tenant}`, tally]),
    ...Object.entries(report.byTag).map(([tag, tally]): [string, Tally] => [`tag ${tag}`, tally]),
  ]);
  out.line('');
  if (report.indexCheck.consistent) {
    out.line(paint(out, 'green', 'indexes agree with the records'));
  } else {
    for (const m of report.indexCheck.mismatches) {
      out.warn(
        paint(
          out,
          'yellow',
          `by_status ${m.tenant}/${m.status}: index ${m.index}, records ${m.records} (index lag right after traffic? run again)`,
        ),
      );
    }
    if (report.indexCheck.missingRecords.length > 0) {
      out.warn(
        paint(out, 'red', `accepted without a state record: ${report.indexCheck.missingRecords.join(', ')}`),
      );
    }
  }
  out.line('');
  renderSending(report.sending, out);
  const columns: Column<StuckMessage>[] = [
    { header: 'ID', value: (row) => row.id },
    { header: 'TENANT', value: (row) => row.tenant ?? '?' },
    { header: 'STATUS', value: (row) => row.status, tone: (row) => statusTone(row.status) },
    { header: 'REV', value: (row) => String(row.rev), align: 'right' },
    { header: 'DUE AT', value: (row) => row.dueAt },
    { header: 'OVERDUE', value: (row) => formatDuration(row.overdueMs), align: 'right' },
  ];
  if (report.held.length > 0) {
    out.line('');
    out.line(
      paint(out, 'bold', 'held (overdue, but the senders hold them until a resume or a relay takes mail)'),
    );
    printTable(
      out,
      [...columns, { header: 'HELD BY', value: (row: HeldMessage) => row.heldBy }],
      report.held,
    );
  }
  out.line('');
  out.line(paint(out, 'bold', `stuck (non-terminal, overdue by more than ${report.graceSeconds} s)`));
  printTable(out, columns, report.stuck, 'nothing stuck');
}
