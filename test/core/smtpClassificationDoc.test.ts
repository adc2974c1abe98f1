import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { classifySmtpError, SES_CONFIG_PHRASES } from '../../lambdas/core/classifySmtpError.js';

interface DocRow {
  readonly caseName: string;
  readonly example: unknown;
  readonly bodySent: boolean;
  readonly expectedClass: string;
  /** The "what Postdate does" column. */
  readonly action: string;
}

/** The rows of the table whose header starts with "| case |" in docs/smtp-classification.md. */
function readTable(): DocRow[] {
  const markdown = readFileSync(new URL('../../docs/smtp-classification.md', import.meta.url), 'utf8');
  const lines = markdown.split('\n');
  const header = lines.findIndex((line) => line.startsWith('| case |'));
  if (header < 0) throw new Error('docs/smtp-classification.md has no "| case |" table');
  const rows: DocRow[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    const [caseName = '', example = '', bodySent = '', expectedClass = '', action = ''] = cells;
    rows.push({
      caseName,
      example: JSON.parse(example.replace(/^`|`$/g, '')),
      bodySent: bodySent === 'yes',
      expectedClass: expectedClass.replace(/\*/g, ''),
      action,
    });
  }
  return rows;
}

const rows = readTable();

describe('docs/smtp-classification.md agrees with classifySmtpError', () => {
  it('covers every case an operator meets', () => {
    const text = rows.map((row) => `${row.caseName} ${JSON.stringify(row.example)}`).join('\n');
    for (const needle of [
      'ECONNECTION',
      'ETIMEDOUT',
      'ESOCKET',
      'EDNS',
      'ETLS',
      'EAUTH',
      'EENVELOPE',
      'EMESSAGE',
      'ECONFIG',
      '421',
      '450',
      '451',
      '452',
      '4.2.2',
      '500',
      '501',
      '503',
      '550',
      '551',
      '552',
      '553',
      '554',
      '5.1.1',
      '5.2.2',
      '5.3.4',
      '5.7.1',
      'connection closed after DATA',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'CERT_HAS_EXPIRED',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'Email address is not verified',
      'not authorized',
      'ESECRETREAD',
    ]) {
      expect(text, needle).toContain(needle);
    }
  });

  it('lists every SES phrase the classifier reads, and nothing else', () => {
    const markdown = readFileSync(new URL('../../docs/smtp-classification.md', import.meta.url), 'utf8');
    const section = markdown.slice(
      markdown.indexOf('## Amazon SES'),
      markdown.indexOf('## Notes for operators'),
    );
    const phrases = [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1]);
    expect(phrases).toEqual([...SES_CONFIG_PHRASES]);
  });

  it('states only the four classes', () => {
    for (const row of rows)
      expect(['transient', 'permanent', 'config', 'ambiguous']).toContain(row.expectedClass);
  });

  // DESIGN §5: a failure before MAIL FROM at the relay (an outage: connection, greeting, TLS, the
  // login) is no attempt and pauses every sender until a probe succeeds; it is never the message's
  // backoff, long or short. A failure in the transaction is this message's, and it waits its backoff.
  it.each(rows.map((row) => [row.caseName, row] as const))(
    '%s: "what Postdate does" is what its origin does to the message',
    (_name, row) => {
      const error = Object.assign(new Error('from the doc'), row.example);
      const { origin, class: errorClass } = classifySmtpError(error, { bodySent: row.bodySent });
      if (origin === 'outage') {
        expect(row.action).toMatch(/no attempt/);
        expect(row.action).toMatch(/breaker/);
        expect(row.action).not.toMatch(/backoff/);
      } else if (errorClass === 'transient' || errorClass === 'config') {
        expect(row.action).toMatch(/backoff/);
      }
    },
  );

  it.each(rows.map((row) => [row.caseName, row] as const))('%s', (_name, row) => {
    const error = Object.assign(new Error('from the doc'), row.example);
    expect(classifySmtpError(error, { bodySent: row.bodySent }).class).toBe(row.expectedClass);
  });
});
