import { isAllowedSender, isDomainName, isHostName, parseAddress } from './addresses.js';
import { retryOutlivesSendQueue } from './backoff.js';
import { type BusEvents, readBusEvents } from './busEvents.js';
import {
  CONFIG_SETTINGS,
  LOCAL_TARGET_VARIABLE,
  REQUIRED,
  RESOURCE_SETTINGS,
  type ResourceName,
  type SettingName,
  type SettingSpec,
  type SettingValue,
  type SettingValues,
} from './configSpec.js';
import { PostdateError } from './postdateError.js';
import { DEFAULT_RELAY, parseRelays, RELAYS_VARIABLE, type RelayConfig, RelayListError } from './relays.js';
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
  /** POSTDATE_RELAYS as set (undefined: unset); `relays` is what it says. */
  readonly relaysJson: string | undefined;
  /**
   * The relays in order (DESIGN §15, core/relays.ts): POSTDATE_RELAYS, or the one relay `smtp`
   * describes, named `default`. Never empty.
   */
  readonly relays: readonly RelayConfig[];
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
  /** Messages one pooled SMTP session carries before QUIT. */
  readonly smtpSessionMaxMessages: number;
  /** Seconds a pooled SMTP session is reused after it opened. */
  readonly smtpSessionMaxAgeSeconds: number;
  readonly directDelayMaxSeconds: number;
  /** POSTDATE_API_IMMEDIATE_COPY: the api's own copy of an immediate message (api/routes/enqueue.ts). */
  readonly apiImmediateCopy: boolean;
  readonly scheduleLeadSeconds: number;
  readonly sweepGraceSeconds: number;
  readonly dataDir: string | undefined;
  /** The relay's rate for the whole fleet, in recipients per second; undefined is unlimited. */
  readonly maxSendRate: number | undefined;
  /** How many senders run at once; each takes this share of `maxSendRate`. */
  readonly senderMaxConcurrency: number;
  /** POSTDATE_RELAY_PROBE_SECONDS: the circuit breaker's probe interval (core/relayBreaker.ts). */
  readonly relayProbeSeconds: number;
  readonly maxHorizonDays: number;
  readonly retentionDays: number;
  /** A webhook delivery retries this long, then is `failed`. */
  readonly webhookRetryHours: number;
  /** POSTDATE_BUS_EVENTS: the event types put on the bus (core/busEvents.ts). */
  readonly busEvents: BusEvents;
  /** POSTDATE_GROUP_HEAD_REPLICAS: the items of a group's head (store/groupHead.ts). */
  readonly groupHeadReplicas: number;
  /** POSTDATE_INLINE_ATTACHMENT_MAX_KB: inline attachments of one message, decoded, in all (DESIGN §13). */
  readonly inlineAttachmentMaxKb: number;
  /** POSTDATE_MAX_MESSAGE_MB: the whole MIME message, attachments as base64 included. */
  readonly maxMessageMb: number;
  /** Local stack: webhooks may use `http` and loopback or private addresses. */
  readonly webhookAllowPrivateUrls: boolean;
}

/** Names of deployed resources, set by the CDK construct (or the local stack) on each function. */
export interface ResourceNames extends Readonly<Record<ResourceName, string | undefined>> {
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
  readonly webhookQueueUrl: string | undefined;
  readonly eventBusName: string | undefined;
  /** The attachments' bucket (the api and the sender). */
  readonly attachmentBucket: string | undefined;
  /** Local: the S3 emulator's endpoint. */
  readonly attachmentEndpoint: string | undefined;
}

export class ConfigError extends PostdateError {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    /** What is wrong, without the variable's name (the construct names its prop instead). */
    readonly reason: string,
  ) {
    super(`${variable}: ${reason}`, { class: 'config' });
  }
}

/**
 * Defaults of the sender's timing (DESIGN §5): a reply to the final dot is waited for two minutes at
 * least, so the function runs four and the lease lasts five. Rows of core/configSpec.ts.
 */
export const CONFIG_DEFAULTS = {
  leaseSeconds: CONFIG_SETTINGS.leaseSeconds.aws,
  senderTimeoutSeconds: CONFIG_SETTINGS.senderTimeoutSeconds.aws,
  smtpTimeoutSeconds: CONFIG_SETTINGS.smtpTimeoutSeconds.aws,
  smtpReplyTimeoutSeconds: CONFIG_SETTINGS.smtpReplyTimeoutSeconds.aws,
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/** The target a function runs for: `local` when the local stack set POSTDATE_LOCAL=true, else `aws`. */
export function configTargetOf(env: Env): ConfigTarget {
  return env[LOCAL_TARGET_VARIABLE] === 'true' ? 'local' : 'aws';
}

export function loadConfig(env: Env, target: ConfigTarget): Config {
  const { smtpHost, smtpPort, smtpUser, smtpPass, smtpSecure, smtpRequireTls, ...rest } = loadSettings(
    env,
    target,
  );
  const smtp: SmtpConfig = {
    host: smtpHost,
    port: smtpPort,
    user: smtpUser,
    pass: smtpPass,
    secure: smtpSecure,
    requireTls: smtpRequireTls,
  };
  const config: Config = {
    target,
    smtp,
    relays: relaysOf(rest.relaysJson, smtp, rest.maxSendRate),
    ...rest,
  };
  const variable = (name: SettingName) => CONFIG_SETTINGS[name].variable;
  if (config.retryCapSeconds < config.retryBaseSeconds) {
    throw new ConfigError(variable('retryCapSeconds'), `must be at least ${variable('retryBaseSeconds')}`);
  }
  const outlives = retryOutlivesSendQueue(config);
  if (outlives !== undefined) {
    throw new ConfigError(
      variable('maxAttempts'),
      `with ${variable('retryBaseSeconds')} ${config.retryBaseSeconds} and ${variable('retryCapSeconds')} ${config.retryCapSeconds}, ${config.maxAttempts} attempts can keep a copy retrying ${outlives.retryingSeconds} s, longer than the send queue retention (${outlives.retentionSeconds / 86_400} days = ${outlives.retentionSeconds} s): SQS would delete it before its last attempt`,
    );
  }
  const [timingProblem] = sendTimingProblems(config);
  if (timingProblem !== undefined) {
    throw new ConfigError(
      variable(config.leaseSeconds <= config.senderTimeoutSeconds ? 'leaseSeconds' : 'senderTimeoutSeconds'),
      timingProblem,
    );
  }
  // DESIGN §3: the default `from` is sent like a request's, so one that is set must be a sender the
  // stack allows (the local default with a narrowed list only makes a request without `from` a 400).
  const defaultSender = parseAddress(config.defaultFrom);
  if (
    optionalString(env, variable('defaultFrom')) !== undefined &&
    defaultSender.ok &&
    !isAllowedSender(defaultSender.value.address, config.allowedFrom)
  ) {
    throw new ConfigError(
      variable('defaultFrom'),
      `"${defaultSender.value.address}" is not matched by ${variable('allowedFrom')} (${config.allowedFrom.join(', ')})`,
    );
  }
  if ((config.smtp.user === undefined) !== (config.smtp.pass === undefined)) {
    throw new ConfigError(
      variable(config.smtp.user === undefined ? 'smtpUser' : 'smtpPass'),
      `${variable('smtpUser')} and ${variable('smtpPass')} go together`,
    );
  }
  return config;
}

/** POSTDATE_RELAYS read (core/relays.ts), or the one relay `SMTP_*` describes. */
function relaysOf(
  text: string | undefined,
  smtp: SmtpConfig,
  maxSendRate: number | undefined,
): readonly RelayConfig[] {
  if (text === undefined) return [{ name: DEFAULT_RELAY, ...smtp, secretArn: undefined, maxSendRate }];
  return relayList(text);
}

/** POSTDATE_RELAYS parsed, or a ConfigError naming it with the entry and field at fault. */
function relayList(text: string): readonly RelayConfig[] {
  try {
    return parseRelays(text);
  } catch (error) {
    if (error instanceof RelayListError) throw new ConfigError(RELAYS_VARIABLE, error.message);
    throw error;
  }
}

/** The flat settings of a Config (the inverse of {@link loadConfig}'s nesting). */
export function settingValuesOf(config: Config): SettingValues {
  const { target: _target, smtp, relays: _relays, ...rest } = config;
  return {
    ...rest,
    smtpHost: smtp.host,
    smtpPort: smtp.port,
    smtpUser: smtp.user,
    smtpPass: smtp.pass,
    smtpSecure: smtp.secure,
    smtpRequireTls: smtp.requireTls,
  };
}

/**
 * Reads every row of core/configSpec.ts for the target: a blank variable is unset, an unset one takes
 * the target's default, and one required in AWS stops an AWS start. Cross-setting rules are
 * {@link loadConfig}'s.
 */
export function loadSettings(env: Env, target: ConfigTarget): SettingValues {
  const values: Partial<Record<SettingName, SettingValue | undefined>> = {};
  for (const name of Object.keys(CONFIG_SETTINGS) as SettingName[]) {
    const spec: SettingSpec = CONFIG_SETTINGS[name];
    const raw = optionalString(env, spec.variable);
    const fallback = target === 'local' ? spec.local : spec.aws;
    if (raw !== undefined) values[name] = parseSetting(spec, raw);
    else if (fallback === REQUIRED) throw new ConfigError(spec.variable, 'is required in AWS');
    else values[name] = fallback;
  }
  // Each row was read by the parser of its kind, so each value has its row's type.
  return values as SettingValues;
}

/** Reads the resource names; `POSTDATE_TABLE_NAME` is required, the rest only by the functions that use them. */
export function loadResourceNames(env: Env): ResourceNames {
  const tableName = requiredString(env, RESOURCE_SETTINGS.tableName.variable);
  const names = Object.fromEntries(
    (Object.keys(RESOURCE_SETTINGS) as ResourceName[]).map((name) => [
      name,
      optionalString(env, RESOURCE_SETTINGS[name].variable),
    ]),
  ) as Record<ResourceName, string | undefined>;
  return { ...names, tableName };
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

/**
 * What is wrong with `raw` as the value of a setting, by its row's kind, or undefined: the rule the
 * functions start with, for the construct to check its props by (lib/postdateProps.ts).
 */
export function settingProblem(name: SettingName, raw: string): string | undefined {
  try {
    parseSetting(CONFIG_SETTINGS[name], raw);
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error.reason;
    throw error;
  }
}

/** A set variable read by its row's kind; the only place a raw value becomes a setting. */
function parseSetting(spec: SettingSpec, raw: string): SettingValue | undefined {
  const name = spec.variable;
  const kind = spec.kind;
  switch (kind.type) {
    case 'integer': {
      if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
      const value = Number(raw);
      if (value < kind.min || value > kind.max)
        throw new ConfigError(name, `must be between ${kind.min} and ${kind.max}, got ${value}`);
      return value;
    }
    case 'rate': {
      if (raw === 'unlimited') return undefined;
      // Decimal notation only: Number() would also read "0x10" or "1e3".
      const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isFinite(value) || value <= 0)
        throw new ConfigError(name, `must be a positive number, got "${raw}"`);
      return value;
    }
    case 'boolean': {
      const lower = raw.toLowerCase();
      if (lower === 'true' || lower === '1') return true;
      if (lower === 'false' || lower === '0') return false;
      throw new ConfigError(name, `must be true or false, got "${lower}"`);
    }
    case 'domain':
      if (!isDomainName(raw)) throw new ConfigError(name, `must be a domain name, got "${raw}"`);
      return raw;
    case 'host':
      if (!isHostName(raw)) throw new ConfigError(name, `must be a host name or an IP address, got "${raw}"`);
      return raw;
    case 'address': {
      const parsed = parseAddress(raw);
      if (!parsed.ok) {
        throw new ConfigError(
          name,
          `must be an address such as "ops@example.com" or "Ops <ops@example.com>", got "${raw}": it ${parsed.reason}`,
        );
      }
      return raw;
    }
    case 'senders':
      return senderPatterns(name, raw);
    case 'relays':
      relayList(raw);
      return raw;
    case 'busEvents': {
      const read = readBusEvents(raw);
      if (!read.ok) throw new ConfigError(name, read.problem);
      return read.busEvents;
    }
    case 'text':
      return raw;
  }
}

function senderPatterns(name: string, raw: string): string[] {
  const patterns = raw
    .split(',')
    .map((pattern) => pattern.trim().toLowerCase())
    .filter((pattern) => pattern !== '');
  for (const pattern of patterns) {
    if (pattern !== '*' && !/^(\*|[^\s@*<>]+)@[^\s@*<>]+$/.test(pattern)) {
      throw new ConfigError(name, `"${pattern}" is neither an address, "*@domain" nor "*"`);
    }
  }
  if (patterns.length === 0) throw new ConfigError(name, 'lists no sender');
  return patterns;
}
