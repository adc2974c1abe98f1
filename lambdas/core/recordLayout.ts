/**
 * Which state records this stack can handle (DESIGN §4, the transactional outbox; decision 0166).
 * The outbox helper ships in the application, so it can be newer than the stack that sends what it
 * writes: a newer helper may write attributes whose rules an older sender ignores (it would send
 * inside quiet hours it cannot read) or a status no older part knows. Every state record says the
 * layout its writer followed (`layout`); a part of the stack that meets a layout above its own, or
 * a status it does not know, refuses the record — does not dispatch or send it, counts it and logs
 * it; the sweeper leaves it unstamped and its gauge holds the alarm (metricNames.ts, `RefusedRecords`)
 * — and the operator upgrades the stack, after which the sweeper dispatches what was refused at once.
 * The stack is upgraded before the application.
 */
import { isMessageStatus } from './messageStatus.js';

/**
 * The layout of the state records this code writes and can follow. Raise it with any change of the
 * state record that an older sender, relay or sweeper would get wrong by ignoring it (a new
 * attribute with a rule, a new status, other index shards), and only then.
 */
export const RECORD_LAYOUT = 1;

/** Why a record is refused: written by a newer writer, by what shows it. */
export type RecordRefusal =
  | { readonly kind: 'newer-layout'; readonly reason: string }
  | { readonly kind: 'unknown-status'; readonly reason: string };

/**
 * Whether this stack must refuse a state record, from its `layout` and `status` as read (any
 * value): undefined when this rule has nothing against it. A record without a layout was written
 * before layouts (layout 1); a layout that is not a whole number from 1 is none this code wrote. A
 * status that is not a string at all is no writer's word but a broken record, left to the reader's
 * own shape check.
 */
export function recordRefusal(record: {
  readonly layout?: unknown;
  readonly status?: unknown;
}): RecordRefusal | undefined {
  const layout = record.layout;
  if (layout !== undefined && !(Number.isSafeInteger(layout) && (layout as number) >= 1)) {
    return {
      kind: 'newer-layout',
      reason: `layout ${String(layout).slice(0, 32)} is no layout this stack knows`,
    };
  }
  if (typeof layout === 'number' && layout > RECORD_LAYOUT) {
    return { kind: 'newer-layout', reason: `layout ${layout} is newer than this stack's ${RECORD_LAYOUT}` };
  }
  if (typeof record.status === 'string' && !isMessageStatus(record.status)) {
    return {
      kind: 'unknown-status',
      reason: `status ${JSON.stringify(record.status.slice(0, 32))} is not one this stack knows`,
    };
  }
  return undefined;
}

/**
 * A state record this stack refuses, as its readers hand it on in place of the record — never as
 * absent: the message exists and waits for the upgrade. The sweeper skips it without a stamp and
 * counts it in its gauge (core/sweepDecision.ts), the sender refuses its copy (core/sendDecision.ts),
 * the API answers that the stack must be upgraded (decision 0166).
 */
export interface RefusedRecord {
  readonly id: string;
  /** Its tenant, when it names one: the API shows a message to its own tenant only. */
  readonly tenant?: string;
  readonly refusal: RecordRefusal;
}

/**
 * {@link recordRefusal} on a state record as read from the table, before any shape check: a newer
 * writer's record is refused, whatever else it holds. Undefined when the rule has nothing against it
 * (or the item names no message): the reader's own shape check comes next.
 */
export function refusedRecord(item: Readonly<Record<string, unknown>>): RefusedRecord | undefined {
  if (typeof item.id !== 'string') return undefined;
  const refusal = recordRefusal(item);
  if (refusal === undefined) return undefined;
  return { id: item.id, ...(typeof item.tenant === 'string' ? { tenant: item.tenant } : {}), refusal };
}

/** Whether a read is a refusal rather than the record. */
export function isRefused<T extends object>(read: T | RefusedRecord): read is RefusedRecord {
  return 'refusal' in read;
}
