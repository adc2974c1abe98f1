import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

/**
 * `npm start` is ready in a few seconds (DESIGN §7), and the viewer still shows a message's HTML with
 * its scripts taken out. MailDev's SMTP module built a jsdom window as it was imported, to sanitize
 * HTML: 0.6 s of CPU and 0.3 s of every start, for a message that may never come. A patch builds it
 * for the first HTML message instead (patches/@maildev+smtp+3.0.0.patch, decision 0305).
 */
describe('MailDev in npm start', () => {
  it('starts without jsdom, and still takes the script out of the first HTML message it shows', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', 'test/local/fixtures/maildevStart.mjs'],
      {
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
        timeout: 50_000,
      },
    );
    const { loadedByTheStart, html } = JSON.parse(stdout.trim()) as {
      loadedByTheStart: boolean;
      html: string;
    };
    expect(loadedByTheStart).toBe(false);
    expect(html).toContain('<p id="kept">Hello</p>');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('alert(1)');
  });
});
