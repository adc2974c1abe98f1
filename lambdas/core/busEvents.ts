/**
 * Which events the event producer puts on the EventBridge bus (DESIGN §11; issue 32; decision 0178).
 * Every event costs a `PutEvents` entry ($1 per million) whether or not a rule on the bus routes it,
 * so a deployment says which types its rules want: `all` (the default, what every deployment had),
 * `none`, or a list. Webhooks are not decided here: an endpoint gets each type it subscribes to,
 * whatever the bus takes. Pure: the construct checks the prop with it, the loader reads
 * `POSTDATE_BUS_EVENTS` with it, the producer asks it for each event.
 */
import { MESSAGE_EVENT_TYPES, type MessageEventType } from './messageEvents.js';

/** `all` (every status change), `none`, or the listed types only. */
export type BusEvents = 'all' | 'none' | readonly MessageEventType[];

/** The default: every event on the bus, so no deployment that routes them loses one. */
export const BUS_EVENTS_DEFAULT = 'all' satisfies BusEvents;

/** Whether an event of `type` is put on the bus. */
export function putsOnBus(type: MessageEventType, busEvents: BusEvents): boolean {
  if (busEvents === 'all') return true;
  if (busEvents === 'none') return false;
  return busEvents.includes(type);
}

/** The entries of a list that are no message event type (`webhook.test` is none: it is no status change). */
export function unknownBusEventTypes(list: readonly string[]): string[] {
  return list.filter((entry) => !isMessageEventType(entry));
}

/**
 * The setting as text (`POSTDATE_BUS_EVENTS`, a CDK context value): `all`, `none`, or a
 * comma-separated list of message event types; spacing and case aside. A problem says what is wrong
 * without the variable's name, which the caller adds.
 */
export function readBusEvents(
  text: string,
): { readonly ok: true; readonly busEvents: BusEvents } | { readonly ok: false; readonly problem: string } {
  const entries = text
    .split(',')
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== '');
  const [only] = entries;
  if (entries.length === 1 && (only === 'all' || only === 'none')) return { ok: true, busEvents: only };
  if (entries.length === 0) return { ok: false, problem: 'lists no event type (say none for none)' };
  const unknown = unknownBusEventTypes(entries);
  if (unknown.length > 0) {
    return {
      ok: false,
      problem: `${unknown.map((entry) => `"${entry}"`).join(', ')} is not a message event type (all, none, or a list of ${MESSAGE_EVENT_TYPES.join(', ')})`,
    };
  }
  return { ok: true, busEvents: entries.filter(isMessageEventType) };
}

function isMessageEventType(value: string): value is MessageEventType {
  return (MESSAGE_EVENT_TYPES as readonly string[]).includes(value);
}
