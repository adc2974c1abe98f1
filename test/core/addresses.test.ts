import { describe, expect, it } from 'vitest';
import { isAllowedSender, parseAddress } from '../../lambdas/core/addresses.js';

describe('parseAddress (RFC 5322 mailbox)', () => {
  it.each([
    ['ada@example.com', null, 'ada@example.com'],
    ['Ops <ops@example.com>', 'Ops', 'ops@example.com'],
    ['"Lovelace, Ada" <ada@example.com>', 'Lovelace, Ada', 'ada@example.com'],
    ['"Say \\"hi\\"" <a@example.com>', 'Say "hi"', 'a@example.com'],
    ['Zoë Ünïcode <zoe@example.com>', 'Zoë Ünïcode', 'zoe@example.com'],
    ['<bare@example.com>', null, 'bare@example.com'],
    ['first.last+tag@sub.example.co.uk', null, 'first.last+tag@sub.example.co.uk'],
    ['"quoted local"@example.com', null, '"quoted local"@example.com'],
    ['user@bücher.example', null, 'user@bücher.example'],
  ])('accepts %s', (input, name, address) => {
    expect(parseAddress(input)).toMatchObject({ ok: true, value: { name, address } });
  });

  it.each([
    'plainaddress',
    '@example.com',
    'ada@',
    'ada@localhost',
    'ada@example..com',
    'ada..x@example.com',
    '.ada@example.com',
    'ada@-example.com',
    'ada@example.123',
    'ada@[192.0.2.1]',
    'Lovelace, Ada <ada@example.com>',
    '"unterminated <ada@example.com>',
    'ada@example.com>',
    'two@example.com, three@example.com',
    'ümlaut@example.com',
    `${'x'.repeat(65)}@example.com`,
    'ada@example.com\n',
    'Ada\r\n <ada@example.com>',
    'ada\u0000@example.com',
    '',
  ])('refuses %j', (input) => {
    expect(parseAddress(input).ok).toBe(false);
  });
});

describe('a domain as the envelope carries it (A-labels, RFC 5890 and 5321 §4.5.3.1.2)', () => {
  // The mailer puts the ASCII form of an internationalised domain into RCPT TO (decision 0234): a
  // domain without one reached the relay in UTF-8 (and the headers in another form), one with a label
  // over 63 octets as one no DNS can hold; either was a 202 and then a failure (DESIGN §3).
  it.each([
    ['a right-to-left label starting a domain, which IDNA refuses (RFC 5893)', 'ada@\u05d0a.example'],
    [
      'two kinds of Arabic-Indic digits in one label, which IDNA refuses (RFC 5892)',
      'ada@a\u0660\u06f0.example',
    ],
    ['a label of 63 letters whose A-label is 69 octets', `ada@${'\u00fc'.repeat(63)}.example`],
    [
      'a domain whose A-labels make more than 253 octets',
      `ada@${Array(4).fill('\u00fc'.repeat(55)).join('.')}.example`,
    ],
  ])('refuses %s', (_why, address) => {
    expect(parseAddress(address)).toMatchObject({ ok: false, reason: expect.stringMatching(/domain/) });
  });

  it.each(['user@b\u00fccher.example', 'ada@\u05d0\u05d1.example', `ada@${'\u00fc'.repeat(56)}.example`])(
    'accepts %s, which has an A-label form',
    (address) => {
      expect(parseAddress(address).ok).toBe(true);
    },
  );
});

describe('isAllowedSender', () => {
  it('matches *, *@domain and exact addresses, case-insensitively', () => {
    expect(isAllowedSender('a@b.example', ['*'])).toBe(true);
    expect(isAllowedSender('A@B.example', ['*@b.example'])).toBe(true);
    expect(isAllowedSender('a@c.b.example', ['*@b.example'])).toBe(false);
    expect(isAllowedSender('Ops@Example.com', ['ops@example.com'])).toBe(true);
    expect(isAllowedSender('ops@example.com', [])).toBe(false);
  });
});
