import { describe, expect, it } from 'vitest';
import { attemptRecord, domainOf, MAX_REPLY_LENGTH, redactReply } from '../../lambdas/sender/outcomeWrite.js';

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
        refused: [
          { index: 1, code: '550', enhancedCode: '5.1.1', permanent: true },
          { index: 2, code: '550', enhancedCode: '5.1.1', permanent: true },
        ],
        durationMs: 42,
      },
      at,
      ['ada@example.org', 'gone@example.net', 'other@EXAMPLE.net'],
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
    });
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
        },
        reply: '550 5.1.1 <ada@example.org> unknown',
        reachedRelay: true,
        refused: [],
        durationMs: 7,
      },
      new Date(0),
    );
    expect(entry).toMatchObject({ outcome: 'permanent', code: '550', enhanced_code: '5.1.1' });
    expect(entry.reply).not.toContain('@');
  });
});
