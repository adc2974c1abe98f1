import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  deriveStatusChange,
  EVENT_STATUSES,
  EVENT_TYPES,
  type ImageChange,
  isEventType,
  MESSAGE_EVENT_TYPES,
  messageEvent,
  messageEventId,
  type StatusImage,
  WEBHOOK_TEST_EVENT_TYPE,
} from '../../lambdas/core/messageEvents.js';
import { MESSAGE_STATUSES, type MessageStatus } from '../../lambdas/core/messageStatus.js';

const statusArb = fc.constantFrom(...MESSAGE_STATUSES);
const isoArb = fc
  .integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) })
  .map((ms) => new Date(ms).toISOString());
const imageArb = (overrides: Partial<Record<keyof StatusImage, fc.Arbitrary<unknown>>> = {}) =>
  fc.record({
    id: fc.stringMatching(/^[0-9a-z]{1,26}$/),
    tenant: fc.constantFrom('t1', 't2', 'acme'),
    status: statusArb,
    rev: fc.integer({ min: 1, max: 50 }),
    updated_at: isoArb,
    attempts: fc.nat(3),
    ...overrides,
  }) as fc.Arbitrary<StatusImage>;
const changeArb: fc.Arbitrary<ImageChange> = fc.record({
  eventName: fc.constantFrom('INSERT', 'MODIFY', 'REMOVE', undefined),
  before: fc.option(imageArb(), { nil: null }),
  after: fc.option(imageArb(), { nil: null }),
});

const image = (status: MessageStatus, extra: Partial<StatusImage> = {}): StatusImage => ({
  id: 'm1',
  tenant: 't1',
  status,
  rev: 1,
  updated_at: '2026-12-01T09:00:00.000Z',
  attempts: 0,
  ...extra,
});

describe('event types (DESIGN §11)', () => {
  it('are every status but sending, so a new status becomes an event type by itself', () => {
    expect(EVENT_STATUSES).toEqual(MESSAGE_STATUSES.filter((status) => status !== 'sending'));
    expect(MESSAGE_EVENT_TYPES).toEqual(EVENT_STATUSES.map((status) => `message.${status}`));
    expect(MESSAGE_EVENT_TYPES).toContain('message.sent');
    expect(MESSAGE_EVENT_TYPES).not.toContain('message.sending');
    expect(EVENT_TYPES).toEqual([...MESSAGE_EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE]);
    expect(isEventType('message.dead')).toBe(true);
    expect(isEventType('message.sending')).toBe(false);
    expect(isEventType(7)).toBe(false);
  });
});

describe('deriveStatusChange: one event per status change', () => {
  it('makes acceptance an event with no previous status', () => {
    const change = deriveStatusChange({ eventName: 'INSERT', before: null, after: image('scheduled') });
    expect(change).toMatchObject({
      type: 'message.scheduled',
      tenant: 't1',
      messageId: 'm1',
      previousStatus: null,
      createdAt: '2026-12-01T09:00:00.000Z',
    });
    expect(change?.eventId).toMatch(/^evt_[0-9a-f]{32}$/);
  });

  it('names the old status on a change, and ignores sending, same-status changes and removals', () => {
    expect(
      deriveStatusChange({ eventName: 'MODIFY', before: image('sending'), after: image('sent') }),
    ).toMatchObject({ type: 'message.sent', previousStatus: 'sending' });
    expect(
      deriveStatusChange({ eventName: 'MODIFY', before: image('scheduled'), after: image('sending') }),
    ).toBeNull();
    // A reschedule keeps `scheduled`: no status change.
    expect(
      deriveStatusChange({
        eventName: 'MODIFY',
        before: image('scheduled'),
        after: image('scheduled', { rev: 2 }),
      }),
    ).toBeNull();
    expect(deriveStatusChange({ eventName: 'REMOVE', before: image('sent'), after: null })).toBeNull();
  });

  it('gives each retrying of one revision its own id (updated_at differs)', () => {
    const first = deriveStatusChange({
      eventName: 'MODIFY',
      before: image('sending'),
      after: image('retrying', { updated_at: '2026-12-01T09:00:01.000Z', attempts: 1 }),
    });
    const second = deriveStatusChange({
      eventName: 'MODIFY',
      before: image('sending', { attempts: 1 }),
      after: image('retrying', { updated_at: '2026-12-01T09:00:40.000Z', attempts: 2 }),
    });
    expect(first?.eventId).not.toBe(second?.eventId);
  });

  it('makes a move into retrying an event only when it counted an attempt: a claim given back is none (decision 0223)', () => {
    const failed = deriveStatusChange({
      eventName: 'MODIFY',
      before: image('sending', { attempts: 2 }),
      after: image('retrying', { attempts: 3 }),
    });
    expect(failed).toMatchObject({ type: 'message.retrying', previousStatus: 'sending' });
    const givenBack = deriveStatusChange({
      eventName: 'MODIFY',
      before: image('sending', { attempts: 2 }),
      after: image('retrying', { attempts: 2 }),
    });
    expect(givenBack).toBeNull();
    // A scheduled message's claim given back is scheduled again, no event (decision 0280); a manual
    // retry's move into scheduled is one.
    expect(
      deriveStatusChange({
        eventName: 'MODIFY',
        before: image('sending', { attempts: 2 }),
        after: image('scheduled', { attempts: 2 }),
      }),
    ).toBeNull();
    expect(
      deriveStatusChange({
        eventName: 'MODIFY',
        before: image('failed', { attempts: 2 }),
        after: image('scheduled', { attempts: 2 }),
      }),
    ).toMatchObject({ type: 'message.scheduled', previousStatus: 'failed' });
    // Any other status is an event with or without an attempt (an expiry, a suppression, a cancel).
    expect(
      deriveStatusChange({ eventName: 'MODIFY', before: image('retrying'), after: image('cancelled') }),
    ).toMatchObject({ type: 'message.cancelled' });
  });

  it('is an event exactly when the new image enters a status other than sending, a claim given back aside (property)', () => {
    fc.assert(
      fc.property(changeArb, (change) => {
        const derived = deriveStatusChange(change);
        const givenBack =
          change.after !== null &&
          change.before !== null &&
          change.after.attempts <= change.before.attempts &&
          (change.after.status === 'retrying' ||
            (change.after.status === 'scheduled' && change.before.status === 'sending'));
        const expected =
          change.after !== null &&
          change.after.status !== 'sending' &&
          (change.eventName === 'INSERT' ||
            (change.eventName === 'MODIFY' &&
              change.before !== null &&
              change.before.status !== change.after.status &&
              !givenBack));
        expect(derived !== null).toBe(expected);
        if (derived !== null && change.after !== null) {
          expect(derived.type).toBe(`message.${change.after.status}`);
          expect(isEventType(derived.type)).toBe(true);
          expect(derived.tenant).toBe(change.after.tenant);
          expect(derived.createdAt).toBe(change.after.updated_at);
          expect(derived.previousStatus).toBe(change.eventName === 'INSERT' ? null : change.before?.status);
        }
      }),
    );
  });

  it('gives a replayed batch the same ids, and different transitions different ids (property)', () => {
    fc.assert(
      fc.property(fc.array(changeArb, { maxLength: 30 }), (batch) => {
        const once = batch.map((change) => deriveStatusChange(change)?.eventId ?? null);
        const replay = structuredClone(batch).map((change) => deriveStatusChange(change)?.eventId ?? null);
        expect(replay).toEqual(once);
      }),
    );
    fc.assert(
      fc.property(imageArb(), imageArb(), (a, b) => {
        const same =
          a.id === b.id && a.rev === b.rev && a.status === b.status && a.updated_at === b.updated_at;
        expect(messageEventId(a) === messageEventId(b)).toBe(same);
      }),
    );
  });
});

describe('messageEvent', () => {
  it('is {id, type, created_at, tenant, data: view + previous_status}', () => {
    const change = deriveStatusChange({
      eventName: 'MODIFY',
      before: image('sending'),
      after: image('failed'),
    });
    if (change === null) throw new Error('expected an event');
    const event = messageEvent(change, { id: 'm1', status: 'failed', rev: 1 });
    expect(event).toEqual({
      id: change.eventId,
      type: 'message.failed',
      created_at: '2026-12-01T09:00:00.000Z',
      tenant: 't1',
      data: { id: 'm1', status: 'failed', rev: 1, previous_status: 'sending' },
    });
  });
});
