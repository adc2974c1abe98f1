/**
 * What an Amazon SES bounce or complaint notification means for the suppression list (DESIGN §12):
 * pure, over the JSON SES publishes to SNS (notification-contents: `notificationType` — or
 * `eventType` for configuration-set event publishing — with `mail`, and `bounce` or `complaint`).
 *
 * - A `Permanent` bounce adds its `bouncedRecipients` (reason hard_bounce); `Transient` and
 *   `Undetermined` bounces add nothing (the mailbox may come back; our own retries cover them).
 * - A complaint adds its `complainedRecipients` (reason complaint), but one whose
 *   `complaintFeedbackType` is `not-spam`: SES documents that as a recipient's correction (a message
 *   wrongly marked as spam), so it adds nothing.
 * - Everything else (deliveries, sends, opens…) is ignored.
 *
 * The tenant is not in the notification: it is found through the message. SES copies the original
 * headers into `mail.headers` (when the identity's notifications include them, and always for event
 * publishing), and every message Postdate sends carries `X-Postdate-Id: {id}` (a header a request
 * can never set: it is reserved) and `Message-ID: <{id}@{POSTDATE_MESSAGE_ID_DOMAIN}>`. The id is
 * read from the first, else from the second (`mail.commonHeaders.messageId` too) when its domain
 * is ours; the message's state record then names the tenant. A notification of a mail Postdate did
 * not send (no such header) is ignored.
 */
import { isMessageId } from './ids.js';
import { SUPPRESSION_REASON, type SuppressionReason, suppressionKey } from './suppressions.js';

export type SesNotificationMeaning =
  | { readonly kind: 'ignore'; readonly why: string }
  | {
      readonly kind: 'suppress';
      readonly reason: SuppressionReason;
      /** Normalised addresses (lambdas/core/suppressions.ts), distinct. */
      readonly addresses: readonly string[];
      /** The Postdate message the notification is about; null when the mail carries no id of ours. */
      readonly messageId: string | null;
    };

export function readSesNotification(notification: unknown, messageIdDomain: string): SesNotificationMeaning {
  const root = record(notification);
  if (root === undefined) return { kind: 'ignore', why: 'not a JSON object' };
  const type = root.notificationType ?? root.eventType;
  let reason: SuppressionReason;
  let recipients: unknown;
  if (type === 'Bounce') {
    const bounce = record(root.bounce);
    if (bounce?.bounceType !== 'Permanent') return { kind: 'ignore', why: 'not a permanent bounce' };
    reason = SUPPRESSION_REASON.hardBounce;
    recipients = bounce.bouncedRecipients;
  } else if (type === 'Complaint') {
    const complaint = record(root.complaint);
    if (complaint?.complaintFeedbackType === 'not-spam')
      return { kind: 'ignore', why: 'a not-spam correction' };
    reason = SUPPRESSION_REASON.complaint;
    recipients = complaint?.complainedRecipients;
  } else {
    return { kind: 'ignore', why: `a ${typeof type === 'string' ? type : 'untyped'} notification` };
  }
  const addresses = [
    ...new Set(
      (Array.isArray(recipients) ? recipients : [])
        .map((recipient) => record(recipient)?.emailAddress)
        .map((address) => (typeof address === 'string' ? suppressionKey(address) : undefined))
        .filter((address): address is string => address !== undefined),
    ),
  ];
  if (addresses.length === 0) return { kind: 'ignore', why: 'no recipient address' };
  return { kind: 'suppress', reason, addresses, messageId: postdateIdOf(record(root.mail), messageIdDomain) };
}

/** The Postdate id of the mail: its X-Postdate-Id header, else a Message-ID of our domain. */
function postdateIdOf(mail: Record<string, unknown> | undefined, messageIdDomain: string): string | null {
  if (mail === undefined) return null;
  const headers = (Array.isArray(mail.headers) ? mail.headers : [])
    .map(record)
    .filter((header): header is Record<string, unknown> => header !== undefined);
  const valuesOf = (name: string) =>
    headers
      .filter((header) => typeof header.name === 'string' && header.name.toLowerCase() === name)
      .map((header) => header.value)
      .filter((value): value is string => typeof value === 'string');
  const postdateId = valuesOf('x-postdate-id')
    .map((value) => value.trim())
    .find(isMessageId);
  if (postdateId !== undefined) return postdateId;
  const commonMessageId = record(mail.commonHeaders)?.messageId;
  const messageIds = [
    ...valuesOf('message-id'),
    ...(typeof commonMessageId === 'string' ? [commonMessageId] : []),
  ];
  const domain = messageIdDomain.toLowerCase();
  for (const value of messageIds) {
    const match = /^\s*<([^@>\s]+)@([^>\s]+)>\s*$/.exec(value);
    if (match?.[1] !== undefined && match[2]?.toLowerCase() === domain && isMessageId(match[1]))
      return match[1];
  }
  return null;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
