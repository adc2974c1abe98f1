/**
 * Message ids (DESIGN §2): opaque, URL-safe, at most 32 characters. A message's id is derived from
 * its tenant and Idempotency-Key (`messageIdFor`), so the id itself is the idempotency guard: the
 * enqueue's `attribute_not_exists` condition on the record keyed by it lets one request win
 * (docs/decisions/, "The id is the idempotency guard"). ULIDs (`newMessageId`) remain for ids
 * that have no key, such as test fixtures.
 */
import { createHash } from 'node:crypto';
import { encodeTime, ulid } from 'ulid';

/** RFC 4648 base-32, lower case: letters and digits only, never mistaken for a ULID. */
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
/** 26 characters of 5 bits: the first 130 bits of a SHA-256. */
const DERIVED_ID_CHARS = 26;

const TIME_CHARS = 10;
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
/** Any id the contract allows: the API's routes, the dispatch payload and the relay judge ids by it. */
export const MESSAGE_ID_PATTERN = /^[0-9A-Za-z_-]{1,32}$/;

/**
 * A new ULID for `nowMs`. `random` must return values in [0, 1); values outside are folded into it.
 *
 * @throws the `ulid` package's ULIDError when `nowMs` is not a whole number of milliseconds
 * between 0 and 2^48 − 1 (NaN included: the clock is never read behind the caller's back).
 */
export function newMessageId(nowMs: number, random: () => number): string {
  const prng = () => {
    const value = random();
    if (!Number.isFinite(value) || value < 0) return 0;
    return value >= 1 ? 1 - Number.EPSILON : value;
  };
  // ulid(seedTime) silently reads Date.now() when seedTime is 0 or NaN, so the time part is
  // encoded here (encodeTime validates it) and ulid() only supplies the 16 random characters.
  return encodeTime(nowMs, TIME_CHARS) + ulid(1, prng).slice(TIME_CHARS);
}

/**
 * The id of the message a tenant enqueues with an Idempotency-Key: 26 lower-case base-32 characters
 * of SHA-256(tenant, NUL, key). The same tenant and key always give the same id; different tenants
 * never share one (the tenant is hashed in, and a tenant name cannot hold a NUL).
 */
export function messageIdFor(tenant: string, idempotencyKey: string): string {
  const digest = createHash('sha256')
    .update(tenant, 'utf8')
    .update('\0')
    .update(idempotencyKey, 'utf8')
    .digest();
  let id = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of digest) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5 && id.length < DERIVED_ID_CHARS) {
      bits -= 5;
      id += BASE32[(buffer >> bits) & 31];
    }
    if (id.length === DERIVED_ID_CHARS) break;
  }
  return id;
}

/**
 * Whether a string can be a message id: URL-safe, 1–32 characters. Deliberately wider than a
 * ULID because DESIGN §2 allows ids derived from (tenant, idempotency key).
 */
export function isMessageId(value: string): boolean {
  return typeof value === 'string' && MESSAGE_ID_PATTERN.test(value);
}

/** Whether a string is a canonical (upper-case) ULID. */
export function isUlid(value: string): boolean {
  return typeof value === 'string' && ULID_PATTERN.test(value);
}
