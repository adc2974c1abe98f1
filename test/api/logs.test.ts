import { Logger } from '@aws-lambda-powertools/logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

/** Strings that must never reach a log line. */
const SECRETS = {
  address: 'zelda.private@example.com',
  cc: 'hidden.cc@example.com',
  from: 'sender.secret@example.com',
  displayName: 'Zelda Private',
  subject: 'Your biopsy results',
  text: 'plain-body-text-marker',
  html: 'html-body-marker',
  header: 'header-value-marker',
  key: 'idempotency-key-marker',
};

describe('logs', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('carry no address, subject, body, header value or idempotency key across enqueue, replay, get, list and errors', async () => {
    const written: string[] = [];
    const capture = (chunk: unknown) => {
      written.push(String(chunk));
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    // The real Powertools Logger, as the Lambda uses it, at its most verbose.
    const logger = new Logger({ serviceName: 'postdate-api', logLevel: 'DEBUG' });
    const api = await apiHarness({ logger });

    const body = validBody({
      to: [`${SECRETS.displayName} <${SECRETS.address}>`],
      cc: [SECRETS.cc],
      from: SECRETS.from,
      subject: SECRETS.subject,
      text: SECRETS.text,
      html: `<p>${SECRETS.html}</p>`,
      headers: { 'X-Note': SECRETS.header },
    });
    const created = await api.call(enqueueEvent(body, { key: SECRETS.key }));
    const replayed = await api.call(enqueueEvent(body, { key: SECRETS.key }));
    const reused = await api.call(
      enqueueEvent({ ...body, subject: `${SECRETS.subject}!` }, { key: SECRETS.key }),
    );
    const invalid = await api.call(
      enqueueEvent({ ...body, to: [`${SECRETS.address}\r\nBcc: x@evil.test`] }, { key: `${SECRETS.key}-2` }),
    );
    const fetched = await api.call(getEvent(String(created.json.id)));
    const listed = await api.call(
      apiEvent({ method: 'GET', path: '/v1/messages', routeKey: 'GET /v1/messages' }),
    );
    vi.restoreAllMocks();

    expect([
      created.status,
      replayed.status,
      reused.status,
      invalid.status,
      fetched.status,
      listed.status,
    ]).toEqual([202, 200, 422, 400, 200, 200]);
    const lines = written
      .join('')
      .split('\n')
      .filter((line) => line.trim() !== '');
    // One structured line per request, so the assertion below looked at real output.
    expect(lines.length).toBeGreaterThanOrEqual(6);
    expect(lines.some((line) => line.includes(String(created.json.id)))).toBe(true);
    for (const secret of Object.values(SECRETS)) {
      expect(
        lines.filter((line) => line.includes(secret)),
        secret,
      ).toEqual([]);
    }
    expect(lines.join('\n')).not.toMatch(/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/);
  });
});
