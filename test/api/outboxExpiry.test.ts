import { describe, expect, it } from 'vitest';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { buildOutboxWrite, OutboxInputError } from '../../lambdas/outbox/outboxItems.js';
import { validBody } from './events.js';

const now = new Date('2026-11-29T18:00:00.000Z');
const validation = { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 };
const DAY = 86_400;

function write(overrides: Record<string, unknown>, retentionDays = 30) {
  const parsed = parseEnqueueRequest(validBody(overrides), { ...validation, now });
  if (!parsed.ok) throw new Error(parsed.problem.detail);
  return buildOutboxWrite({
    tableName: 't',
    tenant: 'acme',
    idempotencyKey: 'k-1',
    now,
    request: parsed.value,
    retentionDays,
  });
}

describe('expiry of the items written once', () => {
  it('gives a live message no TTL, neither the state record nor the body, however far its send time', () => {
    const { state, body } = write({ send_at: '2027-12-10T09:00:00.000Z' }, 30);
    // Only a terminal status starts the retention clock (DESIGN §2).
    expect(state.expires_at).toBeUndefined();
    expect(body.expires_at).toBeUndefined();
  });

  it('expires a message superseded at enqueue, body included, one retention after now', () => {
    const { state, body } = write({ group: { key: 'g', version: 1 } }, 30);
    expect(state.status).toBe('scheduled');
    const superseded = buildOutboxWrite({
      tableName: 't',
      tenant: 'acme',
      idempotencyKey: 'k-2',
      now,
      groupHeadVersion: 5,
      request: (() => {
        const parsed = parseEnqueueRequest(validBody({ group: { key: 'g', version: 1 } }), {
          ...validation,
          now,
        });
        if (!parsed.ok) throw new Error(parsed.problem.detail);
        return parsed.value;
      })(),
      retentionDays: 30,
    });
    const expected = now.getTime() / 1000 + 30 * DAY;
    expect(superseded.state.expires_at).toBe(expected);
    expect(superseded.body.expires_at).toBe(expected);
    expect(body.expires_at).toBeUndefined();
  });

  /** A message superseded at enqueue (head 5 above its version 1), with these retention days. */
  function superseded(retentionDays?: number) {
    const parsed = parseEnqueueRequest(validBody({ group: { key: 'g', version: 1 } }), {
      ...validation,
      now,
    });
    if (!parsed.ok) throw new Error(parsed.problem.detail);
    return buildOutboxWrite({
      tableName: 't',
      tenant: 'acme',
      idempotencyKey: 'k-3',
      now,
      groupHeadVersion: 5,
      request: parsed.value,
      ...(retentionDays === undefined ? {} : { retentionDays }),
    });
  }

  it("expires it on the stack's clock: the retention given, or the stack's default POSTDATE_RETENTION_DAYS", () => {
    expect(superseded(7).state.expires_at).toBe(now.getTime() / 1000 + 7 * DAY);
    const stackDefault = CONFIG_SETTINGS.retentionDays.aws;
    expect(superseded().state.expires_at).toBe(now.getTime() / 1000 + stackDefault * DAY);
    expect(superseded().body.expires_at).toBe(now.getTime() / 1000 + stackDefault * DAY);
  });

  it.each([0, -1, 2.5, 3651, Number.NaN])(
    'refuses a retention the stack could not have (%s days), naming retentionDays',
    (retentionDays) => {
      expect(() => superseded(retentionDays)).toThrow(OutboxInputError);
      expect(() => superseded(retentionDays)).toThrow(/retentionDays/);
    },
  );
});
