import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { startInOwnCheckout } from './npmStartProcess.js';

/**
 * `npm start`'s default log mode end to end (issue 17 §4: "request logs drown the banner"): the
 * banner is the last thing printed at start, and a request then adds one short line per function
 * log entry at INFO — the api's in-process line and the sender's from its worker sandbox — and no
 * Powertools JSON line. The relay logs nothing at INFO for a routine message (its batch count is
 * DEBUG, decision 0118).
 */

describe('npm start with POSTDATE_LOG unset (pretty)', () => {
  let start: ReturnType<typeof startInOwnCheckout> | undefined;

  afterAll(async () => {
    if (start && start.child.exitCode === null) {
      start.child.kill('SIGTERM');
      await start.exited;
    }
  });

  it('keeps the banner last at start, then prints one short line per log entry and no JSON', async () => {
    const ports = [
      'PORT',
      'DYNAMODB_PORT',
      'SQS_PORT',
      'SCHEDULER_PORT',
      'SMTP_SINK_PORT',
      'MAIL_VIEWER_PORT',
    ];
    const env: NodeJS.ProcessEnv = { ...process.env, POSTDATE_API_KEY: 'pd_pretty-log-spec-key' };
    for (const port of ports) env[`POSTDATE_${port}`] = '0';
    delete env.POSTDATE_LOG;
    delete env.POWERTOOLS_LOG_LEVEL;
    const started = startInOwnCheckout(process.execPath, ['--import', 'tsx', 'local/start.ts'], { env });
    start = started;
    const stdout = () => started.stdout();

    await eventually('the banner', () => stdout().includes('Ctrl-C stops everything.'), {
      withinMs: 150_000,
      everyMs: 100,
    });
    // At start, the functions logged (the sweep, the readiness request) but nothing of it shows.
    const beforeBanner = stdout().slice(0, stdout().indexOf('Postdate local stack ready'));
    expect(beforeBanner).not.toMatch(/^\d\d:\d\d:\d\d |^\{/m);
    const apiUrl = stdout().match(/API {10}(http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    expect(apiUrl).toBeDefined();

    const response = await fetch(`${apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer pd_pretty-log-spec-key',
        'content-type': 'application/json',
        'idempotency-key': 'pretty-log-1',
      },
      body: JSON.stringify({ to: ['ada@example.com'], subject: 'Pretty', text: 'Short lines.' }),
    });
    expect(response.status).toBe(202);
    const lines = () =>
      stdout()
        .slice(stdout().indexOf('Ctrl-C stops everything.'))
        .split('\n')
        .slice(1)
        .filter((line) => line !== '');
    const apiLine = (line: string) => /^\d\d:\d\d:\d\d api +request enqueue tenant=local 202 /.test(line);
    const senderLine = (line: string) => / sender +sender recorded an outcome .* sent/.test(line);
    // The two come in no fixed order (the api puts its own copy on the queue). Wait for both.
    await eventually(
      'the api and sender lines',
      () => {
        const now = lines();
        return [apiLine, senderLine].every((matches) => now.some(matches));
      },
      { withinMs: 60_000, everyMs: 100 },
    ).catch(() => undefined);

    const printed = lines();
    expect(printed.some(apiLine), 'the api line').toBe(true);
    expect(printed.some(senderLine), 'the sender line').toBe(true);
    expect(printed.filter((line) => line.startsWith('{'))).toEqual([]);
    for (const line of printed) expect(line.length).toBeLessThanOrEqual(160);
  }, 240_000);
});
