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

/** Anything shaped like an e-mail address, with or without angle brackets. */
const ADDRESS = /<?[^\s<>@"]+@[^\s<>@"]+>?/g;

/** The text with every address replaced by `<redacted>`. */
export function redactAddresses(text: string): string {
  return text.replace(ADDRESS, '<redacted>');
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
