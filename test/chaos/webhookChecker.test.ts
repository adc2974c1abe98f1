import { describe, expect, it } from 'vitest';
import { checkWebhooks, type WebhookCheckMessage } from '../../chaos/webhookChecker.js';
import type { ReceivedWebhook } from '../../chaos/webhookReceiver.js';

const message = (overrides: Partial<WebhookCheckMessage> = {}): WebhookCheckMessage => ({
  id: 'm1',
  tenant: 'local',
  finalStatus: 'sent',
  outcomes: ['sent'],
  ...overrides,
});

let next = 0;
const post = (overrides: Partial<ReceivedWebhook> = {}): ReceivedWebhook => {
  next += 1;
  const eventId = overrides.eventId ?? `evt_${next}`;
  return {
    endpointTenant: 'local',
    atMs: next,
    answer: 'ok',
    verified: true,
    verifyError: null,
    webhookId: eventId,
    eventId,
    type: `message.${overrides.status ?? 'scheduled'}`,
    eventTenant: overrides.endpointTenant ?? 'local',
    messageId: 'm1',
    status: 'scheduled',
    previousStatus: null,
    ...overrides,
  };
};

const accepted = (overrides: Partial<ReceivedWebhook> = {}) => post({ status: 'scheduled', ...overrides });
const sent = (overrides: Partial<ReceivedWebhook> = {}) =>
  post({ status: 'sent', previousStatus: 'sending', ...overrides });
const tenants = ['local', 'other'];

describe('the chaos webhook checker', () => {
  it('passes a message whose acceptance and final status each reached its endpoint once in a 200', () => {
    const result = checkWebhooks({ tenants, messages: [message()], received: [accepted(), sent()] });
    expect(result.problems).toEqual([]);
    expect(result.counts).toMatchObject({ expected: 2, reached: 2, missing: 0 });
  });

  it('counts only POSTs answered 200: a status change failed and stalled but never accepted is missing', () => {
    const result = checkWebhooks({
      tenants,
      messages: [message()],
      received: [accepted(), sent({ answer: 'fail' }), sent({ answer: 'stall' })],
    });
    expect(result.problems).toEqual([
      expect.objectContaining({ kind: 'missing', id: 'm1', reason: expect.stringContaining('its sent') }),
    ]);
    // A retry with the same id, answered 200, makes it whole; the second 200 of the same event is allowed.
    const retried = checkWebhooks({
      tenants,
      messages: [message()],
      received: [
        accepted({ eventId: 'evt_a' }),
        sent({ answer: 'fail', eventId: 'evt_s' }),
        sent({ eventId: 'evt_s' }),
        sent({ eventId: 'evt_s' }),
      ],
    });
    expect(retried.ok).toBe(true);
    expect(retried.counts.deliveredMoreThanOnce).toBe(1);
  });

  it('requires retrying when the history has a transient attempt followed by another, not an ambiguous one', () => {
    // A lease taken over after a kill records the interrupted attempt as ambiguous and stays sending.
    const takenOver = message({ outcomes: ['ambiguous', 'sent'] });
    expect(checkWebhooks({ tenants, messages: [takenOver], received: [accepted(), sent()] }).ok).toBe(true);
    // The last allowed attempt failing transiently is dead, not retrying.
    const dead = message({ finalStatus: 'dead', outcomes: ['transient'] });
    const deadSent = post({ status: 'dead', previousStatus: 'sending' });
    expect(checkWebhooks({ tenants, messages: [dead], received: [accepted(), deadSent] }).ok).toBe(true);
    const input = {
      tenants,
      messages: [message({ outcomes: ['transient', 'sent'] })],
      received: [accepted(), sent()],
    };
    expect(checkWebhooks(input).problems).toEqual([
      expect.objectContaining({ kind: 'missing', reason: expect.stringContaining('its retrying') }),
    ]);
    const whole = checkWebhooks({
      ...input,
      received: [...input.received, post({ status: 'retrying', previousStatus: 'sending' })],
    });
    expect(whole.ok).toBe(true);
  });

  it('requires the final status of a message that ended without sending (cancelled, dead)', () => {
    for (const finalStatus of ['cancelled', 'dead', 'superseded']) {
      const result = checkWebhooks({ tenants, messages: [message({ finalStatus })], received: [accepted()] });
      expect(result.counts.missing, finalStatus).toBe(1);
    }
  });

  it('fails an event that reached another tenant’s endpoint, or names a message its tenant never had', () => {
    const messages = [message(), message({ id: 'm2', tenant: 'other' })];
    const base = [accepted(), sent(), accepted({ messageId: 'm2', endpointTenant: 'other' })];
    const m2Sent = sent({ messageId: 'm2', endpointTenant: 'other' });
    expect(checkWebhooks({ tenants, messages, received: [...base, m2Sent] }).ok).toBe(true);
    // m2's event, tenant field and all, at local's endpoint.
    const crossedEndpoint = checkWebhooks({
      tenants,
      messages,
      received: [...base, m2Sent, sent({ messageId: 'm2', eventTenant: 'other', endpointTenant: 'local' })],
    });
    expect(crossedEndpoint.counts.crossed).toBe(1);
    // An event claiming local's tenant for other's message.
    const crossedMessage = checkWebhooks({
      tenants,
      messages,
      received: [...base, m2Sent, sent({ messageId: 'm2' })],
    });
    expect(crossedMessage.counts.crossed).toBe(1);
    const unknown = checkWebhooks({
      tenants,
      messages,
      received: [...base, m2Sent, sent({ messageId: 'm9' })],
    });
    expect(unknown.counts.crossed).toBe(1);
  });

  it('fails a POST whose signature did not verify or whose webhook-id is not the event id', () => {
    const result = checkWebhooks({
      tenants,
      messages: [message()],
      received: [accepted(), sent({ verified: false, verifyError: 'No matching signature found' })],
    });
    expect(result.counts.badSignatures).toBe(1);
    // An unverified 200 does not count as reached either.
    expect(result.counts.missing).toBe(1);
    const mismatch = checkWebhooks({
      tenants,
      messages: [message()],
      received: [accepted(), sent({ webhookId: 'evt_other' })],
    });
    expect(mismatch.counts.badSignatures).toBe(1);
  });

  it('fails a terminal event that is not how the message ended', () => {
    const result = checkWebhooks({
      tenants,
      messages: [message({ finalStatus: 'cancelled' })],
      received: [accepted(), post({ status: 'cancelled', previousStatus: 'scheduled' }), sent()],
    });
    expect(result.problems).toEqual([expect.objectContaining({ kind: 'wrong-event' })]);
  });
});
