/**
 * The bounce function's logic (DESIGN §12): each SNS record carries one Amazon SES notification; a
 * permanent bounce or a complaint about a message Postdate sent adds its recipients to that message's
 * tenant's suppression list (reason hard_bounce or complaint, the message's id). What it means is
 * decided by lambdas/core/sesNotification.ts; this runs the reads and writes around it.
 *
 * A record that cannot mean anything (not JSON, not ours, its message gone) is logged and dropped:
 * retrying cannot change it. A failed read or write throws, so Lambda's asynchronous retries (and
 * then the function's on-failure queue) keep the notification; adding an address twice is harmless.
 */
import type { SNSEvent } from 'aws-lambda';
import { readSesNotification } from '../core/sesNotification.js';
import type { Log } from '../ports/Log.js';
import type { SuppressionList } from '../ports/SuppressionList.js';

export interface BouncesDependencies {
  readonly suppressions: SuppressionList;
  /** The tenant of a message, from its state record; undefined when there is no such message. */
  readonly tenantOf: (messageId: string) => Promise<string | undefined>;
  /** POSTDATE_MESSAGE_ID_DOMAIN: a Message-ID of this domain names a Postdate id. */
  readonly messageIdDomain: string;
  readonly now: () => Date;
  readonly log: Log;
  /** Counts an added address (the `SuppressionsAdded` metric). */
  readonly countAdded: (count: number) => void;
}

export interface BouncesReport {
  readonly added: number;
  readonly ignored: number;
}

export function createBouncesHandler(deps: BouncesDependencies): (event: SNSEvent) => Promise<BouncesReport> {
  return async function handleSesNotifications(event: SNSEvent): Promise<BouncesReport> {
    let added = 0;
    let ignored = 0;
    for (const record of event.Records) {
      const snsMessageId = record.Sns.MessageId;
      let notification: unknown;
      try {
        notification = JSON.parse(record.Sns.Message);
      } catch {
        deps.log.warn('bounce function dropped a notification that is not JSON', { snsMessageId });
        ignored += 1;
        continue;
      }
      const meaning = readSesNotification(notification, deps.messageIdDomain);
      if (meaning.kind === 'ignore') {
        deps.log.info('bounce function ignored a notification', { snsMessageId, why: meaning.why });
        ignored += 1;
        continue;
      }
      if (meaning.messageId === null) {
        deps.log.warn(
          'bounce function found no Postdate id in a notification (are original headers included?)',
          {
            snsMessageId,
            reason: meaning.reason,
          },
        );
        ignored += 1;
        continue;
      }
      const tenant = await deps.tenantOf(meaning.messageId);
      if (tenant === undefined) {
        deps.log.warn('bounce function found no message for a notification', {
          snsMessageId,
          id: meaning.messageId,
        });
        ignored += 1;
        continue;
      }
      const now = deps.now();
      for (const address of meaning.addresses) {
        await deps.suppressions.addReported({
          tenant,
          address,
          reason: meaning.reason,
          messageId: meaning.messageId,
          now,
        });
      }
      added += meaning.addresses.length;
      deps.countAdded(meaning.addresses.length);
      deps.log.info('bounce function added addresses to a suppression list', {
        snsMessageId,
        id: meaning.messageId,
        tenant,
        reason: meaning.reason,
        added: meaning.addresses.length,
      });
    }
    return { added, ignored };
  };
}
