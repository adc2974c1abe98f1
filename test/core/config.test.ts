import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  configTargetOf,
  loadConfig,
  loadResourceNames,
  requireResource,
} from '../../lambdas/core/config.js';

const awsMinimum = {
  POSTDATE_DEFAULT_FROM: 'ops@example.com',
  POSTDATE_ALLOWED_FROM: 'ops@example.com, *@mail.example.com',
  SMTP_HOST: 'smtp.example.com',
};

function failure(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration (DESIGN §8)', () => {
  describe('defaults', () => {
    it('runs locally with nothing set', () => {
      const config = loadConfig({}, 'local');
      expect(config).toEqual({
        target: 'local',
        port: 3000,
        apiKey: undefined,
        smtp: {
          host: undefined,
          port: undefined,
          user: undefined,
          pass: undefined,
          secure: false,
          requireTls: false,
        },
        defaultFrom: 'postdate@postdate.local',
        allowedFrom: ['*'],
        messageIdDomain: 'postdate.local',
        maxAttempts: 8,
        retryBaseSeconds: 30,
        retryCapSeconds: 3600,
        leaseSeconds: 300,
        senderMaxConcurrency: 5,
        senderTimeoutSeconds: 240,
        smtpTimeoutSeconds: 20,
        smtpReplyTimeoutSeconds: 120,
        smtpSessionMaxMessages: 100,
        smtpSessionMaxAgeSeconds: 120,
        directDelayMaxSeconds: 900,
        apiImmediateCopy: true,
        scheduleLeadSeconds: 90,
        sweepGraceSeconds: 300,
        dataDir: undefined,
        maxSendRate: undefined,
        relayProbeSeconds: 30,
        relaysJson: undefined,
        relays: [
          {
            name: 'default',
            host: undefined,
            port: undefined,
            user: undefined,
            pass: undefined,
            secure: false,
            requireTls: false,
            secretArn: undefined,
            maxSendRate: undefined,
          },
        ],
        maxHorizonDays: 400,
        retentionDays: 30,
        webhookRetryHours: 24,
        busEvents: 'all',
        groupHeadReplicas: 1,
        inlineAttachmentMaxKb: 3072,
        maxMessageMb: 40,
        webhookAllowPrivateUrls: true,
      });
    });
    it('insists on TLS in AWS by default', () => {
      const config = loadConfig(awsMinimum, 'aws');
      expect(config.smtp.requireTls).toBe(true);
      expect(config.allowedFrom).toEqual(['ops@example.com', '*@mail.example.com']);
    });
  });

  describe('values', () => {
    it('reads every variable, trimming blanks and treating empty as unset', () => {
      const config = loadConfig(
        {
          POSTDATE_PORT: ' 8080 ',
          POSTDATE_API_KEY: 'k',
          SMTP_HOST: 'relay',
          SMTP_PORT: '587',
          SMTP_USER: 'u',
          SMTP_PASS: 'p',
          SMTP_SECURE: 'TRUE',
          SMTP_REQUIRE_TLS: '0',
          POSTDATE_DEFAULT_FROM: 'a@b.c',
          POSTDATE_ALLOWED_FROM: 'A@B.C',
          POSTDATE_MESSAGE_ID_DOMAIN: 'mail.example.com',
          POSTDATE_MAX_ATTEMPTS: '3',
          POSTDATE_RETRY_BASE_SECONDS: '1',
          POSTDATE_RETRY_CAP_SECONDS: '2',
          POSTDATE_LEASE_SECONDS: '40',
          POSTDATE_SENDER_TIMEOUT_SECONDS: '33',
          POSTDATE_SMTP_TIMEOUT_SECONDS: '1',
          POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS: '2',
          POSTDATE_DIRECT_DELAY_MAX_SECONDS: '0',
          POSTDATE_SCHEDULE_LEAD_SECONDS: '1',
          POSTDATE_SWEEP_GRACE_SECONDS: '0',
          POSTDATE_DATA_DIR: '/tmp/pd',
          POSTDATE_MAX_SEND_RATE: '2.5',
          POSTDATE_MAX_HORIZON_DAYS: '1',
          POSTDATE_RETENTION_DAYS: '7',
          POSTDATE_UNRELATED: '',
        },
        'local',
      );
      expect(config).toMatchObject({
        port: 8080,
        apiKey: 'k',
        smtp: { host: 'relay', port: 587, user: 'u', pass: 'p', secure: true, requireTls: false },
        defaultFrom: 'a@b.c',
        allowedFrom: ['a@b.c'],
        messageIdDomain: 'mail.example.com',
        maxAttempts: 3,
        retryBaseSeconds: 1,
        retryCapSeconds: 2,
        leaseSeconds: 40,
        senderTimeoutSeconds: 33,
        smtpTimeoutSeconds: 1,
        smtpReplyTimeoutSeconds: 2,
        directDelayMaxSeconds: 0,
        scheduleLeadSeconds: 1,
        sweepGraceSeconds: 0,
        dataDir: '/tmp/pd',
        maxSendRate: 2.5,
        maxHorizonDays: 1,
        retentionDays: 7,
      });
      expect(loadConfig({ POSTDATE_PORT: '', POSTDATE_MAX_SEND_RATE: 'unlimited' }, 'local')).toMatchObject({
        port: 3000,
        maxSendRate: undefined,
      });
      // 0 picks a free port, as for every other port of the local stack (docs/local-stack.md).
      expect(loadConfig({ POSTDATE_PORT: '0' }, 'local').port).toBe(0);
    });
  });

  describe('every bad value stops the start and names its variable', () => {
    const cases: [string, string, RegExp][] = [
      ['POSTDATE_PORT', '65536', /between 0 and 65535/],
      ['POSTDATE_PORT', 'http', /whole number/],
      ['SMTP_PORT', '70000', /between 1 and 65535/],
      ['SMTP_SECURE', 'yes', /true or false/],
      ['SMTP_REQUIRE_TLS', 'maybe', /true or false/],
      ['POSTDATE_MESSAGE_ID_DOMAIN', 'bad domain', /domain name/],
      ['POSTDATE_MESSAGE_ID_DOMAIN', '.example.com', /domain name/],
      ['POSTDATE_ALLOWED_FROM', 'not-an-address', /neither an address/],
      ['POSTDATE_ALLOWED_FROM', ' , ', /lists no sender/],
      ['POSTDATE_MAX_ATTEMPTS', '0', /between 1 and 1000/],
      ['POSTDATE_MAX_ATTEMPTS', '2.5', /whole number/],
      // 999 retries of up to 3600 s: SQS deletes the copy (4 days' retention) before its last attempt.
      [
        'POSTDATE_MAX_ATTEMPTS',
        '1000',
        /with POSTDATE_RETRY_BASE_SECONDS 30 .* longer than the send queue retention \(4 days/,
      ],
      ['POSTDATE_RETRY_BASE_SECONDS', '-1', /between 1 and 43200/],
      ['POSTDATE_RETRY_CAP_SECONDS', '43201', /between 1 and 43200/],
      ['POSTDATE_LEASE_SECONDS', 'ten', /whole number/],
      ['POSTDATE_LEASE_SECONDS', '240', /the lease \(240 s\) must exceed the sender timeout \(240 s\)/],
      ['POSTDATE_SENDER_TIMEOUT_SECONDS', '901', /between 1 and 900/],
      ['POSTDATE_SENDER_TIMEOUT_SECONDS', '188', /must exceed one whole attempt: .* = 188 s/],
      ['POSTDATE_SMTP_TIMEOUT_SECONDS', '0', /between 1 and 300/],
      ['POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS', '601', /between 1 and 600/],
      ['POSTDATE_DIRECT_DELAY_MAX_SECONDS', '901', /between 0 and 900/],
      ['POSTDATE_SCHEDULE_LEAD_SECONDS', '901', /between 0 and 900/],
      ['POSTDATE_SWEEP_GRACE_SECONDS', '86401', /between 0 and 86400/],
      ['POSTDATE_MAX_SEND_RATE', '0', /positive number/],
      ['POSTDATE_MAX_SEND_RATE', 'fast', /positive number/],
      ['POSTDATE_MAX_HORIZON_DAYS', '0', /between 1 and 36500/],
      ['POSTDATE_RETENTION_DAYS', '3651', /between 1 and 3650/],
      // DESIGN §8 and §3: the default `from` is one address, and one the stack may send from.
      ['POSTDATE_DEFAULT_FROM', 'ops', /must be an address/],
      ['POSTDATE_DEFAULT_FROM', 'Ops, Team <ops@example.com>', /must be an address .*display name/],
      [
        'POSTDATE_DEFAULT_FROM',
        'ops@elsewhere.org',
        /"ops@elsewhere.org" is not matched by POSTDATE_ALLOWED_FROM/,
      ],
      ['SMTP_HOST', 'smtp example.com', /must be a host name or an IP address/],
    ];
    it.each(cases)('%s=%s', (variable, value, message) => {
      const error = failure(() => loadConfig({ ...awsMinimum, [variable]: value }, 'aws'));
      expect(error.variable).toBe(variable);
      expect(error.name).toBe('ConfigError');
      expect(error.message.startsWith(`${variable}: `)).toBe(true);
      expect(error.message).toMatch(message);
    });
    it('refuses a retry cap below the retry base', () => {
      const error = failure(() =>
        loadConfig({ POSTDATE_RETRY_BASE_SECONDS: '60', POSTDATE_RETRY_CAP_SECONDS: '30' }, 'local'),
      );
      expect(error.message).toBe('POSTDATE_RETRY_CAP_SECONDS: must be at least POSTDATE_RETRY_BASE_SECONDS');
    });
  });

  describe('in AWS', () => {
    it.each(['POSTDATE_DEFAULT_FROM', 'POSTDATE_ALLOWED_FROM', 'SMTP_HOST'])('requires %s', (variable) => {
      const env: Record<string, string> = { ...awsMinimum };
      delete env[variable];
      expect(failure(() => loadConfig(env, 'aws')).variable).toBe(variable);
      expect(failure(() => loadConfig({ ...awsMinimum, [variable]: '   ' }, 'aws')).variable).toBe(variable);
    });
    it('needs nothing of these locally', () => {
      expect(() => loadConfig({}, 'local')).not.toThrow();
    });
  });

  describe('resource names', () => {
    it('requires the table name and reads the rest when present', () => {
      expect(failure(() => loadResourceNames({})).variable).toBe('POSTDATE_TABLE_NAME');
      const names = loadResourceNames({
        POSTDATE_TABLE_NAME: 'outbox',
        POSTDATE_SEND_QUEUE_URL: 'http://q',
        POSTDATE_SEND_QUEUE_ARN: 'arn:q',
        POSTDATE_SEND_DLQ_URL: 'http://dlq',
        POSTDATE_SCHEDULE_GROUP: 'g',
        POSTDATE_SCHEDULER_ROLE_ARN: 'arn:r',
        POSTDATE_SCHEDULE_DLQ_ARN: 'arn:d',
        POSTDATE_RELAY_FAILURE_QUEUE_URL: 'http://f',
        POSTDATE_SMTP_SECRET_ARN: 'arn:s',
      });
      expect(names).toEqual({
        tableName: 'outbox',
        sendQueueUrl: 'http://q',
        sendQueueArn: 'arn:q',
        sendDeadLetterQueueUrl: 'http://dlq',
        scheduleGroup: 'g',
        schedulerRoleArn: 'arn:r',
        scheduleDeadLetterArn: 'arn:d',
        relayFailureQueueUrl: 'http://f',
        smtpSecretArn: 'arn:s',
      });
    });
    it('names the variable a function needs but did not get', () => {
      const names = loadResourceNames({ POSTDATE_TABLE_NAME: 'outbox', POSTDATE_SEND_QUEUE_URL: 'http://q' });
      expect(requireResource(names, 'sendQueueUrl', 'POSTDATE_SEND_QUEUE_URL')).toBe('http://q');
      const error = failure(() => requireResource(names, 'scheduleGroup', 'POSTDATE_SCHEDULE_GROUP'));
      expect(error.message).toBe('POSTDATE_SCHEDULE_GROUP: is required by this function');
    });
  });
});

describe('configuration target', () => {
  it('is local only when POSTDATE_LOCAL is exactly "true"', () => {
    expect(configTargetOf({ POSTDATE_LOCAL: 'true' })).toBe('local');
    expect(configTargetOf({})).toBe('aws');
    expect(configTargetOf({ POSTDATE_LOCAL: '1' })).toBe('aws');
    expect(configTargetOf({ POSTDATE_LOCAL: 'false' })).toBe('aws');
  });
});

describe('configuration consistency (lead additions)', () => {
  it('names SMTP_PASS when SMTP_USER comes alone, and SMTP_USER when the password does', () => {
    expect(() => loadConfig({ SMTP_USER: 'u' }, 'local')).toThrow(/^SMTP_PASS: /);
    expect(() => loadConfig({ SMTP_PASS: 'p' }, 'local')).toThrow(/^SMTP_USER: /);
  });

  it('reads the send rate in decimal notation only', () => {
    expect(() => loadConfig({ POSTDATE_MAX_SEND_RATE: '0x10' }, 'local')).toThrow(
      /^POSTDATE_MAX_SEND_RATE: /,
    );
    expect(loadConfig({ POSTDATE_MAX_SEND_RATE: '12.5' }, 'local').maxSendRate).toBe(12.5);
  });

  it('refuses a message-id domain with empty or dash-edged labels', () => {
    for (const bad of ['a..b', '-a.example', 'a-.example']) {
      expect(() => loadConfig({ POSTDATE_MESSAGE_ID_DOMAIN: bad }, 'local')).toThrow(
        /^POSTDATE_MESSAGE_ID_DOMAIN: /,
      );
    }
  });
});
