import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { errorForLog, redactAddresses } from '../../lambdas/core/errorForLog.js';
import { acceptedAddress, addrSpec } from './messageSchemaArbitraries.js';

describe('errorForLog', () => {
  it('keeps the name, a string code and the message with every address replaced', () => {
    const error = Object.assign(
      new Error("Can't send mail - all recipients were rejected: 550 <ada@example.com>"),
      {
        code: 'EENVELOPE',
      },
    );
    expect(errorForLog(error)).toEqual({
      name: 'Error',
      code: 'EENVELOPE',
      message: "Can't send mail - all recipients were rejected: 550 <redacted>",
    });
  });

  it('cuts a long message to 200 characters and leaves out a code that is not a string', () => {
    const error = Object.assign(new TypeError('x'.repeat(500)), { code: 42 });
    expect(errorForLog(error)).toEqual({ name: 'TypeError', message: 'x'.repeat(200) });
  });

  it('says only the type of something thrown that is not an object', () => {
    expect(errorForLog('bob@example.com')).toEqual({ name: 'non-error', message: 'string' });
    expect(errorForLog(undefined)).toEqual({ name: 'non-error', message: 'undefined' });
  });

  it('redacts bare and bracketed addresses alike', () => {
    expect(redactAddresses('to ada@example.com and <bob@example.org>.')).toBe(
      'to <redacted> and <redacted>.',
    );
  });

  it('redacts quoted local parts, also inside a relay reply', () => {
    expect(redactAddresses('"john doe"@example.com')).toBe('<redacted>');
    expect(redactAddresses('550 5.1.1 <"john doe"@example.com>: user unknown')).toBe(
      '550 5.1.1 <redacted>: user unknown',
    );
    expect(redactAddresses('550 5.1.1 <"a@b \\" <c>"@example.com>: user unknown')).toBe(
      '550 5.1.1 <redacted>: user unknown',
    );
    expect(redactAddresses('he wrote "see ada@example.com" twice')).toBe('he wrote "see <redacted>" twice');
  });

  it('leaves no address the schema accepts, bare, bracketed or in a relay reply', () => {
    fc.assert(
      fc.property(addrSpec, ({ address }) => {
        expect(redactAddresses(address)).toBe('<redacted>');
        expect(redactAddresses(`550 5.1.1 <${address}>: user unknown`)).toBe(
          '550 5.1.1 <redacted>: user unknown',
        );
        expect(redactAddresses(`RCPT TO:<${address}> refused; ${address} unknown`)).toBe(
          'RCPT TO:<redacted> refused; <redacted> unknown',
        );
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves no addr-spec of any accepted mailbox, whatever its display name', () => {
    fc.assert(
      fc.property(acceptedAddress, ({ mailbox, address, domain }) => {
        for (const text of [
          mailbox,
          `550 5.1.1 ${mailbox}: user unknown`,
          `Recipients: ${mailbox}, ${mailbox}`,
        ]) {
          const redacted = redactAddresses(text);
          expect(redacted).not.toContain(address);
          expect(redacted).not.toContain(`@${domain}`);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('does not slow down on a long hostile text (bounded work at each position)', () => {
    // Unbounded, each of these takes seconds (quadratic); bounded, milliseconds.
    for (const hostile of [
      'a'.repeat(100_000),
      '"a'.repeat(50_000),
      '"'.repeat(100_000),
      `"${'\\"'.repeat(50_000)}`,
    ]) {
      const started = performance.now();
      redactAddresses(`550 ${hostile} @`);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  it('still redacts the domain of an address longer than any the schema accepts', () => {
    const redacted = redactAddresses(`550 <${'x'.repeat(100)}@example.com>: user unknown`);
    expect(redacted).not.toContain('example.com');
  });
});
