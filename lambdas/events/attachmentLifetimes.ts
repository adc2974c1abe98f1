/**
 * The lifetime of a message's attachments (DESIGN §2, §13; docs/decisions/0090, 0144). The event
 * producer sees every write of every state record, so it is the one home of this rule rather than
 * each place a message is accepted, ends or comes back (the api, the outbox, the sender, the
 * sweeper, the operator's discard). An enqueue writes its objects tagged `pending` (the bucket
 * expires them a day later); a state record's first write, and every write that sets or removes
 * its TTL, has them tagged from the record as it is now: `live` (kept) or `ended` (expired a
 * retention after the end: an object written on an earlier UTC day is copied onto itself, as the
 * lifecycle counts from the write; decision 0191). A record whose tagging failed is reported for a retry.
 *
 * The tag is read off the current record, never the stream image, so that a record replayed long
 * after (`postdate event-failures redrive`) tags what a newer write would and cannot undo it. A
 * tagging is then confirmed by a second read: when the record changed in between (a redrive beside
 * the live event source), it is tagged again, so the last tag put always agrees with a read made
 * after it.
 */
import {
  type AttachmentLifetime,
  attachmentLifetime,
  changesAttachmentLifetime,
  endedObjectWrite,
} from '../core/attachments.js';
import { errorForLog } from '../core/errorForLog.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import type { Log } from '../ports/Log.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import type { EventRecord } from './eventRecords.js';

export interface AttachmentLifetimeDeps {
  readonly store: AttachmentStore;
  /** The message's state record as it is now, read strongly consistent; undefined when it is gone. */
  readonly currentState: (id: string) => Promise<MessageStateRecord | undefined>;
}

/** What the tagging reads beside the wiring: the clock (the end is when it runs) and the retention. */
interface LifetimeClock {
  readonly now: () => Date;
  readonly retentionDays: number;
}

/** Rounds of tag-then-read before a message's records are reported for a retry instead. */
const CONFIRMATIONS = 3;

/**
 * Tags the attachments of the messages written first, ended or taken back in this batch; answers
 * the sequence numbers of the records whose tagging failed. One tagging per message per batch,
 * whatever its number of records: each decides from the current record alike.
 */
export async function tagAttachmentLifetimes(
  records: readonly EventRecord[],
  deps: AttachmentLifetimeDeps & LifetimeClock,
  log?: Log,
): Promise<{ readonly failed: readonly string[]; readonly tagged: number; readonly rewritten: number }> {
  const byMessage = new Map<string, { sequenceNumbers: string[]; keys: Set<string> }>();
  for (const record of records) {
    const keys = record.state?.attachments?.map((attachment) => attachment.key) ?? [];
    if (record.state === null || keys.length === 0) continue;
    const write = {
      inserted: record.change.eventName === 'INSERT',
      expiresAtBefore: record.previousExpiresAt,
      expiresAtAfter: record.state.expires_at,
    };
    if (!changesAttachmentLifetime(write)) continue;
    const message = byMessage.get(record.state.id) ?? { sequenceNumbers: [], keys: new Set() };
    message.sequenceNumbers.push(record.sequenceNumber);
    for (const key of keys) message.keys.add(key);
    byMessage.set(record.state.id, message);
  }
  const failed: string[] = [];
  let tagged = 0;
  let rewritten = 0;
  await runWithConcurrency([...byMessage], 8, async ([id, { sequenceNumbers, keys }]) => {
    try {
      const done = await tagUntilConfirmed(deps, id, [...keys]);
      tagged += done.tagged;
      rewritten += done.rewritten;
    } catch (error) {
      failed.push(...sequenceNumbers);
      log?.warn("could not tag a message's attachments", { message_id: id, error: errorForLog(error) });
    }
  });
  return { failed, tagged, rewritten };
}

/**
 * Tags each key from the current record, then reads it again until a read agrees with the tags put.
 * An `ended` object written before the end's UTC day is copied onto itself (endedObjectWrite); a
 * later round finds the copy young and only tags it.
 */
async function tagUntilConfirmed(
  deps: AttachmentLifetimeDeps & LifetimeClock,
  id: string,
  keys: string[],
): Promise<{ tagged: number; rewritten: number }> {
  let lifetimes = lifetimesNow(keys, (await deps.currentState(id)) ?? null);
  let tagged = 0;
  let rewritten = 0;
  const tag = async (key: string, lifetime: AttachmentLifetime): Promise<void> => {
    if (lifetime === 'live') {
      await deps.store.setLifetime(key, lifetime);
      return;
    }
    const endedAt = deps.now();
    const done = await deps.store.endLifetime(
      key,
      (writtenAt) => endedObjectWrite(writtenAt, endedAt, deps.retentionDays) === 'copy',
    );
    if (done === 'rewritten') rewritten++;
  };
  for (let round = 0; round < CONFIRMATIONS; round++) {
    await Promise.all(keys.map((key, n) => tag(key, lifetimes[n] ?? 'ended')));
    tagged += keys.length;
    const after = lifetimesNow(keys, (await deps.currentState(id)) ?? null);
    if (after.every((lifetime, n) => lifetime === lifetimes[n])) return { tagged, rewritten };
    lifetimes = after;
  }
  throw new Error(`the message's record changed under ${CONFIRMATIONS} taggings in a row`);
}

function lifetimesNow(keys: readonly string[], current: MessageStateRecord | null): AttachmentLifetime[] {
  return keys.map((key) => attachmentLifetime(key, current));
}
