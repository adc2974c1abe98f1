import { type AttachmentView, attachmentView } from '../core/attachments.js';
import { formatLocalDateTime, isTimeZone, localDateTimeAt, type QuietHours } from '../core/localTime.js';
import type { GroupRef } from '../core/messageSchema.js';
import { recipientCounts } from '../core/recipients.js';
import type { PinnedTemplate } from '../core/templateRequests.js';
import { isTestSide } from '../core/testSide.js';
import type { AttemptRecord, LastError, MessageStateRecord } from './messageRecord.js';

/** A message as the API answers it (DESIGN §3, "Response body of a message"). */
export interface MessageView {
  readonly id: string;
  readonly status: string;
  readonly send_at: string;
  /**
   * `send_at` on the wall clock of `time_zone`, `YYYY-MM-DDTHH:MM:SS` (docs/design.md §16 Local time
   * and quiet hours): derived, so it shows when the message goes and never disagrees with `send_at`;
   * null for a message without a zone.
   */
  readonly send_at_local: string | null;
  readonly time_zone: string | null;
  readonly quiet_hours: QuietHours | null;
  readonly not_after: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  readonly attempts: number;
  readonly last_error: LastError | null;
  /** The relay's own id for the message, from the last accepted attempt's 250 reply; null when it named none. */
  readonly provider_message_id: string | null;
  /**
   * The relay of the attempt `provider_message_id` comes from: the last accepted one, or before any
   * was accepted the last one (DESIGN §15; decision 0124); null before any attempt.
   */
  readonly relay: string | null;
  /** Recipients one by one (DESIGN §3, §5). */
  readonly recipients: ReturnType<typeof recipientCounts>;
  /** A template message's template and pinned version (DESIGN §10). */
  readonly template: PinnedTemplate | null;
  /** The attachments, without where their bytes are (DESIGN §3a). */
  readonly attachments: readonly AttachmentView[];
  readonly group: GroupRef | null;
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  readonly rev: number;
  /** Sent with a test key (DESIGN §14): never handed to the relay, its outcome the simulator's. */
  readonly test: boolean;
  /** Only on GET /v1/messages/{id}. */
  readonly history?: readonly AttemptRecord[];
}

/**
 * A message's recipients counted from its record (DESIGN §3): the API's view and the operator's
 * `postdate messages show` (runbook procedure 6) count them alike.
 */
export function recipientsOf(state: MessageStateRecord): ReturnType<typeof recipientCounts> {
  return recipientCounts(state.rcpt_total ?? 0, {
    accepted: state.rcpt_accepted ?? [],
    rejected: state.rcpt_rejected ?? [],
    suppressed: state.rcpt_suppressed ?? [],
  });
}

/** The state record → the API's view. Internal fields (tenant, lease, index keys) never leave. */
export function messageView(state: MessageStateRecord, options: { withHistory: boolean }): MessageView {
  const view: MessageView = {
    id: state.id,
    status: state.status,
    send_at: state.send_at,
    send_at_local: localSendAt(state),
    time_zone: state.time_zone ?? null,
    quiet_hours: state.quiet_hours ?? null,
    not_after: state.not_after ?? null,
    created_at: state.created_at,
    updated_at: state.updated_at,
    attempts: state.attempts ?? 0,
    last_error: state.last_error ?? null,
    provider_message_id: state.provider_message_id ?? null,
    relay: state.relay ?? null,
    recipients: recipientsOf(state),
    template: state.template ?? null,
    attachments: (state.attachments ?? []).map(attachmentView),
    group: state.group ?? null,
    tags: state.tags ?? {},
    metadata: state.metadata ?? {},
    rev: state.rev,
    test: isTestSide(state.tenant),
  };
  return options.withHistory ? { ...view, history: state.history ?? [] } : view;
}

/** `send_at` as the zone's wall clock; null without a zone, or with one this runtime does not know. */
function localSendAt(state: MessageStateRecord): string | null {
  const zone = state.time_zone;
  if (zone === undefined || !isTimeZone(zone)) return null;
  return formatLocalDateTime(localDateTimeAt(new Date(state.send_at), zone));
}
