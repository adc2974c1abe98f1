import { isTerminal, isWaitingForOperator, type MessageStatus } from './messageStatus.js';

/** What the rule reads of a message's state record. */
export interface DeadLetterRecord {
  readonly status: MessageStatus;
  readonly rev: number;
}

/**
 * Why a copy in the send queue's DLQ is stale — its message moved on, so no redrive of it can ever
 * send anything (the sender drops it, core/sendDecision.ts `admitCopy`) — or `undefined` when it is
 * not. Stale: the record is gone (`null`: the caller knows it is, not merely that a read missed it),
 * it is at another rev (DESIGN §2: a manual retry gave it rev + 1 and a new copy), or it ended in a
 * status that waits for nobody (`sent`, `cancelled`, …). Never stale: the current copy of a message
 * that waits for an operator (`dead`'s copy is its only one, §5 "Dead means dead") or of a live
 * message (the queue's backstop). The one rule for both who take stale copies off the DLQ: the
 * sweeper on every run (lambdas/sweeper/staleDeadLetters.ts) and `postdate dlq drop` (decision 0141).
 */
export function staleDeadLetter(
  copy: { readonly rev: number },
  record: DeadLetterRecord | null,
): string | undefined {
  if (record === null) return 'no record (expired or never written)';
  if (record.rev !== copy.rev) return `stale copy: the message is at rev ${record.rev} (${record.status})`;
  if (isTerminal(record.status) && !isWaitingForOperator(record.status))
    return `ended already (${record.status})`;
  return undefined;
}
