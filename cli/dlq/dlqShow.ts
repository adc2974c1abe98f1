/**
 * `postdate dlq show`: the send queue's DLQ counted, the messages it stands for read from the table,
 * and — only when asked (`--peek n`) — copies received to be looked at. The DLQ holds `{v, id, rev}`
 * copies whose messages are `dead` (DESIGN §5).
 *
 * SQS has no true peek: a ReceiveMessage, whatever its visibility timeout, adds one to the copy's
 * ApproximateReceiveCount, and a count that includes someone's looks says nothing true about the
 * copy. A count carried back to the send queue by a move task would also bring it nearer the queue's
 * maxReceiveCount. So by default nothing is received: the counts come from GetQueueAttributes, and
 * which messages are dead, with their attempts (SMTP transactions, the number that matters) and last
 * error, comes from the table's `by_status` index. A peek shows each copy's receive count less its
 * own receive, and says how many copies it touched.
 */
import { parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { readStateRecords } from '../../lambdas/store/stateReads.js';
import {
  ageOf,
  printSampleReport,
  type QueueSummary,
  type SampleOptions,
  sampleReport,
} from '../deadLetters/queueSample.js';
import type { MessageRow } from '../messagesCommands.js';
import { formatDuration, type Output, paint, printTable, statusTone } from '../output.js';
import { type DlqDeps, sendDeadLetterQueue } from './dlqDeps.js';

export interface DlqSampleEntry {
  readonly id: string | null;
  readonly rev: number | null;
  /** The record's status now, when the table was read (null: no table, or no such record). */
  readonly status: string | null;
  /**
   * ApproximateReceiveCount less this peek's own receive: the sender's receives plus the receives
   * of earlier peeks (which SQS cannot tell apart).
   */
  readonly receivesBeforePeek: number | null;
  /** Since the copy was first put on the send queue (SQS keeps SentTimestamp across the move). */
  readonly ageMs: number | null;
  readonly sqsMessageId: string | null;
  /** Why the body is not a `{v, id, rev}` payload, when it is not. */
  readonly unreadable: string | null;
}

export interface DlqShowReport extends QueueSummary {
  /** The copies received with `--peek` (none by default). */
  readonly sample: readonly DlqSampleEntry[];
  /** How many copies the peek received (each one's receive count went up by one). */
  readonly peeked: number;
  /** The `dead` messages as the table has them, newest first; null when the table was not read. */
  readonly deadMessages: readonly MessageRow[] | null;
  /** More dead messages exist than were listed. */
  readonly deadMessagesTruncated: boolean;
}

/** `sample`: how many copies to receive and show (`--peek`). @default 0 */
export type DlqShowOptions = SampleOptions;

export interface DlqShowDeps extends DlqDeps {
  /** The dead messages from the table (`messages list --status dead`); omitted: not shown. */
  readonly deadMessages?: () => Promise<{
    readonly items: readonly MessageRow[];
    readonly truncated: boolean;
  }>;
}

export async function dlqShow(
  deps: DlqShowDeps,
  options: DlqShowOptions,
  out: Output,
): Promise<DlqShowReport> {
  const now = deps.now().getTime();
  const summary = await sampleReport(
    sendDeadLetterQueue(deps),
    { ...options, sample: options.sample ?? 0 },
    async (letters) => {
      const parsed = letters.map((letter) => ({ letter, payload: parseDispatchPayload(letter.body) }));
      const ids = parsed.flatMap((entry) => (entry.payload.ok ? [entry.payload.payload.id] : []));
      const states = deps.table
        ? await readStateRecords(deps.table.documents, deps.table.tableName, ids)
        : new Map();
      return parsed.map(({ letter, payload }) => ({
        id: payload.ok ? payload.payload.id : null,
        rev: payload.ok ? payload.payload.rev : null,
        status: payload.ok ? (states.get(payload.payload.id)?.status ?? null) : null,
        receivesBeforePeek: letter.receiveCount === null ? null : Math.max(0, letter.receiveCount - 1),
        ageMs: ageOf(letter.sentAtMs, now),
        sqsMessageId: letter.sqsMessageId,
        unreadable: payload.ok ? null : payload.reason,
      }));
    },
  );
  const dead = deps.deadMessages ? await deps.deadMessages() : undefined;
  const report: DlqShowReport = {
    ...summary,
    peeked: summary.sample.length,
    deadMessages: dead?.items ?? null,
    deadMessagesTruncated: dead?.truncated ?? false,
  };
  if (out.json) {
    out.data(report);
    return report;
  }
  printSampleReport(out, report, {
    own: [
      {
        header: 'STATUS',
        value: (row) => row.status ?? '-',
        tone: (row) => (row.status ? statusTone(row.status) : undefined),
      },
    ],
    after: [
      {
        header: 'RECEIVES BEFORE PEEK',
        value: (row) => (row.receivesBeforePeek === null ? '-' : String(row.receivesBeforePeek)),
        align: 'right',
      },
    ],
  });
  if (report.peeked > 0) {
    out.line(
      paint(
        out,
        'dim',
        `peeked at ${report.peeked} ${report.peeked === 1 ? 'copy' : 'copies'}: SQS has no true peek, so each one's receive count went up by one`,
      ),
    );
  }
  if (report.deadMessages !== null)
    printDeadMessages(out, report.deadMessages, report.deadMessagesTruncated, now);
  return report;
}

function printDeadMessages(out: Output, rows: readonly MessageRow[], truncated: boolean, now: number): void {
  out.line('');
  out.line(paint(out, 'bold', 'dead messages (from the table; no copy received):'));
  printTable(
    out,
    [
      { header: 'ID', value: (row) => row.id },
      { header: 'TENANT', value: (row) => row.tenant },
      { header: 'REV', value: (row) => String(row.rev), align: 'right' },
      { header: 'ATTEMPTS', value: (row) => String(row.attempts), align: 'right' },
      {
        header: 'LAST ERROR',
        value: (row) =>
          row.last_error
            ? [row.last_error.code, row.last_error.enhanced_code].filter(Boolean).join(' ') ||
              row.last_error.class
            : '-',
      },
      {
        header: 'DEAD FOR',
        value: (row) => formatDuration(now - Date.parse(row.updated_at)),
        align: 'right',
      },
    ],
    rows,
    'no dead messages',
  );
  if (truncated)
    out.line(paint(out, 'dim', 'more dead messages exist: postdate messages list --status dead --limit …'));
}
