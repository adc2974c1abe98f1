/** The relay login. */
export interface SmtpCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * Where the relay login comes from. `get` resolves `undefined` when the relay needs no login
 * (a local sink); `invalidate` drops a cached value so the next `get` reads it again (called after
 * the relay refused the login, so a rotated secret is picked up without a cold start).
 */
export interface SmtpCredentialsSource {
  get(): Promise<SmtpCredentials | undefined>;
  invalidate(): void;
}
