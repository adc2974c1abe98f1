import fc from 'fast-check';
import { toASCII } from 'nodemailer/lib/punycode';
import { describe, expect, it } from 'vitest';
import {
  pendingPositions,
  progressAfter,
  type RecipientProgress,
  recipientCounts,
  screenRecipients,
} from '../../lambdas/core/recipients.js';
import { validateSuppressionRequest } from '../../lambdas/core/requestSchemas.js';
import {
  formerQuotedKey,
  formerSuppressionKey,
  suppressionKey,
  validateSuppressionAddress,
} from '../../lambdas/core/suppressions.js';

/** DESIGN §12: normalised addresses, the refusals that add one, and what the list makes of a message. */

describe('suppressed addresses', () => {
  it('are stored normalised: the addr-spec, lower-cased (domain and local part)', () => {
    expect(suppressionKey('Ada Lovelace <Ada@Example.COM>')).toBe('ada@example.com');
    expect(suppressionKey('"Lovelace, Ada" <ADA@example.com>')).toBe('ada@example.com');
    expect(suppressionKey('not an address')).toBeUndefined();
    expect(validateSuppressionAddress('Bob@Example.Net')).toEqual({ ok: true, value: 'bob@example.net' });
  });

  it('key a quoted local part as RFC 5322 prefers it (a quoted string is the atom, semantically; decision 0184)', () => {
    expect(suppressionKey('"Ada"@Example.com')).toBe('ada@example.com');
    expect(suppressionKey('Ada <"Ada.Lovelace"@example.com>')).toBe('ada.lovelace@example.com');
    expect(suppressionKey('"a\\bc"@example.com')).toBe('abc@example.com');
    // One that needs its quotes keeps them, with only the escapes it needs.
    expect(suppressionKey('"Ada Lovelace"@example.com')).toBe('"ada lovelace"@example.com');
    expect(suppressionKey('"a\\ b"@example.com')).toBe('"a b"@example.com');
    expect(suppressionKey('"a..b"@example.com')).toBe('"a..b"@example.com');
    expect(validateSuppressionAddress('"Bob"@example.net')).toEqual({ ok: true, value: 'bob@example.net' });
    // The key such an entry was stored under before, for the sender's lookup and DELETE.
    expect(formerQuotedKey('"Ada"@Example.com')).toBe('"ada"@example.com');
    expect(formerQuotedKey('"Ada Lovelace"@example.com')).toBeUndefined();
    expect(formerQuotedKey('Ada@example.com')).toBeUndefined();
  });

  it('refuse a bad address, naming the field `address`, without echoing it', () => {
    for (const bad of ['', 'nobody', 'a@b', 'Ada <ada@example.com>', ' ada@example.com', 'a\r\n@x.com']) {
      const result = validateSuppressionAddress(bad);
      expect(result.ok, JSON.stringify(bad)).toBe(false);
      if (!result.ok) {
        expect(result.errors).toHaveLength(1);
        expect(result.errors[0]?.field).toBe('address');
        if (bad.length > 3) expect(result.errors[0]?.message).not.toContain(bad.trim());
      }
    }
  });

  it('take a PUT body with an optional known reason and nothing else', () => {
    expect(validateSuppressionRequest(undefined)).toEqual({ ok: true, value: { reason: undefined } });
    expect(validateSuppressionRequest({})).toEqual({ ok: true, value: { reason: undefined } });
    expect(validateSuppressionRequest({ reason: 'complaint' })).toEqual({
      ok: true,
      value: { reason: 'complaint' },
    });
    const bad = validateSuppressionRequest({ reason: 'spam' });
    expect(bad.ok || bad.errors.map((error) => error.field)).toEqual(['/reason']);
    const unknown = validateSuppressionRequest({ reason: 'manual', note: 'x' });
    expect(unknown.ok || unknown.errors.map((error) => error.field)).toEqual(['/note']);
    for (const notObject of [[], null, 'manual', 3]) {
      const refused = validateSuppressionRequest(notObject);
      expect(refused.ok || refused.errors.map((error) => error.field)).toEqual(['body']);
    }
  });
});

describe('the key of an internationalised domain (DESIGN §12; decision 0153)', () => {
  const lower = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'.split(''));
  const nonAscii = fc.constantFrom(...'äöüéèñçøåæœłżščřğışжяфлщ日本中文語한국'.split(''));
  /** A label of lower-case letters, at least one of them not ASCII (as a user writes an IDN). */
  const unicodeLabel = fc
    .tuple(fc.array(fc.oneof(lower, nonAscii), { maxLength: 8 }), nonAscii, fc.array(lower, { maxLength: 4 }))
    .map(([head, idn, tail]) => [...head, idn, ...tail].join(''));
  const asciiLabel = fc.array(lower, { minLength: 1, maxLength: 10 }).map((chars) => chars.join(''));
  const local = fc
    .array(fc.constantFrom(...'abcXYZ019.+_-'.split('')), { minLength: 1, maxLength: 12 })
    .map((chars) => chars.join(''))
    .filter((value) => !value.startsWith('.') && !value.endsWith('.') && !value.includes('..'));
  const unicodeDomain = fc
    .tuple(unicodeLabel, fc.option(asciiLabel, { nil: undefined }))
    .map(([idn, more]) => (more === undefined ? `${idn}.example` : `${more}.${idn}.example`));

  it('is the same for the Unicode spelling and the punycode the mailer sends (any case): the ASCII form', () => {
    fc.assert(
      fc.property(local, unicodeDomain, (name, domain) => {
        const punycode = toASCII(domain);
        const key = suppressionKey(`${name}@${domain}`);
        expect(key).toBe(`${name.toLowerCase()}@${punycode}`);
        expect(suppressionKey(`${name}@${punycode}`)).toBe(key);
        expect(suppressionKey(`${name.toUpperCase()}@${punycode.toUpperCase()}`)).toBe(key);
        expect(validateSuppressionAddress(`${name}@${domain}`)).toEqual({ ok: true, value: key });
        // A key is its own key: stored, read back and looked up alike.
        expect(suppressionKey(key ?? '')).toBe(key);
      }),
    );
    expect(suppressionKey('Ada <Ada@BÜCHER.example>')).toBe('ada@xn--bcher-kva.example');
    expect(suppressionKey('ada@日本.example')).toBe('ada@xn--wgv71a.example');
  });

  it('leaves the key of an ASCII address as it was: the address lower-cased', () => {
    const mixed = fc
      .array(fc.constantFrom(...'abcXYZ0189-'.split('')), { minLength: 1, maxLength: 10 })
      .map((chars) => chars.join(''))
      .filter((label) => !label.startsWith('-') && !label.endsWith('-'));
    fc.assert(
      fc.property(local, fc.array(mixed, { minLength: 1, maxLength: 3 }), (name, labels) => {
        const address = `${name}@${[...labels, 'Example'].join('.')}`;
        expect(suppressionKey(address)).toBe(address.toLowerCase());
        expect(formerSuppressionKey(address.toLowerCase())).toBeUndefined();
      }),
    );
    // Digits-only labels stay as written (no IPv4 reading).
    expect(suppressionKey('ops@0x7f.1.example')).toBe('ops@0x7f.1.example');
  });

  it('names the Unicode form an entry of an internationalised domain was stored under before', () => {
    fc.assert(
      fc.property(local, unicodeDomain, (name, domain) => {
        const key = suppressionKey(`${name}@${domain}`) ?? '';
        expect(formerSuppressionKey(key)).toBe(`${name.toLowerCase()}@${domain}`);
      }),
    );
  });
});

describe('screening a claimed message against the list', () => {
  const none: RecipientProgress = { accepted: [], rejected: [] };

  it('leaves the suppressed out of the envelope and sends to the rest', () => {
    expect(screenRecipients(3, none, [1])).toEqual({
      kind: 'send',
      progress: { accepted: [], rejected: [], suppressed: [1] },
      envelope: [0, 2],
    });
  });

  it('ends a message whose every recipient is suppressed as suppressed', () => {
    expect(screenRecipients(2, none, [1, 0])).toEqual({
      kind: 'settle',
      to: 'suppressed',
      progress: { accepted: [], rejected: [], suppressed: [0, 1] },
    });
  });

  it('ends it as an attempt would have when the pending rest is suppressed', () => {
    expect(screenRecipients(2, { accepted: [0], rejected: [] }, [1])).toMatchObject({
      kind: 'settle',
      to: 'sent',
    });
    expect(screenRecipients(2, { accepted: [], rejected: [0] }, [1])).toMatchObject({
      kind: 'settle',
      to: 'failed',
    });
  });

  it('changes nothing when nobody pending is on the list (settled positions are not screened again)', () => {
    const progress = { accepted: [0], rejected: [1] };
    expect(screenRecipients(3, progress, [0, 1])).toEqual({ kind: 'send', progress, envelope: [2] });
  });

  const arbitraryCase = fc
    .integer({ min: 1, max: 12 })
    .chain((total) =>
      fc.record({
        total: fc.constant(total),
        settled: fc.array(fc.constantFrom('pending', 'accepted', 'rejected', 'suppressed'), {
          minLength: total,
          maxLength: total,
        }),
        listed: fc.subarray(Array.from({ length: total }, (_, i) => i)),
      }),
    )
    .map(({ total, settled, listed }) => {
      const at = (kind: string) => settled.flatMap((value, i) => (value === kind ? [i] : []));
      const suppressed = at('suppressed');
      const progress: RecipientProgress = {
        accepted: at('accepted'),
        rejected: at('rejected'),
        ...(suppressed.length > 0 ? { suppressed } : {}),
      };
      return { total, progress, listed };
    });

  it('never puts a listed recipient in the envelope, never unsettles anyone, and counts every recipient once', () => {
    fc.assert(
      fc.property(arbitraryCase, ({ total, progress, listed }) => {
        const screening = screenRecipients(total, progress, listed);
        const pendingBefore = pendingPositions(total, progress);
        const after = screening.progress;
        // Settled positions stay settled as they were.
        expect(after.accepted).toEqual(progress.accepted);
        expect(after.rejected).toEqual(progress.rejected);
        for (const position of progress.suppressed ?? []) expect(after.suppressed).toContain(position);
        // Newly suppressed: exactly the pending ones on the list.
        const newly = (after.suppressed ?? []).filter((p) => !(progress.suppressed ?? []).includes(p));
        expect(newly).toEqual(pendingBefore.filter((p) => listed.includes(p)));
        const counts = recipientCounts(total, after);
        expect(counts.accepted + counts.rejected + counts.suppressed + counts.pending).toBe(total);
        if (screening.kind === 'send') {
          expect(screening.envelope).toEqual(pendingPositions(total, after));
          for (const position of screening.envelope) expect(listed).not.toContain(position);
          // Nobody newly suppressed: the message goes on exactly as it would have without a list.
          if (newly.length === 0) expect(screening.progress).toBe(progress);
          else expect(screening.envelope.length).toBeGreaterThan(0);
        } else {
          expect(pendingPositions(total, after)).toEqual([]);
          expect(newly.length).toBeGreaterThan(0);
          const expected =
            after.accepted.length > 0 ? 'sent' : after.rejected.length > 0 ? 'failed' : 'suppressed';
          expect(screening.to).toBe(expected);
        }
      }),
    );
  });

  it('keeps the suppressed through the outcome of the attempt that follows', () => {
    fc.assert(
      fc.property(arbitraryCase, fc.boolean(), ({ total, progress, listed }, delivered) => {
        const screening = screenRecipients(total, progress, listed);
        if (screening.kind !== 'send') return;
        const after = progressAfter(screening.progress, {
          attempted: screening.envelope,
          delivered,
          refused: [],
          allRefused: !delivered,
        });
        expect(after.suppressed ?? []).toEqual(screening.progress.suppressed ?? []);
        const counts = recipientCounts(total, after);
        expect(counts.accepted + counts.rejected + counts.suppressed + counts.pending).toBe(total);
      }),
    );
  });
});
