import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { SIMULATOR_DOMAIN } from '../../lambdas/core/testSide.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { type MaildevViewer, startMaildevViewer } from '../../local/smtp/maildevViewer.js';
import { SIMULATED_MAIL_PRELOAD } from '../../local/smtp/simulatedMailViewer.js';
import { createLocalStackTestKey, postLocalMessage } from '../support/awsLocal.js';
import { launchChromium } from '../support/chromium.js';
import { eventually } from '../support/eventually.js';

/**
 * The mail viewer of `npm start` (DESIGN §7, issue 17 §4) seen as a developer sees it: a message
 * goes through the whole local stack (API → relay → queue → sender → SMTP) to MailDev, reached as a
 * relay through SMTP_HOST/SMTP_PORT exactly as local/start.ts wires it, and a real headless Chromium
 * (the machine's, else the one the npm package @sparticuz/chromium carries: test/support/chromium.ts)
 * opens the page and finds its subject, its rendered HTML, its text and search.
 */

const API_KEY = 'pd_viewer-spec-key-0001';
const TEST_KEY = 'pd_test_viewer-spec-key-0001';

interface MaildevEmail {
  readonly id: string;
  readonly subject: string;
}

describe('the mail viewer in a real browser', () => {
  let viewer: MaildevViewer;
  let stack: LocalStack;
  let browser: Browser;
  let page: Page;
  const subject = `Your order ${Date.now()} shipped`;
  const otherSubject = `Invoice ${Date.now()} ready`;

  async function enqueue(key: string, body: Record<string, unknown>, secret = API_KEY): Promise<number> {
    const response = await postLocalMessage(stack, {
      secret,
      key,
      body: { to: ['ada@example.com'], from: 'postdate@postdate.local', ...body },
    });
    await response.arrayBuffer();
    return response.status;
  }

  beforeAll(async () => {
    viewer = await startMaildevViewer({ smtpPort: 0, webPort: 0, host: '127.0.0.1' });
    const config = loadConfig(
      { POSTDATE_API_KEY: API_KEY, SMTP_HOST: viewer.smtpHost, SMTP_PORT: String(viewer.smtpPort) },
      'local',
    );
    stack = await startLocalStack({
      config,
      ports: ANY_FREE_PORTS,
      quiet: true,
      externalViewer: { smtpPort: viewer.smtpPort, url: viewer.url },
      functionPreload: [SIMULATED_MAIL_PRELOAD],
    });
    await createLocalStackTestKey(stack, TEST_KEY);
    browser = await launchChromium();
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await viewer?.stop();
  });

  it('is part of the readiness: GET /health probes its SMTP greeting and its page', async () => {
    expect((await stack.readiness()).parts).toMatchObject({ smtp: 'up', mailViewer: 'up' });
    expect((await fetch(`${stack.apiUrl}/health`)).status).toBe(200);
  });

  it('shows a message sent through the stack: its subject, its HTML rendered, its text', async () => {
    expect(
      await enqueue(`viewer-${subject}`, {
        subject,
        text: 'It is on its way (plain text part).',
        html: '<h1 id="title">Shipped</h1><p>Your parcel is <strong id="state">on its way</strong>.</p>',
      }),
    ).toBe(202);
    expect(
      await enqueue(`viewer-${otherSubject}`, { subject: otherSubject, text: 'Invoice attached.' }),
    ).toBe(202);
    // The sender delivered both to MailDev (its REST API is what the page reads too).
    await eventually(
      'both mails in MailDev',
      async () => {
        const emails = (await (await fetch(`${viewer.url}/api/email`)).json()) as MaildevEmail[];
        return emails.length >= 2 ? emails : undefined;
      },
      { withinMs: 60_000, everyMs: 100 },
    );

    await page.goto(`${viewer.url}/`);
    await page.getByText(subject).first().click();
    // The subject heads the message; the HTML part is rendered (elements, not source) in its frame.
    await expect
      .poll(() => page.getByRole('heading', { name: subject }).count(), { timeout: 10_000 })
      .toBe(1);
    const html = page.frameLocator('iframe').first();
    await expect.poll(() => html.locator('#state').textContent(), { timeout: 10_000 }).toBe('on its way');
    expect(await html.locator('h1#title').textContent()).toBe('Shipped');
    // Rendered, not shown as source: no tag is visible as text anywhere on the page.
    expect(await page.locator('body').textContent()).not.toContain('<strong');

    await page
      .getByRole('tab', { name: 'Plain Text' })
      .or(page.getByText('Plain Text', { exact: true }))
      .first()
      .click();
    await expect
      .poll(() => page.getByText('It is on its way (plain text part).').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
  }, 90_000);

  it('lists every header in its headers tab, addresses and the date included (issue 29)', async () => {
    // Mailpit users read every header of a message in its headers tab. MailDev's parser kept only
    // the ones whose parsed value is a string, so From, To, Cc, Reply-To and Date (addresses and a
    // date once parsed) were missing; patches/@maildev+smtp+3.0.0.patch keeps them as written.
    const headersSubject = `Every header ${Date.now()}`;
    expect(
      await enqueue(`viewer-${headersSubject}`, {
        subject: headersSubject,
        to: ['Ada Lovelace <ada@example.com>'],
        cc: ['grace@example.com'],
        reply_to: 'support@example.com',
        headers: { 'X-Campaign': 'spring-sale' },
        text: 'Every header.',
      }),
    ).toBe(202);
    await eventually(
      'the mail in MailDev',
      async () => {
        const emails = (await (await fetch(`${viewer.url}/api/email`)).json()) as MaildevEmail[];
        return emails.some((email) => email.subject === headersSubject);
      },
      { withinMs: 60_000, everyMs: 100 },
    );

    await page.goto(`${viewer.url}/`);
    await page.getByText(headersSubject).first().click();
    await page.getByRole('button', { name: 'Headers', exact: true }).click();
    const rows = page.locator('table tr');
    const headerTab = async (): Promise<Record<string, string>> => {
      const cells = await Promise.all((await rows.all()).map((row) => row.locator('td').allTextContents()));
      return Object.fromEntries(
        cells.filter((row) => row.length === 2).map(([k, v]) => [k?.toLowerCase(), v]),
      );
    };
    await expect
      .poll(async () => Object.keys(await headerTab()).length, { timeout: 10_000 })
      .toBeGreaterThan(5);
    const shown = await headerTab();
    expect(shown).toMatchObject({
      from: 'postdate@postdate.local',
      // The display name decoded; MailDev's parser quotes it.
      to: expect.stringMatching(/^"?Ada Lovelace"? <ada@example\.com>$/),
      cc: 'grace@example.com',
      'reply-to': 'support@example.com',
      'x-campaign': 'spring-sale',
      subject: headersSubject,
    });
    // The date as the message carries it (RFC 5322), not a parsed object or nothing.
    expect(shown.date).toMatch(
      /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$/,
    );
    expect(Object.keys(shown)).toEqual(
      expect.arrayContaining(['message-id', 'x-postdate-id', 'mime-version', 'content-type']),
    );
  }, 90_000);

  it('shows a test message (DESIGN §14), marked X-Postdate-Test in its headers', async () => {
    const testSubject = `Simulated ${Date.now()}`;
    expect(
      await enqueue(
        `viewer-${testSubject}`,
        { subject: testSubject, to: [`delivered@${SIMULATOR_DOMAIN}`], text: 'A test message.' },
        TEST_KEY,
      ),
    ).toBe(202);
    const email = await eventually(
      'the test message in MailDev',
      async () => {
        const emails = (await (await fetch(`${viewer.url}/api/email`)).json()) as (MaildevEmail & {
          headers: Record<string, string>;
        })[];
        return emails.find((candidate) => candidate.subject === testSubject);
      },
      { withinMs: 60_000, everyMs: 100 },
    );
    expect(email.headers['x-postdate-test']).toBe('true');

    await page.goto(`${viewer.url}/`);
    await page.getByText(testSubject).first().click();
    await page.getByRole('button', { name: 'Headers', exact: true }).click();
    const testRow = page.locator('table tr').filter({ hasText: 'x-postdate-test' });
    await expect
      .poll(() => testRow.locator('td').allTextContents(), { timeout: 10_000 })
      .toEqual(['x-postdate-test', 'true']);
  }, 90_000);

  it('finds a message by searching its subject', async () => {
    await page.goto(`${viewer.url}/`);
    await expect.poll(() => page.getByText(otherSubject).count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await page.getByPlaceholder(/search/i).fill('Invoice');
    // The list narrows to the match. (The reading pane may still show the other message: MailDev
    // selects the list's top row as the query changes, before its debounced search has answered.)
    // Both counts are polled together: while the search is pending MailDev may render an empty
    // list, in which `subject` is gone but so is `otherSubject`. `subject` is read first: once it
    // is gone the list is the empty or the narrowed one, and only the narrowed one shows the other.
    const list = page.getByTestId('email-list');
    await expect
      .poll(
        async () => {
          const subjects = await list.getByText(subject).count();
          const others = await list.getByText(otherSubject).count();
          return { subject: subjects, otherSubjectShown: others > 0 };
        },
        { timeout: 10_000 },
      )
      .toEqual({ subject: 0, otherSubjectShown: true });
  }, 30_000);
});
