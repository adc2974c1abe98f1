/**
 * Every setting of Postdate (DESIGN §8) in one table. The loader (core/config.ts), the CDK props'
 * defaults and range checks (lib/postdateProps.ts), the functions' environment (lib/functionEnvironment.ts),
 * the local stack's environment (local/localEnv.ts), the CDK context keys (lib/contextProps.ts) and
 * docs/configuration.md (`npm run docs:config`) are derived from it; test/core/configSpec.test.ts
 * fails when one of them drifts. To add a setting: add its row here, its field to `Config`, and (when
 * the construct sets it) its prop, with TSDoc, to `PostdateProps`.
 */

import { BUS_EVENTS_DEFAULT, type BusEvents } from './busEvents.js';
import { SQS_MAX_VISIBILITY_SECONDS } from './queueLimits.js';

/** What a setting holds, and which values it takes. */
export type SettingKind =
  | {
      /** A whole number in `[min, max]`. */
      readonly type: 'integer';
      readonly min: number;
      readonly max: number;
      readonly unit: 'seconds' | 'hours' | 'days' | 'count' | 'port' | 'KiB' | 'MB';
    }
  /** Messages per second: a positive decimal, or `unlimited`. */
  | { readonly type: 'rate' }
  /** `true`/`1` or `false`/`0`, any case. */
  | { readonly type: 'boolean' }
  /** A DNS name of letters, digits and inner dashes. */
  | { readonly type: 'domain' }
  /** A relay's host: a DNS name, or an IPv4 or IPv6 address. */
  | { readonly type: 'host' }
  /** One mailbox, `a@b.c` or `Name <a@b.c>`, as the API reads a request's `from` (core/addresses.ts). */
  | { readonly type: 'address' }
  /** Comma-separated addresses, `*@domain` patterns, or `*` alone. */
  | { readonly type: 'senders' }
  /** A JSON array of relays (core/relays.ts `parseRelays`), kept as the text that was set. */
  | { readonly type: 'relays' }
  /** `all`, `none` or comma-separated message event types (core/busEvents.ts `readBusEvents`). */
  | { readonly type: 'busEvents' }
  | { readonly type: 'text' };

/** A setting's value as the loader returns it. */
export type SettingValue = number | boolean | string | readonly string[];

/** The `aws` default of a setting the functions cannot start without in AWS. */
export const REQUIRED = 'required';

export interface SettingSpec {
  /** The environment variable the functions (or the local stack) read. */
  readonly variable: string;
  /** The Postdate construct sets it on every function from the prop of the same name as the row. */
  readonly prop: boolean;
  readonly kind: SettingKind;
  /** The value when the variable is unset, per target; `undefined` means none. */
  readonly local: SettingValue | undefined;
  readonly aws: SettingValue | undefined | typeof REQUIRED;
  /** How the default reads in the docs when the construct's prop default differs or is derived. */
  readonly propDefault?: string;
  readonly description: string;
}

const seconds = (min: number, max: number) => ({ type: 'integer', min, max, unit: 'seconds' }) as const;
const days = (min: number, max: number) => ({ type: 'integer', min, max, unit: 'days' }) as const;

/**
 * The settings `loadConfig` reads, in DESIGN §8's order. The row's name is the field of the flat
 * settings (and the construct's prop when `prop` is true).
 */
export const CONFIG_SETTINGS = {
  port: {
    variable: 'POSTDATE_PORT',
    prop: false,
    kind: { type: 'integer', min: 0, max: 65_535, unit: 'port' },
    local: 3000,
    aws: 3000,
    description: 'local API port (0 picks a free one)',
  },
  apiKey: {
    variable: 'POSTDATE_API_KEY',
    prop: false,
    kind: { type: 'text' },
    local: undefined,
    aws: undefined,
    description: 'local: the key seeded for tenant `local` (generated when unset)',
  },
  smtpHost: {
    variable: 'SMTP_HOST',
    prop: true,
    kind: { type: 'host' },
    local: undefined,
    aws: REQUIRED,
    propDefault: '`email-smtp.{region}.amazonaws.com`',
    description: 'the relay; unset locally (without POSTDATE_RELAYS) means the local SMTP sink',
  },
  smtpPort: {
    variable: 'SMTP_PORT',
    prop: true,
    kind: { type: 'integer', min: 1, max: 65_535, unit: 'port' },
    local: undefined,
    aws: undefined,
    propDefault: '587, or 465 when `smtpSecure`',
    description: "the relay's port (unset: 587, or 465 when `SMTP_SECURE`)",
  },
  smtpUser: {
    variable: 'SMTP_USER',
    prop: false,
    kind: { type: 'text' },
    local: undefined,
    aws: undefined,
    description: 'relay login, with `SMTP_PASS` (in AWS the sender reads both from the SMTP secret)',
  },
  smtpPass: {
    variable: 'SMTP_PASS',
    prop: false,
    kind: { type: 'text' },
    local: undefined,
    aws: undefined,
    description: 'relay password, with `SMTP_USER`',
  },
  smtpSecure: {
    variable: 'SMTP_SECURE',
    prop: true,
    kind: { type: 'boolean' },
    local: false,
    aws: false,
    description: 'implicit TLS from the first byte (usually port 465)',
  },
  smtpRequireTls: {
    variable: 'SMTP_REQUIRE_TLS',
    prop: true,
    kind: { type: 'boolean' },
    local: false,
    aws: true,
    description: 'insist on STARTTLS when not `SMTP_SECURE`',
  },
  relaysJson: {
    variable: 'POSTDATE_RELAYS',
    prop: false,
    kind: { type: 'relays' },
    local: undefined,
    aws: undefined,
    description:
      'failover across relays (DESIGN §15): a JSON array `[{name, host, port, secure, require_tls, user?, pass?, secret_arn?, max_send_rate?}]`, tried in order (unset: `SMTP_*` is the one relay, named `default`)',
  },
  defaultFrom: {
    variable: 'POSTDATE_DEFAULT_FROM',
    prop: true,
    kind: { type: 'address' },
    local: 'postdate@postdate.local',
    aws: REQUIRED,
    description: '`from` when the request has none; one of `POSTDATE_ALLOWED_FROM`',
  },
  allowedFrom: {
    variable: 'POSTDATE_ALLOWED_FROM',
    prop: true,
    kind: { type: 'senders' },
    local: ['*'],
    aws: REQUIRED,
    description: "comma-separated addresses or `*@domain` patterns a request's `from` must match",
  },
  messageIdDomain: {
    variable: 'POSTDATE_MESSAGE_ID_DOMAIN',
    prop: true,
    kind: { type: 'domain' },
    local: 'postdate.local',
    aws: 'postdate.local',
    propDefault: 'the domain of `defaultFrom`',
    description: 'right side of Message-ID',
  },
  maxAttempts: {
    variable: 'POSTDATE_MAX_ATTEMPTS',
    prop: true,
    kind: { type: 'integer', min: 1, max: 1000, unit: 'count' },
    local: 8,
    aws: 8,
    description: "SMTP attempts before `dead` (the send queue's `maxReceiveCount` is a backstop above it)",
  },
  retryBaseSeconds: {
    variable: 'POSTDATE_RETRY_BASE_SECONDS',
    prop: true,
    kind: seconds(1, SQS_MAX_VISIBILITY_SECONDS),
    local: 30,
    aws: 30,
    description: 'backoff base',
  },
  retryCapSeconds: {
    variable: 'POSTDATE_RETRY_CAP_SECONDS',
    prop: true,
    kind: seconds(1, SQS_MAX_VISIBILITY_SECONDS),
    local: 3600,
    aws: 3600,
    description: "backoff cap, at least the base (at most SQS's visibility limit)",
  },
  leaseSeconds: {
    variable: 'POSTDATE_LEASE_SECONDS',
    prop: true,
    kind: seconds(1, 43_200),
    local: 300,
    aws: 300,
    description: 'sender lease; must exceed the sender timeout',
  },
  senderTimeoutSeconds: {
    variable: 'POSTDATE_SENDER_TIMEOUT_SECONDS',
    prop: true,
    kind: seconds(1, 900),
    local: 240,
    aws: 240,
    description:
      "the sender function's timeout; must exceed one whole attempt (2 × SMTP timeout + reply timeout + the outcome-write reserve, 28 s)",
  },
  smtpTimeoutSeconds: {
    variable: 'POSTDATE_SMTP_TIMEOUT_SECONDS',
    prop: true,
    kind: seconds(1, 300),
    local: 20,
    aws: 20,
    description: 'connection, greeting and each SMTP command before the final dot',
  },
  smtpReplyTimeoutSeconds: {
    variable: 'POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS',
    prop: true,
    kind: seconds(1, 600),
    local: 120,
    aws: 120,
    description: 'the reply to the final dot is waited for at least this long (a short wait duplicates mail)',
  },
  smtpSessionMaxMessages: {
    variable: 'POSTDATE_SMTP_SESSION_MAX_MESSAGES',
    prop: true,
    kind: { type: 'integer', min: 1, max: 10_000, unit: 'count' },
    local: 100,
    aws: 100,
    description: 'messages one pooled SMTP session carries before the sender says QUIT and opens another',
  },
  smtpSessionMaxAgeSeconds: {
    variable: 'POSTDATE_SMTP_SESSION_MAX_AGE_SECONDS',
    prop: true,
    kind: seconds(1, 3600),
    local: 120,
    aws: 120,
    description:
      'a pooled SMTP session is not reused after this long (a relay applies a reloaded policy to new sessions only)',
  },
  directDelayMaxSeconds: {
    variable: 'POSTDATE_DIRECT_DELAY_MAX_SECONDS',
    prop: true,
    kind: seconds(0, 900),
    local: 900,
    aws: 900,
    description: 'due within this → SQS `DelaySeconds`; later → scheduler',
  },
  apiImmediateCopy: {
    variable: 'POSTDATE_API_IMMEDIATE_COPY',
    prop: true,
    kind: { type: 'boolean' },
    local: true,
    aws: true,
    description:
      'the api puts a message due now or within 60 s on the send queue itself, delayed until it is due, without waiting for the stream and the relay (whose copy still follows, and is dropped)',
  },
  scheduleLeadSeconds: {
    variable: 'POSTDATE_SCHEDULE_LEAD_SECONDS',
    prop: true,
    kind: seconds(0, 900),
    local: 90,
    aws: 90,
    description: 'a schedule fires this much before `send_at`; the rest is an exact SQS delay',
  },
  sweepGraceSeconds: {
    variable: 'POSTDATE_SWEEP_GRACE_SECONDS',
    prop: true,
    kind: seconds(0, 86_400),
    local: 300,
    aws: 300,
    description: 'how overdue a non-terminal message must be before the sweeper re-dispatches it',
  },
  dataDir: {
    variable: 'POSTDATE_DATA_DIR',
    prop: false,
    kind: { type: 'text' },
    local: undefined,
    aws: undefined,
    description: 'local: where DynamoDB Local and the scheduler emulator keep their data (unset: memory)',
  },
  maxSendRate: {
    variable: 'POSTDATE_MAX_SEND_RATE',
    prop: true,
    kind: { type: 'rate' },
    local: undefined,
    aws: undefined,
    description:
      "the relay's rate for the whole fleet, in recipients/second as SES counts them; each sender takes an equal share of `POSTDATE_SENDER_MAX_CONCURRENCY`; with `POSTDATE_RELAYS`, the rate of each relay without its own `max_send_rate` (unset or `unlimited`: unlimited)",
  },
  senderMaxConcurrency: {
    variable: 'POSTDATE_SENDER_MAX_CONCURRENCY',
    prop: true,
    kind: { type: 'integer', min: 2, max: 20_000, unit: 'count' },
    local: 5,
    aws: 20,
    description:
      "how many senders run at once (the send queue's event source `MaximumConcurrency`, at most 1000; in provisioned mode 10 × its maximum pollers); each takes this share of `POSTDATE_MAX_SEND_RATE`",
  },
  relayProbeSeconds: {
    variable: 'POSTDATE_RELAY_PROBE_SECONDS',
    prop: true,
    kind: seconds(1, 900),
    local: 30,
    aws: 30,
    description:
      'while the relay is unavailable (or sending is paused), one probe of the relay per this interval, and held copies wait one to two of it between looks',
  },
  maxHorizonDays: {
    variable: 'POSTDATE_MAX_HORIZON_DAYS',
    prop: true,
    kind: days(1, 36_500),
    local: 400,
    aws: 400,
    description: 'furthest `send_at`',
  },
  retentionDays: {
    variable: 'POSTDATE_RETENTION_DAYS',
    prop: true,
    kind: days(1, 3650),
    local: 30,
    aws: 30,
    description: 'TTL of terminal records (and their bodies and idempotency guards)',
  },
  groupHeadReplicas: {
    variable: 'POSTDATE_GROUP_HEAD_REPLICAS',
    prop: true,
    kind: { type: 'integer', min: 1, max: 32, unit: 'count' },
    local: 1,
    aws: 1,
    description:
      "items that hold each group's head: a raise writes every one in its transaction, a reader reads one at random (each 3,000 reads/s: docs/capacity.md); raising it never loses a raise, lowering it keeps existing groups at their count (docs/decisions/0104)",
  },
  webhookRetryHours: {
    variable: 'POSTDATE_WEBHOOK_RETRY_HOURS',
    prop: true,
    kind: { type: 'integer', min: 1, max: 72, unit: 'hours' },
    local: 24,
    aws: 24,
    description:
      'a webhook delivery is retried with backoff and jitter this long, then `failed` (DESIGN §11)',
  },
  busEvents: {
    variable: 'POSTDATE_BUS_EVENTS',
    prop: true,
    kind: { type: 'busEvents' },
    local: BUS_EVENTS_DEFAULT,
    aws: BUS_EVENTS_DEFAULT,
    description:
      'the event types put on the EventBridge bus, e.g. `message.sent,message.dead`; webhooks get what they subscribe to either way (decision 0178)',
  },
  inlineAttachmentMaxKb: {
    variable: 'POSTDATE_INLINE_ATTACHMENT_MAX_KB',
    prop: true,
    // At most 4 MiB decoded: as base64 in the JSON body it stays under Lambda's 6 MB request payload.
    kind: { type: 'integer', min: 0, max: 4096, unit: 'KiB' },
    local: 3072,
    aws: 3072,
    description:
      'inline (base64) attachments of one message, decoded, in all (DESIGN §13); larger files go through `POST /v1/attachments`',
  },
  maxMessageMb: {
    variable: 'POSTDATE_MAX_MESSAGE_MB',
    prop: true,
    kind: { type: 'integer', min: 1, max: 40, unit: 'MB' },
    local: 40,
    aws: 40,
    description: "a message's whole size, attachments included as base64 (SES's limit is 40)",
  },
  webhookAllowPrivateUrls: {
    variable: 'POSTDATE_WEBHOOK_ALLOW_PRIVATE_URLS',
    prop: false,
    kind: { type: 'boolean' },
    local: true,
    aws: false,
    description:
      'webhooks may use plain `http` and loopback or private addresses (the local stack); in AWS only `https` to public addresses',
  },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof CONFIG_SETTINGS;
type Settings = typeof CONFIG_SETTINGS;

type ValueOfKind<K> = K extends { readonly type: 'integer' | 'rate' }
  ? number
  : K extends { readonly type: 'boolean' }
    ? boolean
    : K extends { readonly type: 'senders' }
      ? readonly string[]
      : K extends { readonly type: 'busEvents' }
        ? BusEvents
        : string;

/** Present in both targets: a local default, and an AWS default or a refusal to start without one. */
type AlwaysSet<S> = S extends { readonly local: undefined }
  ? false
  : S extends { readonly aws: undefined }
    ? false
    : true;

/** Every setting by its row's name, typed by its kind: what `loadSettings` returns. */
export type SettingValues = {
  readonly [N in SettingName]: AlwaysSet<Settings[N]> extends true
    ? ValueOfKind<Settings[N]['kind']>
    : ValueOfKind<Settings[N]['kind']> | undefined;
};

/** The rows the construct sets from its props of the same names. */
export type PropSettingName = {
  [N in SettingName]: Settings[N]['prop'] extends true ? N : never;
}[SettingName];

/** The names of the rows the construct sets, in table order. */
export const PROP_SETTINGS = (Object.keys(CONFIG_SETTINGS) as SettingName[]).filter(
  (name): name is PropSettingName => CONFIG_SETTINGS[name].prop,
);

/** The construct's default of a prop-set setting with a plain default (its AWS default). */
export function awsDefault<N extends PropSettingName>(name: N): Settings[N]['aws'] {
  return CONFIG_SETTINGS[name].aws;
}

/**
 * The environment that sets `values` (the inverse of reading them): lists joined with commas, an
 * undefined value left unset.
 */
export function settingsEnvironment(
  values: Partial<Readonly<Record<SettingName, SettingValue | undefined>>>,
  names: readonly SettingName[],
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const name of names) {
    const value = values[name];
    if (value === undefined) continue;
    environment[CONFIG_SETTINGS[name].variable] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return environment;
}

/**
 * Names of deployed resources, set by the construct (or the local stack) on each function that uses
 * them. Only `POSTDATE_TABLE_NAME` is required of every function.
 */
export const RESOURCE_SETTINGS = {
  tableName: { variable: 'POSTDATE_TABLE_NAME', description: 'the outbox table (every function)' },
  sendQueueUrl: { variable: 'POSTDATE_SEND_QUEUE_URL', description: 'the send queue' },
  sendQueueArn: {
    variable: 'POSTDATE_SEND_QUEUE_ARN',
    description: "the send queue's ARN, a schedule's target",
  },
  sendDeadLetterQueueUrl: {
    variable: 'POSTDATE_SEND_DLQ_URL',
    description: "the send queue's DLQ, where the sender moves copies of `dead` messages",
  },
  scheduleGroup: { variable: 'POSTDATE_SCHEDULE_GROUP', description: 'the EventBridge Scheduler group' },
  schedulerRoleArn: {
    variable: 'POSTDATE_SCHEDULER_ROLE_ARN',
    description: 'the role a schedule assumes to send to the queue',
  },
  scheduleDeadLetterArn: {
    variable: 'POSTDATE_SCHEDULE_DLQ_ARN',
    description: "the schedules' dead-letter queue",
  },
  relayFailureQueueUrl: {
    variable: 'POSTDATE_RELAY_FAILURE_QUEUE_URL',
    description: "the relay's on-failure queue (redriven by the CLI)",
  },
  webhookQueueUrl: {
    variable: 'POSTDATE_WEBHOOK_QUEUE_URL',
    description: 'the webhook delivery queue (the event producer, the api and the delivery function)',
  },
  eventBusName: {
    variable: 'POSTDATE_EVENT_BUS_NAME',
    description: 'the EventBridge bus the event producer puts events on (AWS; unset locally)',
  },
  smtpSecretArn: {
    variable: 'POSTDATE_SMTP_SECRET_ARN',
    description: "the secret holding the relay's credentials (the sender only)",
  },
  attachmentBucket: {
    variable: 'POSTDATE_ATTACHMENT_BUCKET',
    description: 'the S3 bucket of attachments (DESIGN §13: the api stores and pre-signs, the sender reads)',
  },
  attachmentEndpoint: {
    variable: 'POSTDATE_S3_ENDPOINT',
    description: "local: the S3 emulator's URL (unset in AWS)",
  },
  stackName: {
    variable: 'POSTDATE_STACK',
    local: 'local',
    description:
      "the CloudFormation stack's name (every function; with the construct's path, `Mail/Transactional`, where a stack holds more than one Postdate): the `stack` dimension of every metric, so two Postdates' alarms never add up (DESIGN §6); `local` when unset",
  },
} as const satisfies Record<
  string,
  { readonly variable: string; readonly description: string; readonly local?: string }
>;

export type ResourceName = keyof typeof RESOURCE_SETTINGS;

/** Set by the local stack on its functions: they run for the `local` target (`configTargetOf`). */
export const LOCAL_TARGET_VARIABLE = 'POSTDATE_LOCAL';

/**
 * The test suites' recording of AWS requests (DESIGN §6, "Permissions are part of the contract";
 * lambdas/adapters/awsClients.ts, test/iam/). Lambda never sets them.
 */
export const AWS_CALL_RECORDING = {
  /** A file: every request a function's client sends is appended to it as one JSON line. */
  file: 'POSTDATE_RECORD_AWS_CALLS',
  /** The function whose code builds the client (`api`, `sweeper`, …), read when it is built. */
  function: 'POSTDATE_FUNCTION',
} as const;

/**
 * Ports of the local stack's parts other than the API (whose port is `POSTDATE_PORT`), read by
 * local/localEnv.ts; 0 picks any free port.
 */
export const LOCAL_PORT_SETTINGS = {
  dynamodb: { variable: 'POSTDATE_DYNAMODB_PORT', default: 8000, description: 'DynamoDB Local' },
  sqs: { variable: 'POSTDATE_SQS_PORT', default: 9324, description: 'the SQS emulator' },
  scheduler: { variable: 'POSTDATE_SCHEDULER_PORT', default: 9330, description: 'the Scheduler emulator' },
  smtp: { variable: 'POSTDATE_SMTP_SINK_PORT', default: 1025, description: 'the SMTP sink' },
  mailViewer: { variable: 'POSTDATE_MAIL_VIEWER_PORT', default: 1080, description: 'the mail viewer' },
  s3: { variable: 'POSTDATE_S3_PORT', default: 9340, description: 'the S3 emulator (attachments)' },
} as const satisfies Record<
  string,
  { readonly variable: string; readonly default: number; readonly description: string }
>;

/** How `npm start` shows the functions' JSON logs (local/startLog.ts). */
export const LOCAL_LOG_MODES = ['pretty', 'quiet', 'json'] as const;
export type LocalLogMode = (typeof LOCAL_LOG_MODES)[number];

/** `npm start` only (the functions never read it); `npm start -- --quiet|--pretty|--json` wins over it. */
export const LOCAL_LOG_SETTING = {
  variable: 'POSTDATE_LOG',
  default: 'pretty',
  description:
    "`npm start`'s log: `pretty` (one short line per log entry, nothing at INFO before the banner), `quiet` (warnings and errors only) or `json` (the functions' lines as written)",
} as const satisfies {
  readonly variable: string;
  readonly default: LocalLogMode;
  readonly description: string;
};
