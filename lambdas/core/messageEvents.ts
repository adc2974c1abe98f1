/**
 * Events (DESIGN §11): every status change of a message after acceptance is one event, derived
 * here from a stream record's two images, so nothing that writes a record can forget to emit one.
 * Pure: no clock (the event's time is the record's `updated_at`), no I/O.
 *
 * The event types are derived from MESSAGE_STATUSES: a new status is a new event type without an
 * edit here. `sending` is the one status that is not an event (a lease, not an outcome).
 */
import { createHash } from 'node:crypto';
import { MESSAGE_STATUS, MESSAGE_STATUSES, type MessageStatus } from './messageStatus.js';
import { publicTenant } from './testSide.js';

/** The `source` of every event on the EventBridge bus (DESIGN §11); its `detail-type` is the type. */
export const EVENT_SOURCE = 'postdate';

/** The statuses that are events: all but `sending`. */
export type EventStatus = Exclude<MessageStatus, typeof MESSAGE_STATUS.sending>;
export type MessageEventType = `message.${EventStatus}`;

export const EVENT_STATUSES: readonly EventStatus[] = MESSAGE_STATUSES.filter(
  (status): status is EventStatus => status !== MESSAGE_STATUS.sending,
);

export function eventTypeOf(status: EventStatus): MessageEventType {
  return `message.${status}`;
}

export const MESSAGE_EVENT_TYPES: readonly MessageEventType[] = EVENT_STATUSES.map(eventTypeOf);

/** The event `POST /v1/webhooks/{id}/test` delivers; only ever to that one endpoint. */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';

export type EventType = MessageEventType | typeof WEBHOOK_TEST_EVENT_TYPE;

/** Every type an endpoint may subscribe to (`events` of POST /v1/webhooks). */
export const EVENT_TYPES: readonly EventType[] = [...MESSAGE_EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE];

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value);
}

/** The fields of a state record's image that decide whether, and which, event it is. */
export interface StatusImage {
  readonly id: string;
  readonly tenant: string;
  readonly status: MessageStatus;
  readonly rev: number;
  /** Written by every transition; the event's `created_at` and part of its id. */
  readonly updated_at: string;
  /** SMTP attempts so far (DESIGN §2): a move into `retrying` that did not count one is no event. */
  readonly attempts: number;
}

/** One record of the table's stream, reduced to what events read. */
export interface ImageChange {
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE' | undefined;
  /** `null` for an INSERT (and for a record the stream gave without its old image). */
  readonly before: StatusImage | null;
  readonly after: StatusImage | null;
}

/** A status change that is an event (DESIGN §11). */
export interface StatusChange {
  readonly eventId: string;
  readonly type: MessageEventType;
  readonly createdAt: string;
  readonly tenant: string;
  readonly messageId: string;
  readonly status: EventStatus;
  /** The status the old image had; `null` at acceptance (an INSERT). */
  readonly previousStatus: MessageStatus | null;
}

/**
 * The event a stream record is, or `null`: an INSERT (acceptance: `scheduled`, or `superseded` by a
 * newer version of its group) or a MODIFY whose status changed, unless the new status is `sending`.
 * A MODIFY that keeps the status (a reschedule, a lease taken over, a sweep) and a REMOVE (TTL) are
 * no event. Nor is a claim given back (decisions 0223, 0280): a move into `retrying` whose `attempts`
 * did not grow (the relay found down, a throttle, a read that failed, too little time), or back into
 * `scheduled` from `sending`, is no attempt (DESIGN §2: "a copy handed back unsent … is no attempt")
 * and no outcome; `message.retrying` says that an attempt failed and another will follow. The view
 * keeps its `last_error`; a later event carries it.
 */
export function deriveStatusChange(change: ImageChange): StatusChange | null {
  const { after, before } = change;
  if (after === null) return null;
  if (change.eventName !== 'INSERT' && change.eventName !== 'MODIFY') return null;
  if (after.status === MESSAGE_STATUS.sending) return null;
  if (change.eventName === 'MODIFY' && (before === null || before.status === after.status)) return null;
  if (change.eventName === 'MODIFY' && isGiveBack(before, after)) return null;
  const status: EventStatus = after.status;
  return {
    eventId: messageEventId(after),
    type: eventTypeOf(status),
    createdAt: after.updated_at,
    tenant: after.tenant,
    messageId: after.id,
    status,
    previousStatus: change.eventName === 'INSERT' ? null : (before?.status ?? null),
  };
}

/**
 * A move that counted no attempt into `retrying` (decision 0223), or a claim of a `scheduled` message
 * given back, `sending` → `scheduled` (decision 0280; a manual retry's move into `scheduled` is an event).
 */
function isGiveBack(before: StatusImage | null, after: StatusImage): boolean {
  if (before === null || after.attempts > before.attempts) return false;
  if (after.status === MESSAGE_STATUS.retrying) return true;
  return after.status === MESSAGE_STATUS.scheduled && before.status === MESSAGE_STATUS.sending;
}

const EVENT_ID_HEX = 32;

/** The id of every event, a message's and a `webhook.test`'s alike: its `webhook-id` header. */
export const EVENT_ID_PATTERN = new RegExp(`^evt_[0-9a-f]{${EVENT_ID_HEX}}$`);

/**
 * `evt_` + 32 hex characters of SHA-256(id, rev, status, updated_at): the same image always gives
 * the same id, so a replayed stream batch (or a second reader of the stream) produces the same
 * events and consumers dedupe on it. `updated_at` is in it because one revision can enter the same
 * status twice (`retrying` after each failed attempt); `rev` and `status` keep two transitions
 * written in one millisecond apart.
 */
export function messageEventId(image: Pick<StatusImage, 'id' | 'rev' | 'status' | 'updated_at'>): string {
  const digest = createHash('sha256')
    .update([image.id, String(image.rev), image.status, image.updated_at].join('\0'), 'utf8')
    .digest('hex');
  return `evt_${digest.slice(0, EVENT_ID_HEX)}`;
}

/** The event as it is published and delivered (DESIGN §11). */
export interface PostdateEvent<Data = Readonly<Record<string, unknown>>> {
  readonly id: string;
  readonly type: EventType;
  readonly created_at: string;
  readonly tenant: string;
  readonly data: Data;
}

/**
 * The event of a status change, with the message's view (DESIGN §3, without history) as its data
 * plus `previous_status`. The view is built by the caller from the new image. The event names the
 * tenant by its public name; a test side's event says so with the view's `test: true` (DESIGN §14).
 */
export function messageEvent<View extends object>(
  change: StatusChange,
  view: View,
): PostdateEvent<View & { readonly previous_status: MessageStatus | null }> {
  return {
    id: change.eventId,
    type: change.type,
    created_at: change.createdAt,
    tenant: publicTenant(change.tenant),
    data: { ...view, previous_status: change.previousStatus },
  };
}
