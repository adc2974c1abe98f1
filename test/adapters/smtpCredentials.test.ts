import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import {
  environmentSmtpCredentials,
  parseSmtpSecret,
  SmtpCredentialsError,
  secretsManagerSmtpCredentials,
} from '../../lambdas/adapters/smtpCredentials.js';

/**
 * Secrets Manager has no local emulator in this project, so its client is the one thing replaced
 * here: a stand-in `send` that answers GetSecretValue.
 */
function fakeSecretsManager(answers: (() => Promise<{ SecretString?: string }>)[]) {
  let calls = 0;
  const client = {
    send: async () => {
      const answer = answers[Math.min(calls, answers.length - 1)];
      calls += 1;
      if (answer === undefined) throw new Error('no answer');
      return answer();
    },
  } as unknown as SecretsManagerClient;
  return { client, calls: () => calls };
}

describe('SMTP credentials', () => {
  it('reads the secret once and serves it from the cache until it is stale or invalidated', async () => {
    let now = 0;
    const sm = fakeSecretsManager([
      async () => ({ SecretString: '{"username":"relay","password":"s3cret"}' }),
    ]);
    const source = secretsManagerSmtpCredentials({
      client: sm.client,
      secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:smtp',
      cacheMilliseconds: 1000,
      now: () => now,
    });
    expect(await source.get()).toEqual({ username: 'relay', password: 's3cret' });
    expect(await source.get()).toEqual({ username: 'relay', password: 's3cret' });
    expect(sm.calls()).toBe(1);
    now = 1000;
    await source.get();
    expect(sm.calls()).toBe(2);
    source.invalidate();
    await source.get();
    expect(sm.calls()).toBe(3);
  });

  it('does not cache a failed read, and never puts the secret in an error', async () => {
    const sm = fakeSecretsManager([
      async () => {
        throw new Error('AccessDenied');
      },
      async () => ({ SecretString: '{"username":"relay","password":"s3cret"}' }),
    ]);
    const source = secretsManagerSmtpCredentials({ client: sm.client, secretArn: 'arn:secret' });
    await expect(source.get()).rejects.toBeInstanceOf(SmtpCredentialsError);
    await expect(source.get()).resolves.toEqual({ username: 'relay', password: 's3cret' });
    expect(() => parseSmtpSecret('{"username":"relay","password":""}')).toThrow(/non-empty/);
    expect(() => parseSmtpSecret('hunter2')).toThrow(SmtpCredentialsError);
    try {
      parseSmtpSecret('hunter2');
    } catch (error) {
      expect(String(error)).not.toContain('hunter2');
    }
  });

  it('uses SMTP_USER / SMTP_PASS locally, or no login at all', async () => {
    expect(await environmentSmtpCredentials({ user: 'u', pass: 'p' }).get()).toEqual({
      username: 'u',
      password: 'p',
    });
    expect(await environmentSmtpCredentials({ user: undefined, pass: undefined }).get()).toBeUndefined();
  });
});
