/**
 * The end of an ended message's attachments (DESIGN §2, §13; docs/decisions/0090-attachment-end-tagging.md).
 * The event producer sees every write of every state record, so it is the one home of this rule
 * rather than each place a message ends (the sender, the api's cancel, the sweeper, the operator's
 * discard): when a write sets the record's TTL its attachments are tagged `postdate-lifetime=ended`,
 * which the bucket's lifecycle expires; when a retry or a redrive takes a discarded message back and
 * the TTL goes, they are tagged `live` again. A record whose tagging failed is reported for a retry.
 */
import { attachmentLifetimeChange } from '../core/attachments.js';
import { errorForLog } from '../core/errorForLog.js';
import { runWithConcurrency } from '../core/runWithConcurrency.js';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import type { Log } from '../ports/Log.js';
import type { EventRecord } from './eventRecords.js';

/**
 * Tags the attachments of the messages that ended (or came back) in this batch; answers the
 * sequence numbers of the records whose tagging failed. A message's records are tagged in stream
 * order, so an end and a revival in one batch leave the last word.
 */
export async function tagAttachmentLifetimes(
  records: readonly EventRecord[],
  attachments: AttachmentStore,
  log?: Log,
): Promise<{ readonly failed: readonly string[]; readonly tagged: number }> {
  const byMessage = new Map<
    string,
    { sequenceNumber: string; keys: string[]; lifetime: 'ended' | 'live' }[]
  >();
  for (const record of records) {
    const keys = record.state?.attachments?.map((attachment) => attachment.key) ?? [];
    const lifetime = attachmentLifetimeChange(record.previousExpiresAt, record.state?.expires_at);
    if (record.state === null || keys.length === 0 || lifetime === null) continue;
    const changes = byMessage.get(record.state.id) ?? [];
    changes.push({ sequenceNumber: record.sequenceNumber, keys, lifetime });
    byMessage.set(record.state.id, changes);
  }
  const failed: string[] = [];
  let tagged = 0;
  await runWithConcurrency([...byMessage.values()], 8, async (changes) => {
    for (const change of changes) {
      try {
        await Promise.all(change.keys.map((key) => attachments.setLifetime(key, change.lifetime)));
        tagged += change.keys.length;
      } catch (error) {
        failed.push(change.sequenceNumber);
        log?.warn("could not tag a message's attachments", {
          lifetime: change.lifetime,
          error: errorForLog(error),
        });
      }
    }
  });
  return { failed, tagged };
}
