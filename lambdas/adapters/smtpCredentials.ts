import {
  DecryptionFailure,
  GetSecretValueCommand,
  InvalidParameterException,
  InvalidRequestException,
  ResourceNotFoundException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { PostdateError } from '../core/postdateError.js';
import type { SmtpCredentials, SmtpCredentialsSource } from '../ports/SmtpCredentialsSource.js';

/**
 * What went wrong with the relay login, as a code lambdas/core/classifySmtpError.ts reads:
 * - `ESECRETREAD`: the read failed (throttled, a 5xx, the network, the SDK's timeouts): transient.
 * - `ECONFIG` (nodemailer's code for a bad configuration): the secret is wrong (not JSON, no
 *   username/password, does not exist, cannot be decrypted, access forbidden): config, alarmed.
 */
export type SmtpCredentialsErrorCode = 'ESECRETREAD' | 'ECONFIG';

/** Raised when the secret cannot be read or does not hold `{ "username", "password" }`. */
export class SmtpCredentialsError extends PostdateError {
  override readonly name = 'SmtpCredentialsError';
  readonly code: SmtpCredentialsErrorCode;
  constructor(
    message: string,
    options: { readonly code: SmtpCredentialsErrorCode; readonly cause?: unknown },
  ) {
    super(message, { class: options.code === 'ESECRETREAD' ? 'transient' : 'config', cause: options.cause });
    this.code = options.code;
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
      throw secretReadError(error);
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

/**
 * Secrets Manager's answers that say the secret itself is wrong; anything else (throttling, 5xx,
 * the network, a timeout, an error without a response) may pass and is retried.
 */
function secretReadError(error: unknown): SmtpCredentialsError {
  const wrongSecret =
    error instanceof ResourceNotFoundException ||
    error instanceof DecryptionFailure ||
    error instanceof InvalidParameterException ||
    error instanceof InvalidRequestException ||
    httpStatusOf(error) === 403;
  return wrongSecret
    ? new SmtpCredentialsError('the SMTP secret does not exist, cannot be decrypted or may not be read', {
        code: 'ECONFIG',
        cause: error,
      })
    : new SmtpCredentialsError('the SMTP secret could not be read from Secrets Manager', {
        code: 'ESECRETREAD',
        cause: error,
      });
}

function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const metadata = (error as { $metadata?: { httpStatusCode?: unknown } }).$metadata;
  return typeof metadata?.httpStatusCode === 'number' ? metadata.httpStatusCode : undefined;
}

/** Parses the secret string; the error never contains the secret's text. */
export function parseSmtpSecret(secret: string | undefined): SmtpCredentials {
  if (secret === undefined || secret === '') {
    throw new SmtpCredentialsError('the SMTP secret has no SecretString', { code: 'ECONFIG' });
  }
  let value: unknown;
  try {
    value = JSON.parse(secret);
  } catch {
    throw new SmtpCredentialsError('the SMTP secret is not JSON (expected {"username","password"})', {
      code: 'ECONFIG',
    });
  }
  if (typeof value !== 'object' || value === null) {
    throw new SmtpCredentialsError(
      'the SMTP secret is not a JSON object (expected {"username","password"})',
      { code: 'ECONFIG' },
    );
  }
  const { username, password } = value as Record<string, unknown>;
  if (typeof username !== 'string' || username === '' || typeof password !== 'string' || password === '') {
    throw new SmtpCredentialsError('the SMTP secret must hold non-empty "username" and "password" strings', {
      code: 'ECONFIG',
    });
  }
  return { username, password };
}
