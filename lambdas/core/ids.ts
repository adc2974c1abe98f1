/**
 * Message ids (DESIGN §2): opaque, URL-safe, at most 32 characters. Postdate issues ULIDs
 * (26 Crockford base-32 characters, time-ordered), built from a clock value and a random source
 * passed in.
 */
import { encodeTime, ulid } from 'ulid';

const TIME_CHARS = 10;
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
/** Any id the contract allows; the same rule as the dispatch payload's `id`. */
const MESSAGE_ID_PATTERN = /^[0-9A-Za-z_-]{1,32}$/;

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
