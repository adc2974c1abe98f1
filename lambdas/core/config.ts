import { sendTimingProblems } from './sendTiming.js';

/**
 * Configuration (DESIGN §8), read and validated once at cold start into a typed object. A bad value
 * throws a ConfigError naming the variable; nothing starts half-configured.
 */

export type ConfigTarget = 'aws' | 'local';

export interface SmtpConfig {
  /** Absent locally means "use the local SMTP sink". */
  readonly host: string | undefined;
  readonly port: number | undefined;
  readonly user: string | undefined;
  readonly pass: string | undefined;
  readonly secure: boolean;
  readonly requireTls: boolean;
}

export interface Config {
  readonly target: ConfigTarget;
  readonly port: number;
  readonly apiKey: string | undefined;
  readonly smtp: SmtpConfig;
  readonly defaultFrom: string;
  /** Exact addresses or `*@domain` patterns; `*` alone allows every sender. */
  readonly allowedFrom: readonly string[];
  readonly messageIdDomain: string;
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
  readonly leaseSeconds: number;
  /** The sender function's timeout (lease > it > one whole attempt: core/sendTiming.ts). */
  readonly senderTimeoutSeconds: number;
  /** Connection, greeting and each SMTP command before the final dot. */
  readonly smtpTimeoutSeconds: number;
  /** At least this long is waited for the reply to the final dot. */
  readonly smtpReplyTimeoutSeconds: number;
  readonly directDelayMaxSeconds: number;
  readonly scheduleLeadSeconds: number;
  readonly sweepGraceSeconds: number;
  readonly dataDir: string | undefined;
  /** Messages per second per sender; undefined is unlimited. */
  readonly maxSendRate: number | undefined;
  readonly maxHorizonDays: number;
  readonly retentionDays: number;
}

/** Names of deployed resources, set by the CDK construct (or the local stack) on each function. */
export interface ResourceNames {
  readonly tableName: string;
  readonly sendQueueUrl: string | undefined;
  readonly sendQueueArn: string | undefined;
  /** The send queue's DLQ, where the sender moves copies of `dead` messages. */
  readonly sendDeadLetterQueueUrl: string | undefined;
  readonly scheduleGroup: string | undefined;
  readonly schedulerRoleArn: string | undefined;
  readonly scheduleDeadLetterArn: string | undefined;
  readonly relayFailureQueueUrl: string | undefined;
  readonly smtpSecretArn: string | undefined;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}

/**
 * Defaults of the sender's timing (DESIGN §5): a reply to the final dot is waited for two minutes at
 * least, so the function runs four and the lease lasts five.
 */
export const CONFIG_DEFAULTS = {
  leaseSeconds: 300,
  senderTimeoutSeconds: 240,
  smtpTimeoutSeconds: 20,
  smtpReplyTimeoutSeconds: 120,
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/** The target a function runs for: `local` when the local stack set POSTDATE_LOCAL=true, else `aws`. */
export function configTargetOf(env: Env): ConfigTarget {
  return env.POSTDATE_LOCAL === 'true' ? 'local' : 'aws';
}

export function loadConfig(env: Env, target: ConfigTarget): Config {
  const local = target === 'local';
  const smtpHost = optionalString(env, 'SMTP_HOST');
  const config: Config = {
    target,
    port: integer(env, 'POSTDATE_PORT', 3000, 1, 65535),
    apiKey: optionalString(env, 'POSTDATE_API_KEY'),
    smtp: {
      host: smtpHost,
      port: optionalInteger(env, 'SMTP_PORT', 1, 65535),
      user: optionalString(env, 'SMTP_USER'),
      pass: optionalString(env, 'SMTP_PASS'),
      secure: boolean(env, 'SMTP_SECURE', false),
      requireTls: boolean(env, 'SMTP_REQUIRE_TLS', !local),
    },
    defaultFrom: local
      ? (optionalString(env, 'POSTDATE_DEFAULT_FROM') ?? 'postdate@postdate.local')
      : requiredString(env, 'POSTDATE_DEFAULT_FROM'),
    allowedFrom: senderPatterns(
      local
        ? (optionalString(env, 'POSTDATE_ALLOWED_FROM') ?? '*')
        : requiredString(env, 'POSTDATE_ALLOWED_FROM'),
    ),
    messageIdDomain: domain(env, 'POSTDATE_MESSAGE_ID_DOMAIN', 'postdate.local'),
    maxAttempts: integer(env, 'POSTDATE_MAX_ATTEMPTS', 8, 1, 1000),
    retryBaseSeconds: integer(env, 'POSTDATE_RETRY_BASE_SECONDS', 30, 1, 43_200),
    retryCapSeconds: integer(env, 'POSTDATE_RETRY_CAP_SECONDS', 3600, 1, 43_200),
    leaseSeconds: integer(env, 'POSTDATE_LEASE_SECONDS', CONFIG_DEFAULTS.leaseSeconds, 1, 43_200),
    senderTimeoutSeconds: integer(
      env,
      'POSTDATE_SENDER_TIMEOUT_SECONDS',
      CONFIG_DEFAULTS.senderTimeoutSeconds,
      1,
      900,
    ),
    smtpTimeoutSeconds: integer(
      env,
      'POSTDATE_SMTP_TIMEOUT_SECONDS',
      CONFIG_DEFAULTS.smtpTimeoutSeconds,
      1,
      300,
    ),
    smtpReplyTimeoutSeconds: integer(
      env,
      'POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS',
      CONFIG_DEFAULTS.smtpReplyTimeoutSeconds,
      1,
      600,
    ),
    directDelayMaxSeconds: integer(env, 'POSTDATE_DIRECT_DELAY_MAX_SECONDS', 900, 0, 900),
    scheduleLeadSeconds: integer(env, 'POSTDATE_SCHEDULE_LEAD_SECONDS', 90, 0, 900),
    sweepGraceSeconds: integer(env, 'POSTDATE_SWEEP_GRACE_SECONDS', 300, 0, 86_400),
    dataDir: optionalString(env, 'POSTDATE_DATA_DIR'),
    maxSendRate: optionalPositiveNumber(env, 'POSTDATE_MAX_SEND_RATE'),
    maxHorizonDays: integer(env, 'POSTDATE_MAX_HORIZON_DAYS', 400, 1, 36_500),
    retentionDays: integer(env, 'POSTDATE_RETENTION_DAYS', 30, 1, 3650),
  };
  if (config.retryCapSeconds < config.retryBaseSeconds) {
    throw new ConfigError('POSTDATE_RETRY_CAP_SECONDS', 'must be at least POSTDATE_RETRY_BASE_SECONDS');
  }
  const [timingProblem] = sendTimingProblems(config);
  if (timingProblem !== undefined) {
    throw new ConfigError(
      config.leaseSeconds <= config.senderTimeoutSeconds
        ? 'POSTDATE_LEASE_SECONDS'
        : 'POSTDATE_SENDER_TIMEOUT_SECONDS',
      timingProblem,
    );
  }
  if (smtpHost === undefined && !local) throw new ConfigError('SMTP_HOST', 'is required in AWS');
  if ((config.smtp.user === undefined) !== (config.smtp.pass === undefined)) {
    throw new ConfigError(
      config.smtp.user === undefined ? 'SMTP_USER' : 'SMTP_PASS',
      'SMTP_USER and SMTP_PASS go together',
    );
  }
  return config;
}

/** Reads the resource names; `POSTDATE_TABLE_NAME` is required, the rest only by the functions that use them. */
export function loadResourceNames(env: Env): ResourceNames {
  return {
    tableName: requiredString(env, 'POSTDATE_TABLE_NAME'),
    sendQueueUrl: optionalString(env, 'POSTDATE_SEND_QUEUE_URL'),
    sendQueueArn: optionalString(env, 'POSTDATE_SEND_QUEUE_ARN'),
    sendDeadLetterQueueUrl: optionalString(env, 'POSTDATE_SEND_DLQ_URL'),
    scheduleGroup: optionalString(env, 'POSTDATE_SCHEDULE_GROUP'),
    schedulerRoleArn: optionalString(env, 'POSTDATE_SCHEDULER_ROLE_ARN'),
    scheduleDeadLetterArn: optionalString(env, 'POSTDATE_SCHEDULE_DLQ_ARN'),
    relayFailureQueueUrl: optionalString(env, 'POSTDATE_RELAY_FAILURE_QUEUE_URL'),
    smtpSecretArn: optionalString(env, 'POSTDATE_SMTP_SECRET_ARN'),
  };
}

/** Narrows an optional resource name to a string, or names the missing variable. */
export function requireResource<K extends keyof ResourceNames>(
  names: ResourceNames,
  key: K,
  variable: string,
): string {
  const value = names[key];
  if (typeof value !== 'string' || value === '')
    throw new ConfigError(variable, 'is required by this function');
  return value;
}

function optionalString(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function requiredString(env: Env, name: string): string {
  const value = optionalString(env, name);
  if (value === undefined) throw new ConfigError(name, 'is required');
  return value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  return optionalInteger(env, name, min, max) ?? fallback;
}

function optionalInteger(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = optionalString(env, name);
  if (raw === undefined) return undefined;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function optionalPositiveNumber(env: Env, name: string): number | undefined {
  const raw = optionalString(env, name);
  if (raw === undefined || raw === 'unlimited') return undefined;
  // Decimal notation only: Number() would also read "0x10" or "1e3".
  const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(value) || value <= 0)
    throw new ConfigError(name, `must be a positive number, got "${raw}"`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = optionalString(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function domain(env: Env, name: string, fallback: string): string {
  const value = optionalString(env, name) ?? fallback;
  const label = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
  if (!new RegExp(`^${label}(?:\\.${label})*$`).test(value)) {
    throw new ConfigError(name, `must be a domain name, got "${value}"`);
  }
  return value;
}

function senderPatterns(raw: string): string[] {
  const patterns = raw
    .split(',')
    .map((pattern) => pattern.trim().toLowerCase())
    .filter((pattern) => pattern !== '');
  for (const pattern of patterns) {
    if (pattern !== '*' && !/^(\*|[^\s@*]+)@[^\s@*]+$/.test(pattern)) {
      throw new ConfigError(
        'POSTDATE_ALLOWED_FROM',
        `"${pattern}" is neither an address, "*@domain" nor "*"`,
      );
    }
  }
  if (patterns.length === 0) throw new ConfigError('POSTDATE_ALLOWED_FROM', 'lists no sender');
  return patterns;
}
