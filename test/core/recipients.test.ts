import { describe, expect, it } from 'vitest';
import { mailboxCount, mailboxPlaces, pendingPositions } from '../../lambdas/core/recipients.js';

/**
 * A mailbox named more than once in a message (to, cc, bcc; in any spelling the suppression list
 * calls one mailbox, decision 0237) gets one RCPT TO (0234), so the send rate counts it once
 * (DESIGN §5 "Rate": recipients as SES counts them; decision 0248). The sender's use of it:
 * test/sender/recipients.test.ts.
 */
describe("a message's mailboxes", () => {
  it('are undefined when every position names its own mailbox', () => {
    expect(mailboxPlaces(['ada@example.org', 'bob@example.org', 'Ada <ada@example.net>'])).toBeUndefined();
    expect(mailboxPlaces([])).toBeUndefined();
  });

  it('give each repeat the position that first names its mailbox, in every spelling of it', () => {
    expect(
      mailboxPlaces([
        'ADA@bücher.example',
        'bob@example.org',
        'Ada <ada@xn--bcher-kva.example>',
        '"ada"@BU\u0308CHER.example',
        'BOB@Example.ORG',
      ]),
    ).toEqual([0, 1, 0, 0, 1]);
  });

  it('compare what does not parse lower-cased, as the mailer does', () => {
    expect(mailboxPlaces(['not an address', 'NOT AN ADDRESS'])).toEqual([0, 0]);
  });

  it('count each mailbox once among the positions still pending', () => {
    const places = mailboxPlaces(['ada@example.org', 'bob@example.org', 'ADA@example.org']);
    expect(mailboxCount([0, 1, 2], places)).toBe(2);
    expect(mailboxCount(pendingPositions(3, { accepted: [1], rejected: [] }), places)).toBe(1);
    expect(mailboxCount([], places)).toBe(0);
  });

  it('count each position as its own mailbox on a record that names none twice (or was written before)', () => {
    expect(mailboxCount([0, 1, 2])).toBe(3);
    expect(mailboxCount([2, 4], undefined)).toBe(2);
  });
});
