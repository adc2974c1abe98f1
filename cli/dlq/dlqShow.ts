/**
 * `postdate dlq show`: the send queue's DLQ counted, and a sample peeked at with each message's
 * status now. The DLQ holds `{v, id, rev}` copies whose messages are `dead` (DESIGN §5).
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
import { type Output, statusTone } from '../output.js';
import { type DlqDeps, sendDeadLetterQueue } from './dlqDeps.js';

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

export interface DlqShowReport extends QueueSummary {
  readonly sample: readonly DlqSampleEntry[];
}

export type DlqShowOptions = SampleOptions;

/**
 * Counts the DLQ and peeks at a sample (received, then made visible again at once). The receive
 * count of a DLQ copy drives nothing (the DLQ has no redrive policy, and a redriven copy starts a new
 * count on the send queue), but a consumer reading the DLQ at that moment would not see those copies
 * for an instant.
 */
export async function dlqShow(deps: DlqDeps, options: DlqShowOptions, out: Output): Promise<DlqShowReport> {
  const now = deps.now().getTime();
  const report: DlqShowReport = await sampleReport(sendDeadLetterQueue(deps), options, async (letters) => {
    const parsed = letters.map((letter) => ({ letter, payload: parseDispatchPayload(letter.body) }));
    const ids = parsed.flatMap((entry) => (entry.payload.ok ? [entry.payload.payload.id] : []));
    const states = deps.table
      ? await readStateRecords(deps.table.documents, deps.table.tableName, ids)
      : new Map();
    return parsed.map(({ letter, payload }) => ({
      id: payload.ok ? payload.payload.id : null,
      rev: payload.ok ? payload.payload.rev : null,
      status: payload.ok ? (states.get(payload.payload.id)?.status ?? null) : null,
      receiveCount: letter.receiveCount,
      ageMs: ageOf(letter.sentAtMs, now),
      sqsMessageId: letter.sqsMessageId,
      unreadable: payload.ok ? null : payload.reason,
    }));
  });
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
        header: 'RECEIVES',
        value: (row) => (row.receiveCount === null ? '-' : String(row.receiveCount)),
        align: 'right',
      },
    ],
  });
  return report;
}
