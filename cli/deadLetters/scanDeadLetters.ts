/**
 * Walks a dead-letter queue once, handing each received message to a visitor. What the visitor takes
 * off the queue (`done`) is gone; every other message stays hidden until the walk ends, so it is not
 * received twice, and is then released at once (ChangeMessageVisibility 0) — also when the visitor
 * throws. The walk ends at an empty receive, after `maxScan` messages, or when `finished` says so.
 */
import { SQS_MAX_BATCH } from '../../lambdas/core/queueLimits.js';
import type { DeadLetter, SqsDeadLetterQueue } from './SqsDeadLetterQueue.js';

export interface ScanOptions {
  /** How long messages are hidden while the queue is walked. @default 300 */
  readonly hideSeconds?: number;
  /** Stop after this many messages were looked at. @default 100000 */
  readonly maxScan?: number;
}

/** `done`: the visitor took the message off the queue; `keep`: it stays (released at the end). */
export type Visit = 'done' | 'keep';

export async function scanDeadLetters(
  queue: SqsDeadLetterQueue,
  options: ScanOptions & { readonly finished?: () => boolean },
  visit: (letter: DeadLetter) => Promise<Visit>,
): Promise<{ scanned: number }> {
  const maxScan = options.maxScan ?? 100_000;
  const held: DeadLetter[] = [];
  let scanned = 0;
  try {
    while (scanned < maxScan && options.finished?.() !== true) {
      const batch = await queue.receive(SQS_MAX_BATCH, options.hideSeconds ?? 300);
      if (batch.length === 0) break;
      scanned += batch.length;
      for (const letter of batch) {
        if ((await visit(letter)) === 'keep') held.push(letter);
      }
    }
  } finally {
    await queue.release(held);
  }
  return { scanned };
}
