/**
 * Header safety: what may go into a header line of the email Postdate writes. CR or LF in any
 * header material is refused by name (header injection); other control characters, names that are
 * not tokens, the headers Postdate writes itself and relay-control headers are refused too.
 */

import { isRelayControlHeader, RELAY_CONTROL_MESSAGE } from './relayControlHeaders.js';
import { LIMITS } from './requestLimits.js';

export { RELAY_CONTROL_HEADERS, RELAY_CONTROL_MESSAGE } from './relayControlHeaders.js';

const CR_OR_LF = /[\r\n]/;
/** Every control character (C0, DEL, C1) but TAB: never allowed in a subject or header value. */
const CONTROL_EXCEPT_TAB = /(?!\t)\p{Cc}/u;
/** Every control character (C0, DEL, C1): never allowed in an address, a header name, a tag or a group key. */
const ANY_CONTROL = /\p{Cc}/u;

const CRLF_MESSAGE = 'must not contain CR or LF (header injection)';

/** The message for header material, or null when it is clean. CR/LF is named specifically. */
export function controlCharacterProblem(value: string, allowTab: boolean): string | null {
  if (CR_OR_LF.test(value)) return CRLF_MESSAGE;
  if ((allowTab ? CONTROL_EXCEPT_TAB : ANY_CONTROL).test(value)) return 'must not contain control characters';
  return null;
}

/** RFC 9110 token: what a header name may be (and a subset of RFC 5322 field names). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Headers Postdate writes itself; a request may not set them (compared case-insensitively). */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'message-id',
  'x-postdate-id',
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'reply-to',
  'sender',
  'return-path',
  'mime-version',
]);

/**
 * Whether Postdate sets this header itself (RESERVED_HEADERS and every `Content-*`, which the MIME
 * composition owns): the enqueue refuses it, the sender drops a stored one.
 */
export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || lower.startsWith('content-');
}

/** Why a request may not give this header name, or null when it may. */
export function headerNameProblem(name: string): string | null {
  const control = controlCharacterProblem(name, false);
  if (control) return `header name ${control}`;
  if (name.length > LIMITS.maxHeaderNameLength || !HEADER_NAME.test(name))
    return `header name must be a token (letters, digits, !#$%&'*+-.^_\`|~) of at most ${LIMITS.maxHeaderNameLength} characters`;
  if (isReservedHeader(name)) return 'header is set by Postdate and may not be given';
  if (isRelayControlHeader(name)) return RELAY_CONTROL_MESSAGE;
  return null;
}

/**
 * Why a value may not be a tag's, or null when it may: at most LIMITS.maxTagValueLength characters,
 * no control character. The API's rule for `tags` (a kind is `tags.kind`), and the operator CLI's
 * for the kind it pauses (`postdate sending pause --kind`): every kind a message can carry.
 */
export function tagValueProblem(value: string): string | null {
  const control = controlCharacterProblem(value, false);
  if (control) return `value ${control}`;
  // `tags.kind` keys the sending gate's pause map (DESIGN §5), and a `__proto__` key is no own key
  // once marshalled: DynamoDB refused the pause write. Refused as a value, as problem.ts refuses it as a name.
  if (value === '__proto__') return 'value "__proto__" is not allowed';
  if (value.length > LIMITS.maxTagValueLength)
    return `value must be at most ${LIMITS.maxTagValueLength} characters`;
  return null;
}

/** Why a header value may not be sent, or null when it may. */
export function headerValueProblem(value: string): string | null {
  const control = controlCharacterProblem(value, true);
  if (control) return `header value ${control}`;
  if (value.length > LIMITS.maxHeaderValueLength)
    return `header value must be at most ${LIMITS.maxHeaderValueLength} characters`;
  return null;
}
