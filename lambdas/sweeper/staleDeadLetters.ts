import { deadLetterPayload, encodeDispatchPayload, parseDispatchPayload } from '../core/dispatchPayload.js';
import { SQS_MAX_BATCH } from '../core/queueLimits.js';
import { isRefused } from '../core/recordLayout.js';
import {
  DEAD_LETTER_RENEW_AGE_MS,
  deadLetterCare,
  deadLetterOwed,
  waitsInDeadLetters,
} from '../core/staleDeadLetter.js';
import type { DeadLetterCopies, DeadLetterCopy } from '../ports/DeadLetterCopies.js';
import type { DueEntry } from '../ports/DueIndex.js';
import type { Log } from '../ports/Log.js';
import type { SweepRecords } from '../ports/SweepRecords.js';

/**
 * How long a walk receives (seconds). Each receive hides its copies until the walk's end and
 * `DEAD_LETTER_HIDE_MARGIN_SECONDS` more, so none comes back to the walk while it lasts (it releases
 * them at its end), and a run that dies mid-walk leaves none hidden longer than that.
 */
export const DEAD_LETTER_WALK_SECONDS = 20;
/** Past the walk's end: its last batch's reads, puts and deletes, then its release. */
export const DEAD_LETTER_HIDE_MARGIN_SECONDS = 10;
/** At most this many copies received per run: a run stays bounded, the next one goes on. */
export const DEAD_LETTER_MAX_RECEIVED = 1000;
/** At most this many copies made from records per run. */
export const DEAD_LETTER_MAX_MADE = 100;

/** Why a run walked the DLQ (decision 0148). */
export type DeadLetterWalk =
  /** More copies than dead messages wait: a stale one, or a second copy of one message. */
  | 'surplus'
  /** Fewer: a waiting dead message has no copy. */
  | 'shortfall'
  /** A copy may have reached the renewal age. */
  | 'renewal';

export interface DeadLetterSweep {
  /** The run walked the DLQ, and why; undefined: it did not. */
  readonly walked: DeadLetterWalk | undefined;
  /** Copies received, each counted once (SQS may hand one back; it is judged once, decision 0167). */
  readonly received: number;
  /** Copies deleted: stale ones, and second copies of one dead message. */
  readonly removed: number;
  /** Copies SQS refused to delete: they stay, and the next run tries again. */
  readonly refused: number;
  /** Waiting dead messages' copies replaced by a fresh one made from the record (they reached the renewal age). */
  readonly renewed: number;
  /** Copies made from the record for waiting dead messages that had none, or none known (decision 0159). */
  readonly made: number;
  /** The name of the error that cut the walk short (the copies it held were released). */
  readonly error?: string;
}

/**
 * What one sweeper environment (a Lambda's warm instance) remembers between its runs: when a copy
 * it saw may reach the renewal age. Forgotten at a cold start; then the waiting dead messages' ages
 * tell whether any copy could be that old (a copy is never older than its message's wait).
 */
export interface RenewalClock {
  nextWalkAt?: number;
}

export interface DeadLetterSweepDeps {
  readonly deadLetters: DeadLetterCopies;
  readonly records: SweepRecords;
  /** Live `dead` messages waiting for an operator, counted this run (each has its copy in the DLQ); undefined: unread. */
  readonly waitingDead: number | undefined;
  /** Every waiting dead message's index entry (`due_at`: since when it waits). */
  readonly listWaitingDead: () => Promise<readonly DueEntry[]>;
  /**
   * The dead messages whose DLQ copy is owed — no put of their death's copy recorded — as this run
   * listed them (counted among `waitingDead`); undefined: unread.
   */
  readonly uncopiedDead: readonly DueEntry[] | undefined;
  readonly now: () => Date;
  readonly renewal: RenewalClock;
  readonly log?: Log;
  /** @default DEAD_LETTER_MAX_RECEIVED */
  readonly maxReceived?: number;
}

interface Tally {
  received: number;
  removed: number;
  refused: number;
  renewed: number;
  made: number;
}

/**
 * Tends the send queue's DLQ (decisions 0141, 0148, 0159). First it makes the copy of each death
 * whose copy's put was never recorded (`makeCopies`: the sender records its move, so a record still
 * owed a copy `DEAD_LETTER_SETTLE_MS` after its death lost it to the send queue's backstop — which
 * moved whatever copy carried the message, unmarked or naming an earlier death, that no redrive
 * sends — or a write failed; a copy the backstop parked beside it is one too many for the count, and
 * the walk that follows takes it off, core/staleDeadLetter.ts). Then: a live dead message's copy is its
 * only one, so one GetQueueAttributes compared with the count of waiting dead messages tells when to
 * walk: more copies (a stale one: a manual retry gave its message rev + 1, or its message died again;
 * or a second copy of one message), fewer (a dead message without a copy), or — the counts equal —
 * when a copy may have reached the renewal age. A walk receives every copy (hidden until it ends;
 * one SQS hands back is known by its SQS id: judged once, then only released, never taken for a
 * second copy), reads their records consistently, and applies core/staleDeadLetter.ts
 * `deadLetterCare`: deletes the stale (a copy of an earlier death too, decision 0149) and the second
 * copies, replaces an old copy by a fresh one made from the record (sent first, then the old one
 * deleted), and makes every other copy visible again at once when it ends, so `dlq show` and a
 * redrive see it. A walk that saw every copy then makes one from the record for each waiting dead
 * message it found none of (`deadLetterOwed`). A copy whose record was not read, or whose body is not
 * a copy, is left alone.
 */
export async function removeStaleDeadLetters(deps: DeadLetterSweepDeps): Promise<DeadLetterSweep> {
  const tally: Tally = { received: 0, removed: 0, refused: 0, renewed: 0, made: 0 };
  // Made first, the copies are in the depth read next (in AWS, a minute or so later).
  const uncopied = await makeCopies(deps, deps.uncopiedDead ?? [], tally, { record: true }).then(
    () => undefined,
    (error: unknown) => errorName(error),
  );
  const swept = await tendByCount(deps, tally);
  return swept.error === undefined && uncopied !== undefined ? { ...swept, error: uncopied } : swept;
}

async function tendByCount(deps: DeadLetterSweepDeps, tally: Tally): Promise<DeadLetterSweep> {
  let walked: DeadLetterWalk | undefined;
  try {
    const depth = await deps.deadLetters.depth();
    walked = await walkNeeded(deps, depth);
    if (walked === undefined) return { walked, ...tally };
    const walk = await walkCopies(deps, tally);
    // Only a walk that saw every copy can tell a message has none: a copy someone else holds
    // (in flight at the start) or one past the bound would be made twice.
    if (walk.complete && depth.inFlight === 0 && deps.waitingDead !== undefined) {
      const made = walk.waiting.size < deps.waitingDead ? await makeMissingCopies(deps, walk, tally) : 0;
      const madeRenewAt = made > 0 ? deps.now().getTime() + DEAD_LETTER_RENEW_AGE_MS : undefined;
      const next = Math.min(walk.nextRenewalAt ?? Infinity, madeRenewAt ?? Infinity);
      if (Number.isFinite(next)) deps.renewal.nextWalkAt = next;
      else delete deps.renewal.nextWalkAt;
    } else {
      delete deps.renewal.nextWalkAt;
    }
    return walk.error === undefined ? { walked, ...tally } : { walked, ...tally, error: walk.error };
  } catch (error) {
    delete deps.renewal.nextWalkAt;
    return { walked, ...tally, error: errorName(error) };
  }
}

async function walkNeeded(
  deps: DeadLetterSweepDeps,
  depth: { visible: number; inFlight: number },
): Promise<DeadLetterWalk | undefined> {
  const held = depth.visible + depth.inFlight;
  if (deps.waitingDead === undefined) return depth.visible > 0 ? 'surplus' : undefined;
  if (held > deps.waitingDead) return depth.visible > 0 ? 'surplus' : undefined;
  if (held < deps.waitingDead) return 'shortfall';
  if (depth.visible === 0) return undefined;
  const now = deps.now().getTime();
  if (deps.renewal.nextWalkAt === undefined) {
    // A cold start: no copy is older than its message's wait in `dead`.
    const since = (await deps.listWaitingDead()).map((entry) => Date.parse(entry.due_at));
    const oldest = Math.min(...since.filter(Number.isFinite));
    if (!Number.isFinite(oldest)) return undefined;
    deps.renewal.nextWalkAt = oldest + DEAD_LETTER_RENEW_AGE_MS;
  }
  return now >= deps.renewal.nextWalkAt ? 'renewal' : undefined;
}

interface Walk {
  /** It received until the DLQ had nothing more to give, with no error. */
  readonly complete: boolean;
  readonly error: string | undefined;
  /** The waiting dead messages whose copy is kept (or was renewed) by this walk. */
  readonly waiting: ReadonlySet<string>;
  /** When the first of the copies kept reaches the renewal age (undefined: none kept). */
  readonly nextRenewalAt: number | undefined;
}

async function walkCopies(deps: DeadLetterSweepDeps, tally: Tally): Promise<Walk> {
  const maxReceived = deps.maxReceived ?? DEAD_LETTER_MAX_RECEIVED;
  const endsAt = deps.now().getTime() + DEAD_LETTER_WALK_SECONDS * 1000;
  /**
   * Every copy this walk received or put, by its SQS id. SQS may hand a copy back (a standard queue
   * delivers at least once): met again, it is the same copy, judged already — never a second one.
   */
  const seen = new Set<string>();
  /** The copies released when the walk ends, by SQS id: the newest receipt (an older one moves nothing). */
  const kept = new Map<string, string>();
  const waiting = new Set<string>();
  let nextRenewalAt: number | undefined;
  const keepsUntil = (sentAt: number) => {
    const at = sentAt + DEAD_LETTER_RENEW_AGE_MS;
    nextRenewalAt = nextRenewalAt === undefined ? at : Math.min(nextRenewalAt, at);
  };
  /** Copies SQS handed over, repeats included: what bounds the walk. */
  let handed = 0;
  let complete = false;
  let error: string | undefined;
  try {
    while (handed < maxReceived) {
      const left = endsAt - deps.now().getTime();
      if (left <= 0) break;
      const batch = await deps.deadLetters.receive(
        Math.min(SQS_MAX_BATCH, maxReceived - handed),
        Math.ceil(left / 1000) + DEAD_LETTER_HIDE_MARGIN_SECONDS,
      );
      if (batch.length === 0) {
        complete = true;
        break;
      }
      handed += batch.length;
      const firstSight: DeadLetterCopy[] = [];
      for (const letter of batch) {
        if (seen.has(letter.messageId)) kept.set(letter.messageId, letter.receipt);
        else {
          seen.add(letter.messageId);
          firstSight.push(letter);
        }
      }
      tally.received += firstSight.length;
      if (firstSight.length === 0) continue;
      const copies = firstSight.map((letter) => ({ letter, parsed: parseDispatchPayload(letter.body) }));
      const records = await deps.records.read(
        copies.flatMap(({ parsed }) => (parsed.ok ? [parsed.payload.id] : [])),
      );
      const at = deps.now();
      const now = at.getTime();
      const gone: DeadLetterCopy[] = [];
      const replaced = new Set<string>();
      /** Copies to renew, each with the fresh copy made from its record. */
      const old: { letter: DeadLetterCopy; body: string }[] = [];
      for (const { letter, parsed } of copies) {
        const record = parsed.ok ? records.get(parsed.payload.id) : undefined;
        // An unread record is not a gone one (a batch read may leave keys unprocessed): it stays, as
        // does the copy of a record this stack refuses (a newer writer's, decision 0166).
        if (!parsed.ok || record === undefined || isRefused(record)) {
          kept.set(letter.messageId, letter.receipt);
          continue;
        }
        const { id, rev, dlq, death } = parsed.payload;
        const care = deadLetterCare(
          { rev, dlq: dlq === true, death, ageMs: now - letter.sentAt },
          record,
          waiting.has(id),
          at,
        );
        if (care.kind === 'delete') gone.push(letter);
        else if (care.kind === 'renew')
          old.push({ letter, body: encodeDispatchPayload(deadLetterPayload({ ...record, id })) });
        else kept.set(letter.messageId, letter.receipt);
        if (care.kind !== 'delete' && dlq === true && waitsInDeadLetters(record) && record.rev === rev) {
          waiting.add(id);
          if (care.kind === 'keep') keepsUntil(letter.sentAt);
        }
      }
      // A renewal sends first: a crash before the delete leaves two copies (the next walk deletes
      // one), never none. A refused send keeps the old copy, which the next walk renews.
      const renewedIds = old.length === 0 ? [] : await deps.deadLetters.put(old.map(({ body }) => body));
      old.forEach(({ letter }, i) => {
        const renewedId = renewedIds[i];
        if (renewedId === undefined) {
          kept.set(letter.messageId, letter.receipt);
          keepsUntil(letter.sentAt);
          return;
        }
        // Received later in this walk, the fresh copy is left alone.
        seen.add(renewedId);
        keepsUntil(now);
        tally.renewed++;
        replaced.add(letter.receipt);
        gone.push(letter);
      });
      if (gone.length === 0) continue;
      const { refused } = await deps.deadLetters.remove(gone.map((letter) => letter.receipt));
      const removed = gone.filter((letter) => !refused.includes(letter.receipt));
      tally.removed += removed.filter((letter) => !replaced.has(letter.receipt)).length;
      tally.refused += refused.length;
      for (const letter of gone)
        if (refused.includes(letter.receipt)) kept.set(letter.messageId, letter.receipt);
    }
  } catch (caught) {
    error = errorName(caught);
  } finally {
    try {
      await deps.deadLetters.release([...kept.values()]);
    } catch (caught) {
      // They come back by themselves when their hiding ends.
      error ??= errorName(caught);
    }
  }
  return { complete: complete && error === undefined, error, waiting, nextRenewalAt };
}

/**
 * Makes a DLQ copy from the record of each of `entries` that `deadLetterOwed` says is owed one (as
 * after a whole walk that found none), oldest first, at most `DEAD_LETTER_MAX_MADE`: what the sender
 * moves to the DLQ (sender/copyRun.ts `moveToDeadLetters`), `{v, id, rev, "dlq": true, "death"}`.
 * `record`: each put made is then recorded on the record (store/deadLetterEntry.ts) — for deaths whose
 * put never was; a recorded one that moved on since its read is logged (a record that stays owed
 * would get a copy each run, which the walk deletes). A refused put leaves the record as it was: the
 * next run tries again. Returns how many it made.
 */
async function makeCopies(
  deps: DeadLetterSweepDeps,
  entries: readonly DueEntry[],
  tally: Tally,
  options: { readonly record: boolean },
): Promise<number> {
  const oldest = [...entries].sort((a, b) => a.due_at.localeCompare(b.due_at)).slice(0, DEAD_LETTER_MAX_MADE);
  if (oldest.length === 0) return 0;
  const records = await deps.records.read(oldest.map((entry) => entry.id));
  const now = deps.now();
  // A record this stack refuses (a newer writer's, decision 0166) is not ours to judge.
  const letters = [...records].flatMap(([id, record]) =>
    !isRefused(record) && deadLetterOwed(record, { complete: true, copyKept: false }, now)
      ? [deadLetterPayload({ ...record, id })]
      : [],
  );
  if (letters.length === 0) return 0;
  const made = await deps.deadLetters.put(letters.map((letter) => encodeDispatchPayload(letter)));
  let count = 0;
  for (const [i, letter] of letters.entries()) {
    if (made[i] === undefined) continue;
    count++;
    tally.made++;
    if (!options.record) continue;
    if ((await deps.records.recordDeadLetter(letter)) === 'moved-on') {
      deps.log?.warn('sweeper made a DLQ copy of a death whose record moved on before it was recorded', {
        messageId: letter.id,
        rev: letter.rev,
        death: letter.death,
      });
    }
  }
  return count;
}

/** Makes a copy from the record for each waiting dead message the walk found none of (decision 0148). */
async function makeMissingCopies(deps: DeadLetterSweepDeps, walk: Walk, tally: Tally): Promise<number> {
  const missing = (await deps.listWaitingDead()).filter((entry) => !walk.waiting.has(entry.id));
  return makeCopies(deps, missing, tally, { record: false });
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'non-error';
}
