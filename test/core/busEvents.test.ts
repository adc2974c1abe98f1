import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { putsOnBus, readBusEvents, unknownBusEventTypes } from '../../lambdas/core/busEvents.js';
import { MESSAGE_EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../../lambdas/core/messageEvents.js';

/**
 * Which events go on the EventBridge bus (DESIGN §11, issue 32, decision 0178): `all` (every status
 * change, the default), `none`, or the listed types. Webhooks are not decided here: an endpoint gets
 * each type it subscribes to whatever the bus takes (test/webhooks/events.test.ts).
 */

const typeArb = fc.constantFrom(...MESSAGE_EVENT_TYPES);
const listArb = fc.subarray([...MESSAGE_EVENT_TYPES], { minLength: 1 });
/** A list, and the same types shuffled with some repeated. */
const reorderedArb = listArb.chain((list) =>
  fc
    .tuple(fc.shuffledSubarray(list, { minLength: list.length }), fc.array(fc.constantFrom(...list)))
    .map(([shuffled, repeats]) => ({ list, reordered: [...shuffled, ...repeats] })),
);
/** Text that is no message event type, however it is spaced or cased. */
const notATypeArb = fc
  .string({ minLength: 1, maxLength: 20 })
  .filter((text) => !text.includes(',') && text.trim() !== '')
  .filter((text) => !(MESSAGE_EVENT_TYPES as readonly string[]).includes(text.trim().toLowerCase()))
  .filter((text) => !['all', 'none'].includes(text.trim().toLowerCase()));

describe('putsOnBus (core/busEvents.ts)', () => {
  it("puts every type on the bus with 'all' and none with 'none'", () => {
    fc.assert(
      fc.property(typeArb, (type) => {
        expect(putsOnBus(type, 'all')).toBe(true);
        expect(putsOnBus(type, 'none')).toBe(false);
      }),
    );
  });

  it('takes, from a list written as POSTDATE_BUS_EVENTS, exactly the types written (duplicates and order aside)', () => {
    fc.assert(
      fc.property(fc.array(typeArb, { minLength: 1 }), (written) => {
        const read = readBusEvents(written.join(','));
        if (!read.ok) throw new Error(read.problem);
        const taken = MESSAGE_EVENT_TYPES.filter((type) => putsOnBus(type, read.busEvents));
        expect(new Set(taken)).toEqual(new Set(written));
      }),
    );
  });

  it('takes for the union of two lists what either takes', () => {
    fc.assert(
      fc.property(listArb, listArb, typeArb, (a, b, type) => {
        expect(putsOnBus(type, [...a, ...b])).toBe(putsOnBus(type, a) || putsOnBus(type, b));
      }),
    );
  });

  it("does not care for a list's order or its duplicates", () => {
    fc.assert(
      fc.property(reorderedArb, typeArb, ({ list, reordered }, type) => {
        expect(putsOnBus(type, reordered)).toBe(putsOnBus(type, list));
      }),
    );
  });

  it('in examples: the listed types and no other; the test delivery is no bus type', () => {
    expect(putsOnBus('message.sent', ['message.sent', 'message.dead'])).toBe(true);
    expect(putsOnBus('message.dead', ['message.sent', 'message.dead'])).toBe(true);
    expect(putsOnBus('message.scheduled', ['message.sent', 'message.dead'])).toBe(false);
    expect(putsOnBus('message.sent', ['message.scheduled'])).toBe(false);
    // `webhook.test` is no status change: no setting can name it, and `all` does not mean it.
    expect(MESSAGE_EVENT_TYPES as readonly string[]).not.toContain(WEBHOOK_TEST_EVENT_TYPE);
    expect(readBusEvents(WEBHOOK_TEST_EVENT_TYPE).ok).toBe(false);
  });
});

describe('readBusEvents: POSTDATE_BUS_EVENTS as text', () => {
  it("reads 'all', 'none' and a comma-separated list back to what was written, spacing and case aside", () => {
    fc.assert(
      fc.property(listArb, fc.constantFrom('', ' ', '  '), fc.boolean(), (list, space, upper) => {
        const text = list.map((type) => `${space}${upper ? type.toUpperCase() : type}${space}`).join(',');
        expect(readBusEvents(text)).toEqual({ ok: true, busEvents: list });
      }),
    );
    expect(readBusEvents('all')).toEqual({ ok: true, busEvents: 'all' });
    expect(readBusEvents(' None ')).toEqual({ ok: true, busEvents: 'none' });
  });

  it('refuses a list with any entry that is not a message event type, naming that entry', () => {
    fc.assert(
      fc.property(listArb, notATypeArb, fc.nat(), (list, stranger, at) => {
        const entries: string[] = [...list];
        entries.splice(at % (entries.length + 1), 0, stranger);
        const read = readBusEvents(entries.join(','));
        expect(read.ok).toBe(false);
        expect(read.ok ? '' : read.problem).toContain(`"${stranger.trim().toLowerCase()}"`);
      }),
    );
    // The test delivery is not a status change: it never goes on the bus, so it cannot be listed.
    expect(readBusEvents(`message.sent,${WEBHOOK_TEST_EVENT_TYPE}`).ok).toBe(false);
    // `all` and `none` stand alone.
    expect(readBusEvents('message.sent,none').ok).toBe(false);
  });

  it('refuses a list of no type (an empty setting is unset; none is said with none)', () => {
    for (const text of [',', ' , ,']) expect(readBusEvents(text).ok).toBe(false);
  });
});

describe('unknownBusEventTypes: the construct checks the prop with it', () => {
  it('answers exactly the entries that are no message event type', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(typeArb, notATypeArb)), (entries) => {
        expect(unknownBusEventTypes(entries)).toEqual(
          entries.filter((entry) => !(MESSAGE_EVENT_TYPES as readonly string[]).includes(entry)),
        );
      }),
    );
  });
});
