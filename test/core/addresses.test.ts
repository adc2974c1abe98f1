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

describe('isAllowedSender', () => {
  it('matches *, *@domain and exact addresses, case-insensitively', () => {
    expect(isAllowedSender('a@b.example', ['*'])).toBe(true);
    expect(isAllowedSender('A@B.example', ['*@b.example'])).toBe(true);
    expect(isAllowedSender('a@c.b.example', ['*@b.example'])).toBe(false);
    expect(isAllowedSender('Ops@Example.com', ['ops@example.com'])).toBe(true);
    expect(isAllowedSender('ops@example.com', [])).toBe(false);
  });
});
