import { parseDispatchPayload } from '../core/dispatchPayload.js';
import { SQS_MAX_BATCH } from '../core/queueLimits.js';
import { staleDeadLetter } from '../core/staleDeadLetter.js';
import type { DeadLetterCopies } from '../ports/DeadLetterCopies.js';
import type { SweepRecords } from '../ports/SweepRecords.js';

/** How long a walk hides the copies it received; it releases them at its end (seconds, not this). */
export const DEAD_LETTER_HIDE_SECONDS = 30;
/** At most this many copies received per run: a run stays bounded, the next one goes on. */
export const DEAD_LETTER_MAX_RECEIVED = 1000;

export interface DeadLetterSweep {
  /** The run walked the DLQ: it held more copies than there are dead messages waiting for them. */
  readonly walked: boolean;
  /** Copies received (each once). */
  readonly received: number;
  /** Stale copies deleted. */
  readonly removed: number;
  /** Stale copies SQS refused to delete: they stay, and the next run tries again. */
  readonly refused: number;
  /** The name of the error that cut the walk short (the copies it held were released). */
  readonly error?: string;
}

export interface DeadLetterSweepDeps {
  readonly deadLetters: DeadLetterCopies;
  readonly records: SweepRecords;
  /** Live `dead` messages waiting for an operator, counted this run (each has its copy in the DLQ); undefined: unread. */
  readonly waitingDead: number | undefined;
  /** @default DEAD_LETTER_MAX_RECEIVED */
  readonly maxReceived?: number;
}

/**
 * Takes stale copies off the send queue's DLQ (decision 0141): a manual retry gives a `dead` message
 * rev + 1 and a new copy, and nothing else deletes its old one, which would hold the DLQ alarm on for
 * the queue's retention. A live dead message's copy is its only one and stays. So the DLQ holds a
 * stale copy only when it holds more copies than dead messages wait — one GetQueueAttributes tells,
 * and only then is it walked: each copy received (hidden while the walk lasts, never received twice),
 * its record read consistently, the stale ones (core/staleDeadLetter.ts) deleted, and every other
 * copy made visible again at once when the walk ends, so `dlq show` and a redrive see it. A copy
 * whose record was not read, or whose body is not a copy, is left alone.
 */
export async function removeStaleDeadLetters(deps: DeadLetterSweepDeps): Promise<DeadLetterSweep> {
  const tally = { walked: false, received: 0, removed: 0, refused: 0 };
  let depth: { visible: number; inFlight: number };
  try {
    depth = await deps.deadLetters.depth();
  } catch (error) {
    return { ...tally, error: errorName(error) };
  }
  const held = depth.visible + depth.inFlight;
  if (depth.visible === 0 || (deps.waitingDead !== undefined && held <= deps.waitingDead)) return tally;
  tally.walked = true;
  const maxReceived = deps.maxReceived ?? DEAD_LETTER_MAX_RECEIVED;
  const kept: string[] = [];
  let error: string | undefined;
  try {
    // Stops at an empty receive, once it received as many copies as the queue held, or at the bound.
    while (tally.received < maxReceived && tally.received < held) {
      const batch = await deps.deadLetters.receive(
        Math.min(SQS_MAX_BATCH, maxReceived - tally.received),
        DEAD_LETTER_HIDE_SECONDS,
      );
      if (batch.length === 0) break;
      tally.received += batch.length;
      const copies = batch.map((letter) => ({ letter, parsed: parseDispatchPayload(letter.body) }));
      const records = await deps.records.read(
        copies.flatMap(({ parsed }) => (parsed.ok ? [parsed.payload.id] : [])),
      );
      const stale: string[] = [];
      for (const { letter, parsed } of copies) {
        const record = parsed.ok ? records.get(parsed.payload.id) : undefined;
        // An unread record is not a gone one (a batch read may leave keys unprocessed): only a record
        // read at another rev, or ended, makes a copy stale here.
        if (parsed.ok && record !== undefined && staleDeadLetter(parsed.payload, record) !== undefined)
          stale.push(letter.receipt);
        else kept.push(letter.receipt);
      }
      if (stale.length === 0) continue;
      const { refused } = await deps.deadLetters.remove(stale);
      tally.removed += stale.length - refused.length;
      tally.refused += refused.length;
      kept.push(...refused);
    }
  } catch (caught) {
    error = errorName(caught);
  } finally {
    try {
      await deps.deadLetters.release(kept);
    } catch (caught) {
      // They come back by themselves when their hiding ends.
      error ??= errorName(caught);
    }
  }
  return error === undefined ? tally : { ...tally, error };
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'non-error';
}
