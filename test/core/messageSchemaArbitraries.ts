/**
 * fast-check generators of what the message schema accepts as an address, built from its grammar
 * (lambdas/core/messageSchema.ts `parseAddress`): dot-atom and quoted local parts, ASCII and IDN
 * domains, bare addr-specs and mailboxes with a plain or quoted display name. The schema's property
 * test checks that it accepts every one; the redaction tests check that none survives redaction.
 */
import fc from 'fast-check';

const ATEXT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+/=?^_`{|}~-";

const atom = fc.string({ unit: fc.constantFrom(...ATEXT), minLength: 1, maxLength: 8 });

/** `john.doe`, `a+b`, `o'brien`. */
const dotAtomLocal = fc.array(atom, { minLength: 1, maxLength: 3 }).map((atoms) => atoms.join('.'));

/** Printable ASCII but `"` and `\`: what a quoted string holds unescaped (space, `@`, `<`, `>` included). */
const qtext = fc.integer({ min: 0x20, max: 0x7e }).filter((code) => code !== 0x22 && code !== 0x5c);
const quotedPair = fc.integer({ min: 0x20, max: 0x7e }).map((code) => `\\${String.fromCharCode(code)}`);

/** `"john doe"`, `"a@b"`, `"<x>"`, `"say \"hi\""`, `""`. */
const quotedLocal = fc
  .array(fc.oneof({ arbitrary: qtext.map((code) => String.fromCharCode(code)), weight: 4 }, quotedPair), {
    maxLength: 12,
  })
  .map((chars) => `"${chars.join('')}"`);

const asciiLabel = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?$/);
const idnLabel = fc.constantFrom('bücher', 'пример', '例え', 'mañana', 'δοκιμή');
const tld = fc.stringMatching(/^[a-z]{2,6}$/);

const domain = fc
  .tuple(
    fc.array(fc.oneof({ arbitrary: asciiLabel, weight: 4 }, idnLabel), { minLength: 1, maxLength: 3 }),
    tld,
  )
  .map(([labels, top]) => [...labels, top].join('.'));

export interface GeneratedAddress {
  /** What a client sends: `ada@example.com`, `Ada <ada@example.com>`, `"Lovelace, Ada" <"a b"@example.com>`. */
  readonly mailbox: string;
  /** The addr-spec, `local@domain`. */
  readonly address: string;
  readonly local: string;
  readonly domain: string;
}

/** An addr-spec the schema accepts, quoted local parts often. */
export const addrSpec = fc
  .record({
    local: fc.oneof(dotAtomLocal, quotedLocal).filter((local) => local.length <= 64),
    domain,
  })
  .map(({ local, domain }) => ({ local, domain, address: `${local}@${domain}` }));

const plainName = fc.stringMatching(/^[A-Za-z][A-Za-z .'-]{0,20}$/).map((name) => name.trim());
const quotedName = fc.stringMatching(/^[A-Za-z ,.;:@<>()]{1,20}$/).map((name) => `"${name}"`);

/** A mailbox the schema accepts: bare, `name <spec>`, `"quoted, name" <spec>` or `<spec>`. */
export const acceptedAddress: fc.Arbitrary<GeneratedAddress> = fc
  .tuple(addrSpec, fc.oneof(fc.constant(null), fc.constant(''), plainName, quotedName))
  .map(([spec, name]) => ({
    ...spec,
    // The schema finds the bracket by the last `<`, so it refuses `Ada <"a<b"@example.com>` (but
    // accepts `"a<b"@example.com` bare): such a local part is generated bare.
    mailbox:
      name === null || spec.local.includes('<')
        ? spec.address
        : `${name === '' ? '' : `${name} `}<${spec.address}>`,
  }));
