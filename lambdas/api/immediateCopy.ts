/**
 * The api's own copy of an immediate message (`POSTDATE_API_IMMEDIATE_COPY`, docs/decisions/):
 * right after its state record is written, the copy the relay would put on the send queue, so the
 * sender need not wait for the stream and the relay. The relay's copy still follows, held back a
 * few seconds because the record says `api_copy` — the stream stays the safety net, for a copy this
 * fails to put and for an api that dies before it — and the sender drops the second by the `rev`
 * and status rules (DESIGN §2), so this can only make the message earlier, never doubled.
 */
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { MessageStateRecord } from '../store/messageRecord.js';

/** What became of the copy, for the request's log line; undefined when there was none to make. */
export type ImmediateCopyOutcome = 'enqueued' | 'failed';

/**
 * Puts the copy of a newly written message that is due now — the one its records mark `api_copy`
 * (store/outboxRecords.ts decides) — and never throws (the 202 stands).
 */
export async function putImmediateCopy(
  queue: DispatchQueue | undefined,
  state: MessageStateRecord,
): Promise<ImmediateCopyOutcome | undefined> {
  if (queue === undefined || state.api_copy !== true) return undefined;
  try {
    const { failed } = await queue.enqueue([{ payload: { id: state.id, rev: state.rev }, delaySeconds: 0 }]);
    return failed.length === 0 ? 'enqueued' : 'failed';
  } catch {
    return 'failed';
  }
}
