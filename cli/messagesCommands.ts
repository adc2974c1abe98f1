/**
 * `postdate messages list | show | cancel | retry | discard`. Reads go through the indexes of
 * docs/data-model.md (never a table scan); cancel and retry are the API's own conditional updates
 * (lambdas/store/apiStore.ts), so an operator's move obeys exactly the same state machine as a client's.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type RetryResult, retryMessage } from '../lambdas/api/routes/messages.js';
import type { ShardPosition } from '../lambdas/core/listPages.js';
import { discardedAt, retentionRanOut } from '../lambdas/core/messageLifetime.js';
import {
  isMessageStatus,
  isWaitingForOperator,
  MESSAGE_STATUSES,
  type MessageStatus,
} from '../lambdas/core/messageStatus.js';
import { sendersHold } from '../lambdas/core/sweepDecision.js';
import type { ApiStore, TransitionResult } from '../lambdas/ports/ApiStore.js';
import type { AttachmentStore } from '../lambdas/ports/AttachmentStore.js';
import { expiresAtAfter, type MessageStateRecord } from '../lambdas/store/messageRecord.js';
import { messageView, recipientsOf } from '../lambdas/store/messageView.js';
import { type RelayGatesRead, readRelayGates } from '../lambdas/store/sendingGate.js';
import { readStateRecord } from '../lambdas/store/stateReads.js';
import { NotFoundError, UsageError, withNextStep } from './cliErrors.js';
import { assertMessageIds } from './deadLetters/chosenIds.js';
import {
  discardedInWords,
  ERROR_CLASS_WORDS,
  heldInWords,
  messageIdHeader,
  quietHoursInWords,
  statusInWords,
} from './messageWords.js';
import {
  type Column,
  formatDuration,
  type Output,
  paint,
  printFields,
  printTable,
  statusTone,
} from './output.js';
import { type RelaysDeps, readGates, relaysStatusOf } from './relaysCommands.js';

export interface MessagesDeps {
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  /** The API's store: its listing and its cancel/retry conditional updates. */
  readonly store: ApiStore;
  /**
   * The attachments' bucket, when the target knows it (`--stack`'s output AttachmentBucketName, or
   * POSTDATE_ATTACHMENT_BUCKET): a retry then refuses a message whose files are gone, as the API
   * does (decision 0130).
   */
  readonly attachments?: AttachmentStore | undefined;
  readonly now: () => Date;
  /** The tenants to look in when `--tenant` is not given (every tenant that has an API key). */
  readonly tenants: () => Promise<readonly string[]>;
  /** POSTDATE_RETENTION_DAYS: the TTL a cancelled record gets, as the API gives it. */
  readonly retentionDays: number;
  /** POSTDATE_MAX_ATTEMPTS: the attempts a retried message gets, as the API gives them. */
  readonly maxAttempts: number;
  /**
   * POSTDATE_MESSAGE_ID_DOMAIN, to show the Message-ID to search the relay's logs for; undefined when
   * the stack's is not known here (cli/postdate.ts `messagesDeps`): no Message-ID is guessed.
   */
  readonly messageIdDomain: string | undefined;
  /**
   * The target's relays (cli/relaysCommands.ts), read only by `messages show` to say that a due
   * message waits because no relay takes mail; absent, it names only pauses and quiet hours.
   */
  readonly relays?: (() => RelaysDeps) | undefined;
}

/** One message as the CLI shows it: the API's fields plus the tenant (operators see every tenant). */
export interface MessageRow {
  readonly id: string;
  readonly tenant: string;
  readonly status: MessageStatus;
  readonly rev: number;
  readonly send_at: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly attempts: number;
  readonly last_error: MessageStateRecord['last_error'];
  readonly tags: Readonly<Record<string, string>>;
  /** When an operator discarded it, while it stays discarded (core/messageLifetime.ts `discardedAt`). */
  readonly discarded_at: string | null;
}

// ---------------------------------------------------------------------------------------------- list

export interface ListOptions {
  readonly status?: string;
  readonly since?: string;
  /** `k=v` pairs; a message must carry every one. */
  readonly tags?: readonly string[];
  readonly tenant?: string;
  /** @default 50 */
  readonly limit?: number;
}

export interface ListReport {
  readonly tenants: readonly string[];
  readonly status: MessageStatus | null;
  readonly since: string | null;
  readonly items: readonly MessageRow[];
  /** More messages matched than `limit`. */
  readonly truncated: boolean;
}

/**
 * Newest first, per tenant through `by_status` (with `--status`) or `by_tenant`, fanned out over the
 * shards by the API's own listing; `--since` stops paging at the first older message; `--tag` filters
 * the records read (tags are not in any index key).
 */
export async function messagesList(
  deps: MessagesDeps,
  options: ListOptions,
  out: Output,
): Promise<ListReport> {
  const status = parseStatus(options.status);
  const since = options.since === undefined ? null : parseSince(options.since, deps.now());
  const tags = parseTags(options.tags ?? []);
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new UsageError('--limit must be a whole number from 1 to 10000');
  }
  const tenants = options.tenant !== undefined ? [options.tenant] : [...(await deps.tenants())].sort();
  const matches: MessageRow[] = [];
  let truncated = false;
  for (const tenant of tenants) {
    let positions: readonly ShardPosition[] = [];
    let found = 0;
    for (;;) {
      const page = await deps.store.listMessages({ tenant, status, limit: 100, positions, now: deps.now() });
      let older = false;
      for (const state of page.items) {
        if (since !== null && state.created_at < since) {
          older = true;
          break;
        }
        if (!hasTags(state, tags)) continue;
        if (found === limit) {
          truncated = true;
          break;
        }
        matches.push(toRow(state));
        found++;
      }
      positions = page.positions;
      const exhausted = positions.every((position) => position.kind === 'done');
      if (older || exhausted || truncated || found > limit) break;
    }
  }
  matches.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
  if (matches.length > limit) truncated = true;
  const report: ListReport = { tenants, status, since, items: matches.slice(0, limit), truncated };
  if (out.json) {
    out.data(report);
  } else {
    printTable(out, listColumns(deps.now()), report.items, 'no messages match');
    if (report.truncated) out.warn(`more than ${limit} messages match: narrow with --since or raise --limit`);
  }
  return report;
}

function listColumns(now: Date): Column<MessageRow>[] {
  return [
    { header: 'ID', value: (row) => row.id },
    { header: 'TENANT', value: (row) => row.tenant },
    {
      // A discarded one is decided: told apart from one still waiting (runbook procedure 2, Verify).
      header: 'STATUS',
      value: (row) => (row.discarded_at === null ? row.status : `${row.status} (discarded)`),
      tone: (row) => statusTone(row.status),
    },
    { header: 'REV', value: (row) => String(row.rev), align: 'right' },
    { header: 'ATTEMPTS', value: (row) => String(row.attempts), align: 'right' },
    { header: 'SEND AT', value: (row) => row.send_at },
    {
      header: 'AGE',
      value: (row) => formatDuration(now.getTime() - Date.parse(row.created_at)),
      align: 'right',
    },
    {
      header: 'LAST ERROR',
      value: (row) =>
        row.last_error
          ? `${row.last_error.class} ${[row.last_error.code, row.last_error.enhanced_code].filter(Boolean).join(' ')}`.trim()
          : '',
    },
    {
      header: 'TAGS',
      value: (row) =>
        Object.entries(row.tags)
          .map(([key, value]) => `${key}=${value}`)
          .join(','),
    },
  ];
}

// ---------------------------------------------------------------------------------------------- show

export interface ShowReport {
  readonly message: MessageRow & {
    readonly not_after: string | null;
    /** `send_at` on the wall clock of `time_zone`, as the API's view shows it (docs/design.md §16). */
    readonly send_at_local: string | null;
    readonly time_zone: string | null;
    readonly quiet_hours: MessageStateRecord['quiet_hours'] | null;
    readonly on_ambiguous: 'retry' | 'hold';
    readonly lease_until: string | null;
    /** While `sending`: the relay the lease sends through, whose logs decide a stuck one (decision 0182). */
    readonly lease_relay: string | null;
    readonly sent_at: string | null;
    /** The relay's own id from its final 250 reply (what to quote to the provider). */
    readonly provider_message_id: string | null;
    /** The relay that id comes from (DESIGN §15: which provider's logs to search). */
    readonly relay: string | null;
    /** Counted as the API's view counts them: `suppressed` are those left out at send time (runbook procedure 6). */
    readonly recipients: ReturnType<typeof recipientsOf>;
    readonly group: MessageStateRecord['group'];
    readonly metadata: Readonly<Record<string, string>>;
    readonly history: MessageStateRecord['history'];
  };
  /** `<id@domain>` as the senders wrote it; null when the stack's domain is not known here. */
  readonly message_id_header: string | null;
  /** The status and the last error, in words, with the next command to run. */
  readonly explanation: {
    readonly status: string;
    readonly last_error: string | null;
    /**
     * A waiting message (`scheduled`, `retrying`) that a pause holds: which, and what resumes it (0253);
     * or its quiet hours, and until when (0259).
     */
    readonly held: string | null;
  };
}

/** The statuses whose copies wait for the sending gate: a pause holds only these. */
const WAITING: ReadonlySet<MessageStatus> = new Set(['scheduled', 'retrying']);

/** The local time, zone and quiet hours exactly as the API's message view derives them. */
function localTimeOf(state: MessageStateRecord) {
  const { send_at_local, time_zone, quiet_hours } = messageView(state, { withHistory: false });
  return { send_at_local, time_zone, quiet_hours };
}

/**
 * The target's relays and one read of their gates, or undefined: a shell whose list of relays is
 * unreadable, or that the table contradicts, is refused by `relays status`; `messages show` then
 * only leaves the relays unsaid.
 */
async function relaysRead(
  deps: MessagesDeps,
): Promise<{ readonly deps: RelaysDeps; readonly read: RelayGatesRead } | undefined> {
  try {
    const relays = deps.relays?.();
    return relays === undefined ? undefined : { deps: relays, read: await readGates(relays) };
  } catch {
    return undefined;
  }
}

/**
 * What holds a waiting message now: a pause (0253), no relay taking mail once it is due (as the
 * sweeper and `reconcile` decide it, core/sweepDecision.ts `sendersHold`: every relay unavailable,
 * disabled or quota-held), its quiet hours (0259), some of these, or nothing (null).
 */
async function heldBy(deps: MessagesDeps, state: MessageStateRecord): Promise<string | null> {
  const now = deps.now();
  const relays = await relaysRead(deps);
  const read = relays?.read ?? (await readRelayGates(deps.documents, deps.tableName, []));
  const pause = heldInWords(read.pause, state.tags?.kind);
  const due = Date.parse(state.due_at ?? state.send_at) <= now.getTime();
  const noRelay =
    relays !== undefined &&
    due &&
    sendersHold(state, { pause: read.pause, noRelay: !relaysStatusOf(relays.deps, read).available }, now) ===
      'no-relay'
      ? 'no relay takes mail (each is unavailable, disabled or its daily quota spent): it goes, no attempt counted, once one does: postdate relays status'
      : null;
  const reasons = [pause, noRelay, quietHoursInWords(state, now)].filter((reason) => reason !== null);
  return reasons.length === 0 ? null : reasons.join('; ');
}

export async function messagesShow(deps: MessagesDeps, id: string, out: Output): Promise<ShowReport> {
  assertMessageIds([id]);
  const state = await readState(deps, id);
  if (state === null) throw new NotFoundError(noMessage([id]), LIST_MESSAGES);
  const error = state.last_error ?? null;
  const report: ShowReport = {
    message: {
      ...toRow(state),
      not_after: state.not_after ?? null,
      ...localTimeOf(state),
      on_ambiguous: state.on_ambiguous,
      lease_until: state.lease_until ?? null,
      lease_relay: state.lease_relay ?? null,
      sent_at: state.sent_at ?? null,
      provider_message_id: state.provider_message_id ?? null,
      relay: state.relay ?? null,
      recipients: recipientsOf(state),
      group: state.group ?? null,
      metadata: state.metadata ?? {},
      history: state.history ?? [],
    },
    message_id_header:
      deps.messageIdDomain === undefined ? null : messageIdHeader(state.id, deps.messageIdDomain),
    explanation: {
      status: discardedAt(state) === undefined ? statusInWords(state, deps.now()) : discardedInWords(),
      last_error: error === null ? null : errorInWords(error),
      held: WAITING.has(state.status) ? await heldBy(deps, state) : null,
    },
  };
  if (out.json) {
    out.data(report);
    return report;
  }
  const m = report.message;
  printFields(out, [
    ['id', m.id],
    ['tenant', m.tenant],
    ['status', `${paint(out, statusTone(m.status), m.status)} — ${report.explanation.status}`],
    ['rev', String(m.rev)],
    ['send at', m.send_at],
    ...(m.time_zone === null
      ? []
      : ([
          ['send at (local)', `${m.send_at_local ?? '?'} ${m.time_zone}`],
          ['quiet hours', m.quiet_hours ? `${m.quiet_hours.start}–${m.quiet_hours.end} ${m.time_zone}` : '-'],
        ] as const)),
    ['not after', m.not_after ?? '-'],
    ...(m.discarded_at ? ([['discarded', m.discarded_at]] as const) : []),
    ['created', m.created_at],
    ['updated', m.updated_at],
    ...(m.sent_at ? ([['sent', m.sent_at]] as const) : []),
    ...(m.lease_until ? ([['lease until', m.lease_until]] as const) : []),
    ...(m.lease_relay ? ([['lease relay', m.lease_relay]] as const) : []),
    ['attempts', String(m.attempts)],
    [
      'recipients',
      `accepted ${m.recipients.accepted}, pending ${m.recipients.pending}, rejected ${m.recipients.rejected}, suppressed ${m.recipients.suppressed}`,
    ],
    ['on ambiguous', m.on_ambiguous],
    [
      'message-id',
      report.message_id_header ??
        "not known here: set POSTDATE_MESSAGE_ID_DOMAIN as the stack's settings have it, or use --stack NAME",
    ],
    ['relay', m.relay ?? '-'],
    ['relay id', m.provider_message_id ?? '-'],
    ['group', m.group ? `${m.group.key} v${m.group.version}` : '-'],
    ['tags', pairs(m.tags)],
    ['metadata', pairs(m.metadata)],
    ['last error', report.explanation.last_error ?? '-'],
    ...(report.explanation.held ? ([['held', report.explanation.held]] as const) : []),
  ]);
  out.line('');
  out.line(paint(out, 'bold', 'history'));
  printTable(
    out,
    [
      { header: 'AT', value: (row: MessageStateRecord['history'][number]) => row.at },
      {
        header: 'OUTCOME',
        value: (row) => row.outcome,
        tone: (row) => (row.outcome === 'sent' ? 'green' : 'red'),
      },
      { header: 'CODE', value: (row) => [row.code, row.enhanced_code].filter(Boolean).join(' ') },
      { header: 'DURATION', value: (row) => `${row.duration_ms} ms`, align: 'right' },
      { header: 'RELAY', value: (row) => row.relay ?? '' },
      { header: 'RELAY ID', value: (row) => row.provider_message_id ?? '' },
      { header: 'REPLY', value: (row) => row.reply ?? '' },
      { header: 'REFUSED', value: refusedInWords },
    ],
    m.history,
    '(no attempts yet)',
  );
  return report;
}

/** The recipients an attempt had refused at RCPT TO, by position and domain (no address), with their codes. */
function refusedInWords(attempt: MessageStateRecord['history'][number]): string {
  const refused = (attempt.recipients ?? []).map(
    (r) => `#${r.position} ${r.domain} ${r.outcome}${r.code === null ? '' : ` ${r.code}`}`,
  );
  if ((attempt.recipients_omitted ?? 0) > 0) refused.push(`+${attempt.recipients_omitted} more`);
  return refused.join(', ');
}

function errorInWords(error: NonNullable<MessageStateRecord['last_error']>): string {
  const codes = [error.code, error.enhanced_code].filter(Boolean).join(' ');
  return `${ERROR_CLASS_WORDS[error.class]}${codes ? ` [${codes}]` : ''}${error.message ? `: ${error.message}` : ''}`;
}

// ------------------------------------------------------------------------------------ cancel / retry

export interface TransitionRow {
  readonly id: string;
  readonly outcome:
    | 'cancelled'
    | 'retried'
    | 'discarded'
    | 'not-found'
    | 'conflict'
    | 'attachments-gone'
    | 'attachments-unchecked';
  /** The status after the attempt (the current one when it lost its condition). */
  readonly status: MessageStatus | null;
  readonly rev: number | null;
  readonly reason: string | null;
}

export interface TransitionReport {
  readonly results: readonly TransitionRow[];
  /** Whether every id got the transition. */
  readonly ok: boolean;
  /** When an id named no message: the command that lists them (as a not-found error's `next`). */
  readonly next?: string;
}

/** Cancels a `scheduled` or `retrying` message (the API's DELETE, as the operator actor). */
export function messagesCancel(
  deps: MessagesDeps,
  ids: readonly string[],
  out: Output,
): Promise<TransitionReport> {
  return endEach(
    deps,
    ids,
    out,
    'cancelled',
    ruleOnly('cancel takes a scheduled or retrying message'),
    (input) => deps.store.cancel(input),
  );
}

/**
 * Manual retry of `failed`, `dead` or `unknown` messages: rev + 1 and send_at = now, so the relay
 * dispatches the new rev and any older copy (a DLQ copy of a `dead` message) becomes stale. The
 * API's own retry (retryMessage): a message whose attachments are gone is left as it is
 * (`attachments-gone`), and so is one with attachments when this CLI knows no bucket to check them
 * in (`attachments-unchecked`); this reports which.
 */
export async function messagesRetry(
  deps: MessagesDeps,
  ids: readonly string[],
  out: Output,
): Promise<TransitionReport> {
  const now = deps.now();
  return transitionEach(
    deps,
    ids,
    'retried',
    ruleOnly('retry takes a failed, dead or unknown message'),
    out,
    (state) => retryMessage(deps, { tenant: state.tenant, id: state.id, now, maxAttempts: deps.maxAttempts }),
  );
}

/**
 * An operator's decision to leave `failed`, `dead` or `unknown` messages as they are (runbook §2):
 * the status stays, the message stops waiting — it leaves the waiting gauge, so its alarm can clear,
 * and its record and body get the retention's TTL from now. A retry or a DLQ redrive still works.
 */
export function messagesDiscard(
  deps: MessagesDeps,
  ids: readonly string[],
  out: Output,
): Promise<TransitionReport> {
  return endEach(deps, ids, out, 'discarded', whyNotDiscarded, (input) => deps.store.discard(input));
}

/**
 * Why a discard changed nothing, in what is so: a failed, dead or unknown message that no longer
 * waits was discarded already, or is a test message, whose retention started when it ended (0145).
 */
function whyNotDiscarded(current: MessageStateRecord): string {
  const status = current.status;
  if (!isWaitingForOperator(status)) {
    return `it is ${status}: discard takes a failed, dead or unknown message that still waits for an operator`;
  }
  const discarded = discardedAt(current);
  if (discarded !== undefined) {
    return `it is ${status} and was discarded already at ${discarded}: nothing to do (postdate messages retry sends it again)`;
  }
  return `it is ${status} on a test side, where nobody waits for an operator: its retention runs already, nothing to discard`;
}

/** The reason for a conflict when the status alone explains it. */
function ruleOnly(rule: string): (current: MessageStateRecord) => string {
  return (current) => `it is ${current.status}: ${rule}`;
}

/** A move after which the record (and its body) lives the retention from now: a cancel or a discard. */
function endEach(
  deps: MessagesDeps,
  ids: readonly string[],
  out: Output,
  done: 'cancelled' | 'discarded',
  conflictReason: (current: MessageStateRecord) => string,
  end: (input: { tenant: string; id: string; now: Date; expiresAt: number }) => Promise<TransitionResult>,
): Promise<TransitionReport> {
  const now = deps.now();
  const expiresAt = expiresAtAfter(now, deps.retentionDays);
  return transitionEach(deps, ids, done, conflictReason, out, ({ tenant, id }) =>
    end({ tenant, id, now, expiresAt }),
  );
}

async function transitionEach(
  deps: MessagesDeps,
  ids: readonly string[],
  done: 'cancelled' | 'retried' | 'discarded',
  conflictReason: (current: MessageStateRecord) => string,
  out: Output,
  apply: (state: MessageStateRecord) => Promise<RetryResult>,
): Promise<TransitionReport> {
  if (ids.length === 0) throw new UsageError('give at least one message id');
  assertMessageIds(ids);
  const results: TransitionRow[] = [];
  for (const id of ids) {
    // The operator does not name the tenant: the record says whose it is, and the update is
    // conditioned on that tenant like any API call.
    const state = await readState(deps, id);
    if (state === null) {
      results.push({ id, outcome: 'not-found', status: null, rev: null, reason: 'no such message' });
      continue;
    }
    const result = await apply(state);
    if (result.kind === 'updated') {
      results.push({ id, outcome: done, status: result.state.status, rev: result.state.rev, reason: null });
    } else if (result.kind === 'attachments-gone') {
      const which =
        result.gone.length === 1
          ? `attachment ${result.gone[0]} is`
          : `attachments ${result.gone.join(', ')} are`;
      results.push({
        id,
        outcome: 'attachments-gone',
        status: result.current.status,
        rev: result.current.rev,
        reason: `its ${which} no longer stored (expired after the discard), so a retry would fail it again: enqueue a new message with the files`,
      });
    } else if (result.kind === 'attachments-unchecked') {
      results.push({
        id,
        outcome: 'attachments-unchecked',
        status: result.current.status,
        rev: result.current.rev,
        reason:
          'it has attachments, and this CLI knows no bucket to check they are still stored (a retry would fail it again if not): pass --stack NAME or set POSTDATE_ATTACHMENT_BUCKET',
      });
    } else if (result.kind === 'not-found') {
      results.push({ id, outcome: 'not-found', status: null, rev: null, reason: 'no such message' });
    } else {
      results.push({
        id,
        outcome: 'conflict',
        status: result.current.status,
        rev: result.current.rev,
        reason: conflictReason(result.current),
      });
    }
  }
  const missing = results.filter((row) => row.outcome === 'not-found').map((row) => row.id);
  const report: TransitionReport = {
    results,
    ok: results.every((row) => row.outcome === done),
    ...(missing.length === 0 ? {} : { next: LIST_MESSAGES }),
  };
  if (out.json) {
    out.data(report);
  } else {
    printTable(
      out,
      [
        { header: 'ID', value: (row: TransitionRow) => row.id },
        {
          header: 'OUTCOME',
          value: (row) => row.outcome,
          tone: (row) => (row.outcome === done ? 'green' : 'red'),
        },
        {
          header: 'STATUS',
          value: (row) => row.status ?? '-',
          tone: (row) => (row.status ? statusTone(row.status) : undefined),
        },
        { header: 'REV', value: (row) => (row.rev === null ? '-' : String(row.rev)), align: 'right' },
        { header: 'WHY', value: (row) => row.reason ?? '' },
      ],
      results,
    );
  }
  if (missing.length > 0) out.warn(`postdate: ${withNextStep(noMessage(missing), LIST_MESSAGES)}`);
  return report;
}

// ------------------------------------------------------------------------------------------- helpers

/** Where a user who gave a wrong message id finds the right one. */
const LIST_MESSAGES = 'postdate messages list';

function noMessage(ids: readonly string[]): string {
  return `no message ${ids.join(', ')} (or ${ids.length === 1 ? 'its' : 'their'} retention ran out)`;
}

/**
 * The state record by id, whatever its tenant (strongly consistent); null when there is none, or it
 * is past its retention (gone, as the API answers, whenever DynamoDB deletes it: decision 0205).
 */
export async function readState(
  deps: Pick<MessagesDeps, 'documents' | 'tableName' | 'now'>,
  id: string,
): Promise<MessageStateRecord | null> {
  const state = await readStateRecord(deps.documents, deps.tableName, id);
  return state === undefined || retentionRanOut(state.expires_at, deps.now()) ? null : state;
}

function toRow(state: MessageStateRecord): MessageRow {
  return {
    id: state.id,
    tenant: state.tenant,
    status: state.status,
    rev: state.rev,
    send_at: state.send_at,
    created_at: state.created_at,
    updated_at: state.updated_at,
    attempts: state.attempts ?? 0,
    last_error: state.last_error ?? null,
    tags: state.tags ?? {},
    discarded_at: discardedAt(state) ?? null,
  };
}

export function parseStatus(value: string | undefined): MessageStatus | null {
  return value === undefined ? null : statusOf(value);
}

/** A status named on the command line; an unknown one is a usage error that names those there are. */
export function statusOf(value: string): MessageStatus {
  if (isMessageStatus(value)) return value;
  throw new UsageError(`unknown status "${value}" (one of ${MESSAGE_STATUSES.join(', ')})`);
}

/** An ISO time, or a relative one: `30m`, `6h`, `2d` ago. Answers the ISO form with milliseconds. */
export function parseSince(value: string, now: Date = new Date()): string {
  const relative = /^(\d+)\s*(m|h|d)$/.exec(value.trim());
  if (relative) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[relative[2] as 'm' | 'h' | 'd'];
    return new Date(now.getTime() - Number(relative[1]) * unit).toISOString();
  }
  const time = Date.parse(value);
  if (Number.isNaN(time))
    throw new UsageError(`--since: "${value}" is neither an ISO time nor like 30m, 6h, 2d`);
  return new Date(time).toISOString();
}

export function parseTags(values: readonly string[]): [string, string][] {
  return values.map((value) => {
    const at = value.indexOf('=');
    if (at < 1) throw new UsageError(`--tag: "${value}" is not key=value`);
    return [value.slice(0, at), value.slice(at + 1)];
  });
}

function hasTags(state: MessageStateRecord, tags: readonly [string, string][]): boolean {
  return tags.every(([key, value]) => state.tags?.[key] === value);
}

function pairs(record: Readonly<Record<string, string>>): string {
  const entries = Object.entries(record);
  return entries.length === 0 ? '-' : entries.map(([key, value]) => `${key}=${value}`).join(', ');
}
