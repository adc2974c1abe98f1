import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import { describe, expect, it } from 'vitest';
import { startMaildevViewer } from '../../local/smtp/maildevViewer.js';
import { until } from './npmStartProcess.js';

/**
 * MailDev as `npm start` runs it (issue 29): its mail lives where the stack's data lives — the data
 * directory, or a directory of its own that goes with it — never the `/tmp/maildev` every stack on
 * the machine would share; and the URL the banner prints answers a plain `curl` with the page.
 */

async function sendOne(port: number): Promise<void> {
  await createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true }).sendMail({
    from: 'ops@example.com',
    to: 'ada@example.com',
    subject: 'Kept apart',
    text: 'Hello.',
  });
}

describe('the MailDev viewer of npm start', () => {
  it('keeps mail in a directory of its own without a data directory, and removes it at stop', async () => {
    const viewer = await startMaildevViewer({ smtpPort: 0, webPort: 0, host: '127.0.0.1' });
    try {
      expect(viewer.mailDirectory).not.toBe('/tmp/maildev');
      await sendOne(viewer.smtpPort);
      await until(
        'the mail on disk',
        () => (readdirSync(viewer.mailDirectory).some((file) => file.endsWith('.eml')) ? true : undefined),
        10_000,
      );
    } finally {
      await viewer.stop();
    }
    expect(existsSync(viewer.mailDirectory)).toBe(false);
  }, 60_000);

  it('keeps mail in the given directory (the data directory) after it stops', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'postdate-viewer-data-'));
    const mailDirectory = join(dataDir, 'maildev');
    try {
      const viewer = await startMaildevViewer({ smtpPort: 0, webPort: 0, host: '127.0.0.1', mailDirectory });
      await sendOne(viewer.smtpPort);
      await until(
        'the mail on disk',
        () => (readdirSync(mailDirectory).some((file) => file.endsWith('.eml')) ? true : undefined),
        10_000,
      );
      await viewer.stop();
      expect(readdirSync(mailDirectory).filter((file) => file.endsWith('.eml'))).toHaveLength(1);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('answers `/` with the page by default, and not with HTML when JSON is asked for', async () => {
    const viewer = await startMaildevViewer({ smtpPort: 0, webPort: 0, host: '127.0.0.1' });
    try {
      const plain = await fetch(`${viewer.url}/`);
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await plain.text()).toMatch(/<html/i);
      const json = await fetch(`${viewer.url}/`, { headers: { accept: 'application/json' } });
      expect(json.headers.get('content-type')).toMatch(/^application\/json/);
      await json.body?.cancel();
    } finally {
      await viewer.stop();
    }
  }, 60_000);
});
