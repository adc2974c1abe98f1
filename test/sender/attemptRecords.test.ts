import { describe, expect, it } from 'vitest';
import { MAX_RECIPIENT_REPLIES, MAX_RECIPIENT_REPLY_LENGTH } from '../../lambdas/core/recipients.js';
import { attemptRecord, domainOf, MAX_REPLY_LENGTH, redactReply } from '../../lambdas/sender/outcomeWrite.js';

const BAD_MAILBOX = { class: 'permanent', reason: 'the recipient does not exist' } as const;

describe('what the sender writes down about an attempt', () => {
  it('strips every address from a relay reply, bracketed or bare', () => {
    expect(redactReply('550 5.1.1 <ada@example.com>: Recipient address rejected')).toBe(
      '550 5.1.1 <redacted>: Recipient address rejected',
    );
    expect(redactReply('250 2.0.0 OK queued for bob.smith+tag@mail.example.org id=42')).toBe(
      '250 2.0.0 OK queued for <redacted> id=42',
    );
  });

  it('removes control characters and cuts long replies', () => {
    expect(redactReply('451 4.3.0 line one\r\n451 line two')).toBe('451 4.3.0 line one 451 line two');
    const long = redactReply(`554 ${'x'.repeat(500)}`);
    expect(long?.length).toBe(MAX_REPLY_LENGTH);
    expect(redactReply(null)).toBeNull();
    expect(redactReply('  ')).toBeNull();
  });

  it('shows domains, never local parts', () => {
    expect(domainOf('Ada@Example.COM')).toBe('example.com');
    expect(domainOf('<ada@example.com>')).toBe('example.com');
    expect(domainOf('no-at-sign')).toBe('unknown');
  });

  it('records a delivered attempt with its reply code and the rejected recipients as domains', () => {
    const at = new Date('2026-12-01T09:00:00.000Z');
    const entry = attemptRecord(
      {
        delivered: true,
        reply: '250 2.0.0 OK: queued as ABC',
        refused: [1, 2].map((index) => ({
          index,
          code: '550',
          enhancedCode: '5.1.1',
          permanent: true,
          hardBounce: true,
          reply: null,
          failure: BAD_MAILBOX,
        })),
        durationMs: 42,
      },
      at,
      { addresses: ['ada@example.org', 'gone@example.net', 'other@EXAMPLE.net'], positions: [0, 1, 2] },
    );
    expect(entry).toEqual({
      at: at.toISOString(),
      outcome: 'sent',
      code: '250',
      enhanced_code: '2.0.0',
      reply: '250 2.0.0 OK: queued as ABC',
      duration_ms: 42,
      provider_message_id: 'ABC',
      rejected_domains: ['example.net'],
      recipients: [
        {
          position: 1,
          domain: 'example.net',
          outcome: 'rejected',
          code: '550',
          enhanced_code: '5.1.1',
          reply: null,
        },
        {
          position: 2,
          domain: 'example.net',
          outcome: 'rejected',
          code: '550',
          enhanced_code: '5.1.1',
          reply: null,
        },
      ],
    });
  });

  it("gives each recipient the relay answered on its own its reply: a deferral is no rejection (DESIGN §3 history's per-recipient replies)", () => {
    // The message's recipients a, b, c; a retry's envelope holds positions 0, 3, 4 of five.
    const entry = attemptRecord(
      {
        delivered: true,
        reply: '250 2.0.0 OK',
        refused: [
          {
            index: 1,
            code: '451',
            enhancedCode: '4.2.2',
            permanent: false,
            hardBounce: false,
            reply: '451 4.2.2 <b@b.example>: mailbox full',
            failure: { class: 'transient', reason: 'mailbox full' },
          },
          {
            index: 2,
            code: '550',
            enhancedCode: '5.1.1',
            permanent: true,
            hardBounce: true,
            reply: '550 5.1.1 c@c.example unknown',
            failure: BAD_MAILBOX,
          },
        ],
        durationMs: 9,
      },
      new Date(0),
      { addresses: ['a@a.example', 'b@B.example', 'c@c.example'], positions: [0, 3, 4] },
    );
    expect(entry.recipients).toEqual([
      {
        position: 3,
        domain: 'b.example',
        outcome: 'deferred',
        code: '451',
        enhanced_code: '4.2.2',
        reply: '451 4.2.2 <redacted>: mailbox full',
      },
      {
        position: 4,
        domain: 'c.example',
        outcome: 'rejected',
        code: '550',
        enhanced_code: '5.1.1',
        reply: '550 5.1.1 <redacted> unknown',
      },
    ]);
    // Only the permanently refused are rejected; the deferred one is still pending.
    expect(entry.rejected_domains).toEqual(['c.example']);
    expect(entry).not.toHaveProperty('recipients_omitted');
  });

  it('bounds the replies an entry keeps: at most MAX_RECIPIENT_REPLIES recipients, each reply cut, the rest counted', () => {
    const addresses = Array.from({ length: 50 }, (_, index) => `r${index}@d${index}.example`);
    const entry = attemptRecord(
      {
        delivered: false,
        failure: {
          class: 'transient',
          origin: 'transaction',
          code: '451',
          enhancedCode: '4.7.1',
          reason: 'greylisted',
          hardBounce: false,
        },
        reply: '451 4.7.1 try later',
        refused: addresses.map((_, index) => ({
          index,
          code: '451',
          enhancedCode: '4.7.1',
          permanent: false,
          hardBounce: false,
          reply: `451 4.7.1 ${'greylisted '.repeat(30)}`,
          failure: { class: 'transient', reason: 'greylisted' },
        })),
        durationMs: 3,
      },
      new Date(0),
      { addresses, positions: addresses.map((_, index) => index) },
    );
    expect(entry.recipients).toHaveLength(MAX_RECIPIENT_REPLIES);
    expect(entry.recipients?.map((recipient) => recipient.position)).toEqual(
      Array.from({ length: MAX_RECIPIENT_REPLIES }, (_, index) => index),
    );
    expect(entry.recipients_omitted).toBe(50 - MAX_RECIPIENT_REPLIES);
    for (const recipient of entry.recipients ?? []) {
      expect(recipient.reply?.length).toBeLessThanOrEqual(MAX_RECIPIENT_REPLY_LENGTH);
    }
    expect(entry).not.toHaveProperty('rejected_domains');
  });

  it('adds nothing to an attempt no recipient was refused in', () => {
    const entry = attemptRecord(
      { delivered: true, reply: '250 2.0.0 OK', refused: [], durationMs: 1 },
      new Date(0),
      { addresses: ['a@a.example'], positions: [0] },
    );
    expect(Object.keys(entry).sort()).toEqual([
      'at',
      'code',
      'duration_ms',
      'enhanced_code',
      'outcome',
      'reply',
    ]);
  });

  it('records a failed attempt with its class and codes', () => {
    const entry = attemptRecord(
      {
        delivered: false,
        failure: {
          class: 'permanent',
          origin: 'transaction',
          code: '550',
          enhancedCode: '5.1.1',
          reason: 'the recipient does not exist',
          hardBounce: true,
        },
        reply: '550 5.1.1 <ada@example.org> unknown',
        refused: [],
        durationMs: 7,
      },
      new Date(0),
      { addresses: ['ada@example.org'], positions: [0] },
    );
    expect(entry).toMatchObject({ outcome: 'permanent', code: '550', enhanced_code: '5.1.1' });
    expect(entry.reply).not.toContain('@');
  });
});
