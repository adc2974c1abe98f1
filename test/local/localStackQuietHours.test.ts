/**
 * Quiet hours on the whole local stack, black-box (docs/design.md §16 Local time and quiet hours;
 * issue 33's proof): over HTTP, a message due now inside its quiet hours is held and reaches the
 * SMTP sink once, at the window's end, not before; one whose not_after comes before the end expires
 * unsent. The local stack runs on the real clock (it has no injected one), so the window is the
 * current minute of the zone's wall clock and ends at most 75 seconds from now: the compression is
 * the window's, not the clock's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';

const API_KEY = 'pd_local-stack-quiet-hours-key-1';
const ZONE = 'Asia/Kolkata'; // +05:30: the window is read on a wall clock that is not UTC's

/** A window from the zone's current minute to the next minute at least 15 s away, and its end. */
function windowEndingSoon(now: number): { quiet: { start: string; end: string }; end: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: ZONE,
    hourCycle: 'h23',
    hour: 'numeric',
    minute: 'numeric',
  }).formatToParts(now);
  const field = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  const minute = field('hour') * 60 + field('minute');
  const startOfMinute = Math.floor(now / 60_000) * 60_000; // the zone's offset is whole minutes
  const minutes = startOfMinute + 60_000 - now >= 15_000 ? 1 : 2;
  const hhmm = (m: number) =>
    `${String(Math.floor((m % 1440) / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  return {
    quiet: { start: hhmm(minute), end: hhmm(minute + minutes) },
    end: startOfMinute + minutes * 60_000,
  };
}

describe('quiet hours on the local stack', () => {
  let stack: LocalStack;
  const call = async (method: string, path: string, body?: unknown, key?: string) => {
    const response = await fetch(`${stack.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('holds a message due inside quiet hours and delivers it once at their end; one whose not_after comes first expires', async () => {
    const { quiet, end } = windowEndingSoon(Date.now());
    const message = (extra: Record<string, unknown>) => ({
      to: ['ada@example.com'],
      subject: 'Your digest',
      text: 'Good morning.',
      time_zone: ZONE,
      quiet_hours: quiet,
      ...extra,
    });
    const held = await call('POST', '/v1/messages', message({}), 'quiet-held-1');
    expect(held.status).toBe(202);
    expect(held.json).toMatchObject({ status: 'scheduled', time_zone: ZONE, quiet_hours: quiet });
    const expiring = await call(
      'POST',
      '/v1/messages',
      message({ not_after: new Date(end - 5_000).toISOString() }),
      'quiet-expiring-1',
    );
    expect(expiring.status).toBe(202);
    const heldId = String(held.json.id);
    const expiringId = String(expiring.json.id);

    const mailOf = (id: string) => stack.smtpSink?.messages().filter((mail) => mail.postdateId === id) ?? [];
    const delivered = await eventually(
      'the held message at the SMTP sink',
      () => (mailOf(heldId).length > 0 ? mailOf(heldId) : undefined),
      { withinMs: end - Date.now() + 30_000, everyMs: 200 },
    );
    // Not before the window's end (the sink's clock is this process's).
    expect(Date.parse(delivered[0]?.receivedAt ?? '')).toBeGreaterThanOrEqual(end);

    const sent = await eventually(
      'the held message sent',
      async () => {
        const view = await call('GET', `/v1/messages/${heldId}`);
        return view.json.status === 'sent' ? view.json : undefined;
      },
      { withinMs: 20_000, everyMs: 200 },
    );
    expect(sent).toMatchObject({ attempts: 1, send_at_local: expect.any(String), time_zone: ZONE });
    expect((await call('GET', `/v1/messages/${expiringId}`)).json).toMatchObject({
      status: 'expired',
      attempts: 0,
    });

    // Exactly once: with every queue drained and a sweep run, still one mail, and none for the other.
    await stack.sweep();
    await stack.idle();
    expect(mailOf(heldId)).toHaveLength(1);
    expect(mailOf(expiringId)).toHaveLength(0);
  }, 180_000);
});
