import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lambdas/core/config.js';
import { DEFAULT_RELAY } from '../../lambdas/core/relays.js';

const primary = { name: 'primary', host: '127.0.0.1', port: 2525, secure: false, require_tls: false };
const backup = {
  name: 'backup',
  host: 'smtp.backup.example',
  port: 465,
  secure: true,
  require_tls: true,
  user: 'u',
  pass: 'p',
  max_send_rate: 5,
};

function failure(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, 'local');
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the relays (DESIGN §15)', () => {
  it('takes a relay by an IP address, IPv6 included, as SMTP_HOST and as a relay host, and refuses a host with a space', () => {
    const smtp = loadConfig({ SMTP_HOST: '::1', SMTP_PORT: '2525' }, 'local');
    expect(smtp.relays.map((relay) => relay.host)).toEqual(['::1']);
    const listed = loadConfig(
      {
        POSTDATE_RELAYS: JSON.stringify([
          { ...primary, host: '2001:db8::25' },
          { ...backup, host: '192.0.2.25' },
        ]),
      },
      'local',
    );
    expect(listed.relays.map((relay) => relay.host)).toEqual(['2001:db8::25', '192.0.2.25']);
    expect(failure({ SMTP_HOST: 'smtp example.com' }).variable).toBe('SMTP_HOST');
    expect(
      failure({ POSTDATE_RELAYS: JSON.stringify([{ ...primary, host: 'smtp example.com' }]) }).variable,
    ).toBe('POSTDATE_RELAYS');
  });
  it('without POSTDATE_RELAYS, SMTP_* is the one relay, named default', () => {
    const config = loadConfig(
      {
        SMTP_HOST: 'relay.example',
        SMTP_PORT: '2587',
        SMTP_USER: 'a',
        SMTP_PASS: 'b',
        POSTDATE_MAX_SEND_RATE: '7',
      },
      'local',
    );
    expect(config.relays).toEqual([
      {
        name: DEFAULT_RELAY,
        host: 'relay.example',
        port: 2587,
        user: 'a',
        pass: 'b',
        secure: false,
        requireTls: false,
        secretArn: undefined,
        maxSendRate: 7,
      },
    ]);
  });

  it('reads POSTDATE_RELAYS in order', () => {
    const config = loadConfig({ POSTDATE_RELAYS: JSON.stringify([primary, backup]) }, 'local');
    expect(config.relays).toEqual([
      {
        name: 'primary',
        host: '127.0.0.1',
        port: 2525,
        secure: false,
        requireTls: false,
        user: undefined,
        pass: undefined,
        secretArn: undefined,
        maxSendRate: undefined,
      },
      {
        name: 'backup',
        host: 'smtp.backup.example',
        port: 465,
        secure: true,
        requireTls: true,
        user: 'u',
        pass: 'p',
        secretArn: undefined,
        maxSendRate: 5,
      },
    ]);
  });

  it.each([
    ['not json', '[', 'POSTDATE_RELAYS: must be a JSON array of relays'],
    ['empty', '[]', 'POSTDATE_RELAYS: must be a non-empty JSON array of relays'],
    ['not an object', '[1]', 'POSTDATE_RELAYS: relay 1: must be an object'],
    [
      'a port out of range',
      JSON.stringify([primary, { ...backup, port: 70000 }]),
      'POSTDATE_RELAYS: relay "backup": port must be a whole number between 1 and 65535',
    ],
    [
      'no port',
      JSON.stringify([{ ...primary, port: undefined }]),
      'POSTDATE_RELAYS: relay "primary": port is required: a whole number between 1 and 65535',
    ],
    [
      'no require_tls',
      JSON.stringify([{ ...primary, require_tls: undefined }]),
      'POSTDATE_RELAYS: relay "primary": require_tls is required: true or false',
    ],
    [
      'no name',
      JSON.stringify([{ ...primary, name: undefined }]),
      'POSTDATE_RELAYS: relay 1: name must be a non-empty string',
    ],
    [
      'a bad name',
      JSON.stringify([{ ...primary, name: 'a b' }]),
      'POSTDATE_RELAYS: relay "a b": name must be 1 to 32 letters, digits, "-" or "_"',
    ],
    [
      'a name used twice',
      JSON.stringify([primary, primary]),
      'POSTDATE_RELAYS: relay "primary": name is used twice',
    ],
    [
      'a user without a pass',
      JSON.stringify([{ ...primary, user: 'u' }]),
      'POSTDATE_RELAYS: relay "primary": pass must be set with the other: user and pass go together',
    ],
    [
      'secure not a boolean',
      JSON.stringify([{ ...primary, secure: 'yes' }]),
      'POSTDATE_RELAYS: relay "primary": secure must be true or false',
    ],
    [
      'a bad rate',
      JSON.stringify([{ ...primary, max_send_rate: 0 }]),
      'POSTDATE_RELAYS: relay "primary": max_send_rate must be a positive number',
    ],
    [
      'an unknown field',
      JSON.stringify([{ ...primary, hostname: 'x' }]),
      'POSTDATE_RELAYS: relay "primary": hostname is not a relay field',
    ],
  ])('refuses %s, naming the entry and the field', (_case, value, message) => {
    const error = failure({ POSTDATE_RELAYS: value });
    expect(error.variable).toBe('POSTDATE_RELAYS');
    expect(error.message).toBe(message);
  });
});
