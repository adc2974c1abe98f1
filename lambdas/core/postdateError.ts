/**
 * The one base of Postdate's typed errors (STYLE.md, "typed errors"): a `name`, the `cause` it came
 * from, and a retry `class` that decides what happens next — never the message text. The same four
 * classes sort an SMTP failure (core/classifySmtpError.ts) and the `last_error` of a message.
 */

/** What a failure means for a retry. */
export const ERROR_CLASS = {
  /** Try again later: the same request may well succeed (throttling, a timeout, contention). */
  transient: 'transient',
  /** Do not try again: the request itself is refused. */
  permanent: 'permanent',
  /** Do not try again until an operator fixes a setting, a secret or a permission (alarmed). */
  config: 'config',
  /** It is not known whether the effect happened (the relay may have accepted the message). */
  ambiguous: 'ambiguous',
} as const;

export type ErrorClass = (typeof ERROR_CLASS)[keyof typeof ERROR_CLASS];

export interface PostdateErrorOptions {
  readonly class: ErrorClass;
  /** The error this one explains (a vendor's exception): kept, so logs tell throttling from access denied. */
  readonly cause?: unknown;
}

export class PostdateError extends Error {
  override readonly name: string = 'PostdateError';
  readonly class: ErrorClass;
  constructor(message: string, options: PostdateErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.class = options.class;
  }
}

/** Whether trying the same thing again may succeed: only a PostdateError of class transient says so. */
export function isTransient(error: unknown): boolean {
  return error instanceof PostdateError && error.class === ERROR_CLASS.transient;
}
