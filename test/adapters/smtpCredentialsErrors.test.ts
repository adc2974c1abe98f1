import {
  DecryptionFailure,
  InternalServiceError,
  ResourceNotFoundException,
  type SecretsManagerClient,
  SecretsManagerServiceException,
} from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import {
  SmtpCredentialsError,
  secretsManagerSmtpCredentials,
} from '../../lambdas/adapters/smtpCredentials.js';
import { classifySmtpError } from '../../lambdas/core/classifySmtpError.js';

/**
 * Issue 15 §4: a Secrets Manager read that fails (throttled, a 5xx, the network, a timeout) is
 * transient; config is for a secret that is wrong (malformed, missing, cannot be decrypted). The
 * client is the one stand-in (no local Secrets Manager); the errors are the SDK's own classes.
 */
function failingWith(error: unknown): SecretsManagerClient {
  return {
    send: async () => {
      throw error;
    },
  } as unknown as SecretsManagerClient;
}

function answering(secretString: string): SecretsManagerClient {
  return { send: async () => ({ SecretString: secretString }) } as unknown as SecretsManagerClient;
}

async function failureOf(client: SecretsManagerClient): Promise<SmtpCredentialsError> {
  const source = secretsManagerSmtpCredentials({
    client,
    secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:smtp',
  });
  const error = await source.get().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(SmtpCredentialsError);
  return error as SmtpCredentialsError;
}

const throttled = new SecretsManagerServiceException({
  name: 'ThrottlingException',
  $fault: 'client',
  $metadata: { httpStatusCode: 400 },
  message: 'Rate exceeded',
});
const internal = new InternalServiceError({ message: 'internal', $metadata: { httpStatusCode: 500 } });
const unavailable = new SecretsManagerServiceException({
  name: 'ServiceUnavailable',
  $fault: 'server',
  $metadata: { httpStatusCode: 503 },
  message: 'unavailable',
});
const network = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
const timedOut = Object.assign(new Error('Connection timed out after 3000 ms'), { name: 'TimeoutError' });

describe('a failed read of the SMTP secret', () => {
  it.each([
    ['throttled', throttled],
    ['a 500', internal],
    ['a 503', unavailable],
    ['a network error', network],
    ['a timeout', timedOut],
  ])('%s is ESECRETREAD: transient, before the relay', async (_name, thrown) => {
    const error = await failureOf(failingWith(thrown));
    expect(error.code).toBe('ESECRETREAD');
    expect(error.cause).toBe(thrown);
    expect(classifySmtpError(error).class).toBe('transient');
    expect(classifySmtpError(error).origin).toBe('outage');
  });

  it.each([
    [
      'missing',
      new ResourceNotFoundException({ message: 'no such secret', $metadata: { httpStatusCode: 400 } }),
    ],
    ['undecryptable', new DecryptionFailure({ message: 'kms', $metadata: { httpStatusCode: 400 } })],
    [
      'forbidden (403)',
      new SecretsManagerServiceException({
        name: 'AccessDeniedException',
        $fault: 'client',
        $metadata: { httpStatusCode: 403 },
        message: 'denied',
      }),
    ],
  ])('a secret that is %s is ECONFIG: config', async (_name, thrown) => {
    const error = await failureOf(failingWith(thrown));
    expect(error.code).toBe('ECONFIG');
    expect(classifySmtpError(error).class).toBe('config');
  });
});

describe('a malformed SMTP secret', () => {
  it.each([
    ['not JSON', 'hunter2'],
    ['not an object', '"hunter2"'],
    ['without a password', '{"username":"relay"}'],
    ['with an empty username', '{"username":"","password":"p"}'],
    ['empty', ''],
  ])('%s is ECONFIG: config, and the error never holds the secret', async (_name, secret) => {
    const error = await failureOf(answering(secret));
    expect(error.code).toBe('ECONFIG');
    expect(classifySmtpError(error).class).toBe('config');
    expect(classifySmtpError(error).origin).toBe('outage');
    if (secret !== '') expect(`${error.message} ${String(error.cause ?? '')}`).not.toContain(secret);
  });
});
