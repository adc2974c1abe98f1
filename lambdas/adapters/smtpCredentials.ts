import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

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

/** Raised when the secret cannot be read or does not hold `{ "username", "password" }`. */
export class SmtpCredentialsError extends Error {
  override readonly name = 'SmtpCredentialsError';
  /** nodemailer's code for a bad configuration, so the classifier files this under `config`. */
  readonly code = 'ECONFIG';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Local: SMTP_USER / SMTP_PASS from the environment (both or neither). */
export function environmentSmtpCredentials(smtp: {
  readonly user: string | undefined;
  readonly pass: string | undefined;
}): SmtpCredentialsSource {
  const credentials =
    smtp.user !== undefined && smtp.pass !== undefined
      ? { username: smtp.user, password: smtp.pass }
      : undefined;
  return { get: async () => credentials, invalidate: () => {} };
}

export interface SecretsManagerSmtpCredentialsOptions {
  readonly client: SecretsManagerClient;
  /** POSTDATE_SMTP_SECRET_ARN: a JSON secret `{ "username": "…", "password": "…" }`. */
  readonly secretArn: string;
  /** How long a read value is reused; default 5 minutes (rotation is picked up within that). */
  readonly cacheMilliseconds?: number;
  readonly now?: () => number;
}

/**
 * AWS: the relay login from Secrets Manager, read once and cached per warm container. A failed read
 * is not cached, so the next attempt tries again.
 */
export function secretsManagerSmtpCredentials(
  options: SecretsManagerSmtpCredentialsOptions,
): SmtpCredentialsSource {
  const ttl = options.cacheMilliseconds ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  let cached: { readonly value: Promise<SmtpCredentials>; readonly at: number } | undefined;

  const read = async (): Promise<SmtpCredentials> => {
    let secret: string | undefined;
    try {
      const result = await options.client.send(new GetSecretValueCommand({ SecretId: options.secretArn }));
      secret = result.SecretString;
    } catch (error) {
      throw new SmtpCredentialsError('the SMTP secret could not be read from Secrets Manager', {
        cause: error,
      });
    }
    return parseSmtpSecret(secret);
  };

  return {
    get() {
      if (cached === undefined || now() - cached.at >= ttl) {
        const value = read();
        const entry = { value, at: now() };
        cached = entry;
        // A failed read must not stay cached.
        value.catch(() => {
          if (cached === entry) cached = undefined;
        });
      }
      return cached.value;
    },
    invalidate() {
      cached = undefined;
    },
  };
}

/** Parses the secret string; the error never contains the secret's text. */
export function parseSmtpSecret(secret: string | undefined): SmtpCredentials {
  if (secret === undefined || secret === '') {
    throw new SmtpCredentialsError('the SMTP secret has no SecretString');
  }
  let value: unknown;
  try {
    value = JSON.parse(secret);
  } catch {
    throw new SmtpCredentialsError('the SMTP secret is not JSON (expected {"username","password"})');
  }
  if (typeof value !== 'object' || value === null) {
    throw new SmtpCredentialsError('the SMTP secret is not a JSON object (expected {"username","password"})');
  }
  const { username, password } = value as Record<string, unknown>;
  if (typeof username !== 'string' || username === '' || typeof password !== 'string' || password === '') {
    throw new SmtpCredentialsError('the SMTP secret must hold non-empty "username" and "password" strings');
  }
  return { username, password };
}
