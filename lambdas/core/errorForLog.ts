/**
 * What a log line may say about an unexpected error. Messages of vendor and library errors can carry
 * request data (nodemailer's list the refused recipients), so the message is kept only with every
 * address replaced and cut short; the name and a string `code` are always safe.
 */

export interface LoggedError {
  readonly name: string;
  readonly code?: string;
  readonly message?: string;
}

/** Longest message a log keeps. */
const MAX_LOGGED_MESSAGE = 200;

/**
 * A local part: characters but space, `<`, `>`, `@` and `"`, and whole quoted strings (`"john doe"`).
 * Bounded by what an address may be (a local part of at most 64 characters, a domain of at most
 * 253), so the work at each position of a long hostile text is bounded too.
 */
const LOCAL = String.raw`(?:[^\s<>@"]|"(?:[^"\\]|\\.){0,62}"){1,64}`;
const DOMAIN = String.raw`[^\s<>@"]{1,253}`;
/** `<local@domain>`: redacted first, so that the quotes of a display name before it (`"A" <"b c"@d>`) are never paired with the address's. */
const BRACKETED = new RegExp(`<${LOCAL}@${DOMAIN}>`, 'g');
/** Anything else shaped like an e-mail address, with or without angle brackets. */
const ADDRESS = new RegExp(`<?${LOCAL}@${DOMAIN}>?`, 'g');

/**
 * The text with every address replaced by `<redacted>`: every form messageSchema's `parseAddress`
 * accepts, quoted local parts (`"john doe"@example.com`, `"a@b"@example.com`) included, so that no
 * accepted address survives in a stored reply or a log. Each step of LOCAL consumes one character or
 * one whole quoted string, never the same text both ways, so a hostile reply cannot make it backtrack
 * catastrophically.
 */
export function redactAddresses(text: string): string {
  return text.replace(BRACKETED, '<redacted>').replace(ADDRESS, '<redacted>');
}

export function errorForLog(error: unknown): LoggedError {
  if (typeof error !== 'object' || error === null) return { name: 'non-error', message: typeof error };
  const { name, code, message } = error as { name?: unknown; code?: unknown; message?: unknown };
  return {
    name: typeof name === 'string' ? name : 'Error',
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof message === 'string' && message !== ''
      ? { message: redactAddresses(message).slice(0, MAX_LOGGED_MESSAGE) }
      : {}),
  };
}
