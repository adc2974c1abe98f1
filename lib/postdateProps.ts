import { Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { isAllowedSender, parseAddress } from '../lambdas/core/addresses.js';
import { retryOutlivesSendQueue } from '../lambdas/core/backoff.js';
import { type BusEvents, unknownBusEventTypes } from '../lambdas/core/busEvents.js';
import { settingProblem } from '../lambdas/core/config.js';
import { awsDefault, CONFIG_SETTINGS, PROP_SETTINGS, type SettingName } from '../lambdas/core/configSpec.js';
import { MESSAGE_EVENT_TYPES } from '../lambdas/core/messageEvents.js';
import { PostdateError } from '../lambdas/core/postdateError.js';
import { sendTimingProblems } from '../lambdas/core/sendTiming.js';
import { WEBHOOK_DELIVERY } from './webhookLayout.js';

/**
 * One relay of {@link PostdateProps.relays} (DESIGN §15): where mail may leave, in its turn.
 */
export interface PostdateRelay {
  /** 1 to 32 letters, digits, `-` or `_`, unique in the list; named in attempts, metrics and the CLI. */
  readonly name: string;
  /** The relay's SMTP host, e.g. `email-smtp.us-east-1.amazonaws.com`. */
  readonly host: string;
  /**
   * The relay's SMTP port.
   * @default 587 (STARTTLS), or 465 when {@link secure} is true
   */
  readonly port?: number;
  /**
   * Implicit TLS from the first byte (usually port 465).
   * @default false
   */
  readonly secure?: boolean;
  /**
   * Refuse to send unless STARTTLS succeeds, when not {@link secure}.
   * @default true
   */
  readonly requireTls?: boolean;
  /** This relay's login, `{"username": "…", "password": "…"}`; only the sender may read it. */
  readonly secret: secretsmanager.ISecret;
  /**
   * This relay's sending rate for the whole fleet, in recipients per second.
   * @default {@link PostdateProps.maxSendRate}
   */
  readonly maxSendRate?: number;
}

/** A {@link PostdateRelay} with its defaults applied; `maxSendRate` undefined: the fleet's applies. */
export type ResolvedPostdateRelay = Required<Omit<PostdateRelay, 'maxSendRate'>> & {
  readonly maxSendRate: number | undefined;
};

/** Requests per second and burst for the HTTP API's default stage. */
export interface ApiThrottle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

/**
 * Properties of the {@link Postdate} construct. Every number here becomes the DESIGN §8 variable of
 * the same meaning on the functions, so the deployed service and the local stack read one contract.
 */
export interface PostdateProps {
  /**
   * `from` used when a request has none (`POSTDATE_DEFAULT_FROM`); must match {@link allowedFrom}.
   * An address, optionally with a display name: `Ops <ops@example.com>`.
   */
  readonly defaultFrom: string;
  /**
   * Senders a request's `from` must match (`POSTDATE_ALLOWED_FROM`): exact addresses, `*@domain`
   * patterns, or `*` alone for any sender.
   */
  readonly allowedFrom: readonly string[];
  /**
   * SMTP relay host (`SMTP_HOST`).
   * @default `email-smtp.{region}.amazonaws.com` — the Amazon SES SMTP endpoint of the stack's region
   */
  readonly smtpHost?: string;
  /**
   * SMTP port (`SMTP_PORT`).
   * @default 587 (STARTTLS), or 465 when {@link smtpSecure} is true
   */
  readonly smtpPort?: number;
  /**
   * Implicit TLS from the first byte (`SMTP_SECURE`, usually port 465).
   * @default false
   */
  readonly smtpSecure?: boolean;
  /**
   * Refuse to send unless STARTTLS succeeds (`SMTP_REQUIRE_TLS`) when not {@link smtpSecure}.
   * @default true
   */
  readonly smtpRequireTls?: boolean;
  /**
   * A Secrets Manager secret holding `{"username": "…", "password": "…"}` for the relay. Only the
   * sender may read it.
   * @default a new secret with a generated placeholder password; set the real credentials after the
   * first deploy (docs/deploy.md)
   */
  readonly smtpSecret?: secretsmanager.ISecret;
  /**
   * Failover across relays (DESIGN §15, `POSTDATE_RELAYS`): the relays in order, each with its own
   * endpoint, TLS rules, secret and optional rate. A copy leaves through the first relay whose
   * breaker is closed and that an operator has not disabled. Given, it replaces the one relay the
   * `smtp*` props describe: those may not be set with it.
   * @default none: the one relay {@link smtpHost} and {@link smtpSecret} describe, named `default`
   */
  readonly relays?: readonly PostdateRelay[];
  /**
   * Right side of every `Message-ID` (`POSTDATE_MESSAGE_ID_DOMAIN`).
   * @default the domain of {@link defaultFrom}
   */
  readonly messageIdDomain?: string;
  /**
   * SMTP attempts before a message is `dead` (`POSTDATE_MAX_ATTEMPTS`); the send queue's
   * `maxReceiveCount` is a backstop above it.
   * @default 8
   */
  readonly maxAttempts?: number;
  /**
   * Backoff base (`POSTDATE_RETRY_BASE_SECONDS`).
   * @default 30
   */
  readonly retryBaseSeconds?: number;
  /**
   * Backoff cap (`POSTDATE_RETRY_CAP_SECONDS`); at most 43,200 (SQS's visibility limit).
   * @default 3600
   */
  readonly retryCapSeconds?: number;
  /**
   * Sender lease (`POSTDATE_LEASE_SECONDS`); must exceed the sender's timeout.
   * @default 300
   */
  readonly leaseSeconds?: number;
  /**
   * The sender function's timeout (`POSTDATE_SENDER_TIMEOUT_SECONDS`, at most 900); it must exceed
   * one whole attempt: 2 × `smtpTimeoutSeconds` + `smtpReplyTimeoutSeconds` + 10 s for the outcome
   * write. The send queue's visibility timeout is six times it.
   * @default 240
   */
  readonly senderTimeoutSeconds?: number;
  /**
   * Connection, greeting and each SMTP command before the final dot (`POSTDATE_SMTP_TIMEOUT_SECONDS`).
   * @default 20
   */
  readonly smtpTimeoutSeconds?: number;
  /**
   * The reply to the final dot is waited for at least this long, and longer when the invocation
   * has time (`POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS`). A short wait there duplicates mail.
   * @default 120
   */
  readonly smtpReplyTimeoutSeconds?: number;
  /**
   * Messages one pooled SMTP session carries before the sender says QUIT and opens another
   * (`POSTDATE_SMTP_SESSION_MAX_MESSAGES`).
   * @default 100
   */
  readonly smtpSessionMaxMessages?: number;
  /**
   * A pooled SMTP session is not reused after this many seconds (`POSTDATE_SMTP_SESSION_MAX_AGE_SECONDS`):
   * a relay applies a reloaded policy to new sessions only.
   * @default 120
   */
  readonly smtpSessionMaxAgeSeconds?: number;
  /**
   * Messages due within this many seconds go straight to SQS with `DelaySeconds`; later ones are
   * scheduled (`POSTDATE_DIRECT_DELAY_MAX_SECONDS`, at most 900).
   * @default 900
   */
  readonly directDelayMaxSeconds?: number;
  /**
   * The api puts an immediate message's copy on the send queue itself, right after its write, so
   * the sender need not wait for the stream and the relay (`POSTDATE_API_IMMEDIATE_COPY`). The
   * relay's copy still follows and is dropped; it costs one SQS request and one state read more per
   * immediate message (docs/decisions/).
   * @default true
   */
  readonly apiImmediateCopy?: boolean;
  /**
   * A schedule fires this long before `send_at`; the rest is an exact SQS delay
   * (`POSTDATE_SCHEDULE_LEAD_SECONDS`). EventBridge Scheduler is precise to about 60 s.
   * @default 90
   */
  readonly scheduleLeadSeconds?: number;
  /**
   * How overdue a live message must be before the sweeper re-dispatches it
   * (`POSTDATE_SWEEP_GRACE_SECONDS`).
   * @default 300
   */
  readonly sweepGraceSeconds?: number;
  /**
   * How often the sweeper runs.
   * @default Duration.minutes(5)
   */
  readonly sweepInterval?: Duration;
  /**
   * Furthest `send_at` a request may ask for (`POSTDATE_MAX_HORIZON_DAYS`).
   * @default 400
   */
  readonly maxHorizonDays?: number;
  /**
   * Days a terminal record (and its body and idempotency guard) is kept before DynamoDB's TTL
   * removes it (`POSTDATE_RETENTION_DAYS`).
   * @default 30
   */
  readonly retentionDays?: number;
  /**
   * Hours a webhook delivery is retried, with backoff and full jitter, before it is `failed`
   * (`POSTDATE_WEBHOOK_RETRY_HOURS`, DESIGN §11).
   * @default 24
   */
  readonly webhookRetryHours?: number;
  /**
   * Items that hold each group's head (`POSTDATE_GROUP_HEAD_REPLICAS`, 1–32, DESIGN §4 Freshness): a
   * version raise writes every one in its transaction (2 W each), a reader reads one at random. One
   * item takes 3,000 reads/s, so one group's messages at one version pass 2,000/s only with more:
   * 5 at 10,000/s, 8 to keep each under two thirds of a partition (docs/capacity.md; decision 0104).
   * Lowering it later leaves existing groups at the count they have.
   * @default 1
   */
  readonly groupHeadReplicas?: number;
  /**
   * Inline (base64) attachments of one message, decoded, in all, in KiB
   * (`POSTDATE_INLINE_ATTACHMENT_MAX_KB`, DESIGN §13); at most 4096, within Lambda's payload.
   * @default 3072
   */
  readonly inlineAttachmentMaxKb?: number;
  /**
   * A message's whole size with its attachments as base64, in MB (`POSTDATE_MAX_MESSAGE_MB`); SES
   * accepts at most 40.
   * @default 40
   */
  readonly maxMessageMb?: number;
  /**
   * The EventBridge bus every status change is put on (`source: postdate`, `detail-type` = the
   * event type, DESIGN §11). Users route events from it with ordinary rules.
   * @default a new bus, created by the construct
   */
  readonly eventBus?: events.IEventBus;
  /**
   * The event types put on {@link eventBus} (`POSTDATE_BUS_EVENTS`, DESIGN §11): `'all'`, `'none'`,
   * or a list such as `['message.sent', 'message.dead']` (an empty list is `'none'`). Each event is
   * a PutEvents entry, billed whether or not a rule routes it; webhooks get the types they subscribe
   * to whatever this says. The producer's `events:PutEvents` grant is for these types only (decision 0178).
   * @default 'all'
   */
  readonly busEvents?: BusEvents;
  /**
   * The relay's sending rate for the whole fleet, in recipients per second as SES counts them
   * (`POSTDATE_MAX_SEND_RATE`); each sender takes 1/{@link senderMaxConcurrency} of it.
   * @default unlimited
   */
  readonly maxSendRate?: number;
  /**
   * The relay circuit breaker's probe interval (`POSTDATE_RELAY_PROBE_SECONDS`, 1–900).
   * @default 30
   */
  readonly relayProbeSeconds?: number;
  /**
   * Most concurrent sender invocations the SQS event source starts (2–1000, its
   * `MaximumConcurrency`). With {@link maxSendRate} this bounds the pressure on the relay.
   * Exclusive with {@link senderPollers}.
   * @default 20
   */
  readonly senderMaxConcurrency?: number;
  /**
   * Provisioned mode for the send queue's event source (`ProvisionedPollerConfig`: minimum 2–200,
   * maximum 2–2000 pollers). A poller runs at most 10 invocations at once, so the fleet runs at most
   * 10 × `maximum` senders and each takes 1/(10 × `maximum`) of {@link maxSendRate}. Past 1,000
   * senders, where `MaximumConcurrency` stops (docs/capacity.md; docs/decisions/0103). Pollers are
   * billed while they run, `minimum` always. Exclusive with {@link senderMaxConcurrency}.
   * @default none: the event source runs in standard mode, bounded by senderMaxConcurrency
   */
  readonly senderPollers?: SenderPollers;
  /**
   * Most concurrent webhook deliveries the SQS event source starts (2–1000). Each delivery waits
   * at most 10 s for an endpoint, so this bounds deliveries per second to about 10× it while
   * endpoints are slow (docs/capacity.md).
   * @default 10
   */
  readonly webhookMaxConcurrency?: number;
  /**
   * Where alarms notify (alarm and OK).
   * @default a new SNS topic encrypted with a new customer-managed KMS key (CloudWatch cannot publish
   * to a topic under the AWS-managed SNS key)
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * The SNS topic Amazon SES publishes bounce and complaint notifications to (an identity's
   * feedback notifications, or a configuration set's SNS event destination). When given, a small
   * function subscribed to it adds `Permanent` bounces and complaints to the suppression list of the
   * tenant whose message it was (DESIGN §12). Turn on "include original email headers" for identity
   * notifications: the message is found by its `X-Postdate-Id` (docs/api.md, "Suppressions").
   * The same as {@link sesNotificationTopics} with one topic: SES in one Region only.
   * @default none: only hard bounces at RCPT TO (5.1.x) and the API add suppressions
   */
  readonly sesNotificationTopic?: sns.ITopic;
  /**
   * The SNS topics Amazon SES publishes bounce and complaint notifications to, one for each Region
   * SES sends from (DESIGN §15): SES publishes only to a topic in its own Region, so SES in
   * eu-west-1 and then in us-east-1 means two topics. The bounces function is subscribed to each,
   * across Regions (a topic in an opt-in Region by that Region's SNS principal; AWS cannot deliver
   * to a function in an opt-in Region from any other, and the construct refuses that). Otherwise
   * as {@link sesNotificationTopic}, which is the same as a list of one; give one or the other.
   * @default none: only hard bounces at RCPT TO (5.1.x) and the API add suppressions
   */
  readonly sesNotificationTopics?: readonly sns.ITopic[];
  /**
   * Throttling of the HTTP API's default stage.
   * @default { rateLimit: 1000, burstLimit: 2000 }
   */
  readonly apiThrottle?: ApiThrottle;
  /**
   * How long API Gateway caches an authorizer answer per `Authorization` header; a revoked key
   * keeps working at most this long. At most one hour.
   * @default Duration.seconds(30)
   */
  readonly authorizerCacheTtl?: Duration;
  /**
   * Retention of every function's and the API's log group.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the table, the SMTP secret and the attachments' bucket when the stack is deleted.
   * `RETAIN` also turns on the table's deletion protection; `DESTROY` empties the bucket first;
   * `SNAPSHOT` is refused (none of the three takes one).
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Alarm when copies wait visible on the send queue and its oldest copy is older than this (3 of 3
   * minutes), and when the sender hands back a copy that has been due this long (DueMailHeldBack,
   * decision 0231). Copies wait up to 900 s as delayed messages by design, so keep it above that.
   * @default Duration.minutes(30)
   */
  readonly oldestMessageAgeAlarmThreshold?: Duration;
  /**
   * Alarm when the relay's stream iterator age exceeds this (messages due soon are late by as much).
   * @default Duration.minutes(2)
   */
  readonly relayIteratorAgeAlarmThreshold?: Duration;
  /**
   * Alarm when the API answers at least this many 5xx in five minutes.
   * @default 5
   */
  readonly api5xxAlarmThreshold?: number;
}

/** {@link PostdateProps} with every default applied and every value checked. */
export interface ResolvedPostdateProps {
  readonly defaultFrom: string;
  readonly allowedFrom: readonly string[];
  /** `undefined` means "the SES endpoint of the stack's region", filled in by the construct. */
  readonly smtpHost: string | undefined;
  readonly smtpPort: number;
  readonly smtpSecure: boolean;
  readonly smtpRequireTls: boolean;
  readonly smtpSecret: secretsmanager.ISecret | undefined;
  /** The relays as given, every default applied; undefined: the one `default` relay. */
  readonly relays: readonly ResolvedPostdateRelay[] | undefined;
  readonly messageIdDomain: string;
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
  readonly leaseSeconds: number;
  readonly senderTimeoutSeconds: number;
  readonly smtpTimeoutSeconds: number;
  readonly smtpReplyTimeoutSeconds: number;
  readonly smtpSessionMaxMessages: number;
  readonly smtpSessionMaxAgeSeconds: number;
  readonly directDelayMaxSeconds: number;
  readonly apiImmediateCopy: boolean;
  /** A list is never empty: an empty one is `none`. */
  readonly busEvents: BusEvents;
  readonly scheduleLeadSeconds: number;
  readonly sweepGraceSeconds: number;
  readonly sweepInterval: Duration;
  readonly maxHorizonDays: number;
  readonly retentionDays: number;
  readonly webhookRetryHours: number;
  readonly groupHeadReplicas: number;
  readonly inlineAttachmentMaxKb: number;
  readonly maxMessageMb: number;
  readonly eventBus: events.IEventBus | undefined;
  readonly maxSendRate: number | undefined;
  readonly relayProbeSeconds: number;
  /**
   * Most senders at once: {@link PostdateProps.senderMaxConcurrency}, or 10 × the maximum pollers
   * in provisioned mode; each sender's share of the rate is 1/this (POSTDATE_SENDER_MAX_CONCURRENCY).
   */
  readonly senderMaxConcurrency: number;
  readonly senderPollers: SenderPollers | undefined;
  readonly webhookMaxConcurrency: number;
  readonly alarmTopic: sns.ITopic | undefined;
  /** {@link PostdateProps.sesNotificationTopics}, or the one {@link PostdateProps.sesNotificationTopic}; empty: no SES feedback. */
  readonly sesNotificationTopics: readonly sns.ITopic[];
  readonly apiThrottle: ApiThrottle;
  readonly authorizerCacheTtl: Duration;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly oldestMessageAgeAlarmThreshold: Duration;
  readonly relayIteratorAgeAlarmThreshold: Duration;
  readonly api5xxAlarmThreshold: number;
}

/**
 * The defaults of {@link PostdateProps}, in one place: those that become a function's variable are
 * the AWS defaults of lambdas/core/configSpec.ts, the rest belong to the construct alone.
 */
export const POSTDATE_DEFAULTS = {
  smtpPort: 587,
  smtpSecurePort: 465,
  smtpSecure: awsDefault('smtpSecure'),
  smtpRequireTls: awsDefault('smtpRequireTls'),
  maxAttempts: awsDefault('maxAttempts'),
  retryBaseSeconds: awsDefault('retryBaseSeconds'),
  retryCapSeconds: awsDefault('retryCapSeconds'),
  leaseSeconds: awsDefault('leaseSeconds'),
  senderTimeoutSeconds: awsDefault('senderTimeoutSeconds'),
  smtpTimeoutSeconds: awsDefault('smtpTimeoutSeconds'),
  smtpReplyTimeoutSeconds: awsDefault('smtpReplyTimeoutSeconds'),
  smtpSessionMaxMessages: awsDefault('smtpSessionMaxMessages'),
  smtpSessionMaxAgeSeconds: awsDefault('smtpSessionMaxAgeSeconds'),
  directDelayMaxSeconds: awsDefault('directDelayMaxSeconds'),
  apiImmediateCopy: awsDefault('apiImmediateCopy'),
  busEvents: awsDefault('busEvents'),
  scheduleLeadSeconds: awsDefault('scheduleLeadSeconds'),
  sweepGraceSeconds: awsDefault('sweepGraceSeconds'),
  sweepIntervalMinutes: 5,
  maxHorizonDays: awsDefault('maxHorizonDays'),
  retentionDays: awsDefault('retentionDays'),
  relayProbeSeconds: awsDefault('relayProbeSeconds'),
  webhookRetryHours: awsDefault('webhookRetryHours'),
  groupHeadReplicas: awsDefault('groupHeadReplicas'),
  inlineAttachmentMaxKb: awsDefault('inlineAttachmentMaxKb'),
  maxMessageMb: awsDefault('maxMessageMb'),
  senderMaxConcurrency: awsDefault('senderMaxConcurrency'),
  webhookMaxConcurrency: WEBHOOK_DELIVERY.maxConcurrency,
  apiThrottle: { rateLimit: 1000, burstLimit: 2000 },
  authorizerCacheTtlSeconds: 30,
  oldestMessageAgeAlarmMinutes: 30,
  relayIteratorAgeAlarmMinutes: 2,
  api5xxAlarmThreshold: 5,
} as const;

/** The sweeper's timeout; the sweep interval may not be shorter. */
export const SWEEPER_TIMEOUT_SECONDS = 120;

/** Every problem with a {@link PostdateProps}, reported at once. */
export class PostdatePropsError extends PostdateError {
  override readonly name = 'PostdatePropsError';
  constructor(readonly problems: readonly string[]) {
    super(`Invalid Postdate props:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`, {
      class: 'config',
    });
  }
}

/**
 * Applies the defaults and checks every value, collecting all problems before throwing one
 * {@link PostdatePropsError}. Values that are CloudFormation tokens are only known at deploy time
 * and are passed through unchecked.
 */
export function resolvePostdateProps(props: PostdateProps): ResolvedPostdateProps {
  const problems: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };
  const whole = (name: string, value: number, min: number, max: number) => {
    if (Token.isUnresolved(value)) return;
    check(
      Number.isInteger(value) && value >= min && value <= max,
      `${name} must be a whole number from ${min} to ${max}, got ${value}`,
    );
  };
  // A Duration its resource counts in seconds: CDK's own error would stop at it and hide the rest.
  const wholeSeconds = (name: string, duration: Duration): number => {
    const seconds = duration.toSeconds({ integral: false });
    check(
      Number.isInteger(seconds),
      `${name} must be a whole number of seconds, got ${duration.toHumanString()}`,
    );
    return seconds;
  };

  const smtpSecure = props.smtpSecure ?? POSTDATE_DEFAULTS.smtpSecure;
  const allowedFrom = [...props.allowedFrom].map((pattern) => pattern.trim()).filter((p) => p !== '');
  // Each value the functions read is checked by their own rule (lambdas/core/config.ts), named by prop.
  const settingCheck = (prop: string, setting: SettingName, value: string) => {
    if (Token.isUnresolved(value)) return;
    const problem = settingProblem(setting, value);
    if (problem !== undefined) problems.push(`${prop} ${problem}`);
  };
  const defaultSender = parseAddress(props.defaultFrom);
  const defaultFromAddress = defaultSender.ok ? defaultSender.value.address : undefined;
  const defaultDomain = defaultSender.ok ? defaultSender.value.domain.toLowerCase() : undefined;

  const resolved: ResolvedPostdateProps = {
    defaultFrom: props.defaultFrom.trim(),
    allowedFrom,
    smtpHost: props.smtpHost?.trim(),
    smtpPort: props.smtpPort ?? (smtpSecure ? POSTDATE_DEFAULTS.smtpSecurePort : POSTDATE_DEFAULTS.smtpPort),
    smtpSecure,
    smtpRequireTls: props.smtpRequireTls ?? POSTDATE_DEFAULTS.smtpRequireTls,
    smtpSecret: props.smtpSecret,
    relays: props.relays?.map((relay) => {
      const secure = relay.secure ?? POSTDATE_DEFAULTS.smtpSecure;
      return {
        name: relay.name.trim(),
        host: relay.host.trim(),
        port: relay.port ?? (secure ? POSTDATE_DEFAULTS.smtpSecurePort : POSTDATE_DEFAULTS.smtpPort),
        secure,
        requireTls: relay.requireTls ?? POSTDATE_DEFAULTS.smtpRequireTls,
        secret: relay.secret,
        maxSendRate: relay.maxSendRate,
      };
    }),
    messageIdDomain: props.messageIdDomain?.trim() ?? defaultDomain ?? '',
    maxAttempts: props.maxAttempts ?? POSTDATE_DEFAULTS.maxAttempts,
    retryBaseSeconds: props.retryBaseSeconds ?? POSTDATE_DEFAULTS.retryBaseSeconds,
    retryCapSeconds: props.retryCapSeconds ?? POSTDATE_DEFAULTS.retryCapSeconds,
    leaseSeconds: props.leaseSeconds ?? POSTDATE_DEFAULTS.leaseSeconds,
    senderTimeoutSeconds: props.senderTimeoutSeconds ?? POSTDATE_DEFAULTS.senderTimeoutSeconds,
    smtpTimeoutSeconds: props.smtpTimeoutSeconds ?? POSTDATE_DEFAULTS.smtpTimeoutSeconds,
    smtpReplyTimeoutSeconds: props.smtpReplyTimeoutSeconds ?? POSTDATE_DEFAULTS.smtpReplyTimeoutSeconds,
    smtpSessionMaxMessages: props.smtpSessionMaxMessages ?? POSTDATE_DEFAULTS.smtpSessionMaxMessages,
    smtpSessionMaxAgeSeconds: props.smtpSessionMaxAgeSeconds ?? POSTDATE_DEFAULTS.smtpSessionMaxAgeSeconds,
    directDelayMaxSeconds: props.directDelayMaxSeconds ?? POSTDATE_DEFAULTS.directDelayMaxSeconds,
    apiImmediateCopy: props.apiImmediateCopy ?? POSTDATE_DEFAULTS.apiImmediateCopy,
    busEvents:
      Array.isArray(props.busEvents) && props.busEvents.length === 0
        ? 'none'
        : (props.busEvents ?? POSTDATE_DEFAULTS.busEvents),
    scheduleLeadSeconds: props.scheduleLeadSeconds ?? POSTDATE_DEFAULTS.scheduleLeadSeconds,
    sweepGraceSeconds: props.sweepGraceSeconds ?? POSTDATE_DEFAULTS.sweepGraceSeconds,
    sweepInterval: props.sweepInterval ?? Duration.minutes(POSTDATE_DEFAULTS.sweepIntervalMinutes),
    maxHorizonDays: props.maxHorizonDays ?? POSTDATE_DEFAULTS.maxHorizonDays,
    retentionDays: props.retentionDays ?? POSTDATE_DEFAULTS.retentionDays,
    webhookRetryHours: props.webhookRetryHours ?? POSTDATE_DEFAULTS.webhookRetryHours,
    groupHeadReplicas: props.groupHeadReplicas ?? POSTDATE_DEFAULTS.groupHeadReplicas,
    inlineAttachmentMaxKb: props.inlineAttachmentMaxKb ?? POSTDATE_DEFAULTS.inlineAttachmentMaxKb,
    maxMessageMb: props.maxMessageMb ?? POSTDATE_DEFAULTS.maxMessageMb,
    eventBus: props.eventBus,
    maxSendRate: props.maxSendRate,
    relayProbeSeconds: props.relayProbeSeconds ?? POSTDATE_DEFAULTS.relayProbeSeconds,
    senderMaxConcurrency:
      props.senderPollers === undefined
        ? (props.senderMaxConcurrency ?? POSTDATE_DEFAULTS.senderMaxConcurrency)
        : SQS_POLLER_INVOCATIONS * props.senderPollers.maximum,
    senderPollers: props.senderPollers,
    webhookMaxConcurrency: props.webhookMaxConcurrency ?? POSTDATE_DEFAULTS.webhookMaxConcurrency,
    alarmTopic: props.alarmTopic,
    sesNotificationTopics:
      props.sesNotificationTopics ??
      (props.sesNotificationTopic === undefined ? [] : [props.sesNotificationTopic]),
    apiThrottle: props.apiThrottle ?? POSTDATE_DEFAULTS.apiThrottle,
    authorizerCacheTtl:
      props.authorizerCacheTtl ?? Duration.seconds(POSTDATE_DEFAULTS.authorizerCacheTtlSeconds),
    logRetention: props.logRetention ?? RetentionDays.ONE_MONTH,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    oldestMessageAgeAlarmThreshold:
      props.oldestMessageAgeAlarmThreshold ??
      Duration.minutes(POSTDATE_DEFAULTS.oldestMessageAgeAlarmMinutes),
    relayIteratorAgeAlarmThreshold:
      props.relayIteratorAgeAlarmThreshold ??
      Duration.minutes(POSTDATE_DEFAULTS.relayIteratorAgeAlarmMinutes),
    api5xxAlarmThreshold: props.api5xxAlarmThreshold ?? POSTDATE_DEFAULTS.api5xxAlarmThreshold,
  };

  // Senders.
  settingCheck('defaultFrom', 'defaultFrom', props.defaultFrom);
  check(allowedFrom.length > 0, 'allowedFrom must list at least one sender');
  for (const pattern of allowedFrom) {
    if (pattern.includes(',')) {
      check(
        Token.isUnresolved(pattern),
        `allowedFrom: "${pattern}" contains a comma; give one sender per entry`,
      );
    } else {
      settingCheck('allowedFrom:', 'allowedFrom', pattern);
    }
  }
  if (defaultFromAddress !== undefined && !allowedFrom.some((pattern) => Token.isUnresolved(pattern))) {
    check(
      isAllowedSender(defaultFromAddress, allowedFrom),
      `defaultFrom "${defaultFromAddress}" is not matched by allowedFrom (${allowedFrom.join(', ')})`,
    );
  }

  // SMTP.
  if (resolved.smtpHost !== undefined) settingCheck('smtpHost', 'smtpHost', resolved.smtpHost);
  if (props.messageIdDomain !== undefined) {
    settingCheck('messageIdDomain', 'messageIdDomain', resolved.messageIdDomain);
  } else if (settingProblem('messageIdDomain', resolved.messageIdDomain) !== undefined) {
    problems.push('messageIdDomain could not be derived from defaultFrom; set it explicitly');
  }

  // Events: the bus takes message event types only (lambdas/core/busEvents.ts).
  const busEvents: unknown = resolved.busEvents;
  if (Array.isArray(busEvents)) {
    const unknown = unknownBusEventTypes(busEvents.filter((entry) => !Token.isUnresolved(entry)));
    check(
      unknown.length === 0,
      `busEvents: ${unknown.map((entry) => `"${entry}"`).join(', ')} is not a message event type (${MESSAGE_EVENT_TYPES.join(', ')})`,
    );
  } else {
    check(
      busEvents === 'all' || busEvents === 'none',
      `busEvents must be 'all', 'none' or a list of message event types, got ${JSON.stringify(busEvents)}`,
    );
  }

  for (const problem of relayProblems(props)) problems.push(problem);
  for (const problem of sesNotificationTopicProblems(props)) problems.push(problem);

  // The range of every setting that becomes a function's variable: its row in lambdas/core/configSpec.ts.
  for (const name of PROP_SETTINGS) {
    // The sender's concurrency is checked below, as the prop (2–1000) or from the pollers.
    if (name === 'senderMaxConcurrency') continue;
    const kind = CONFIG_SETTINGS[name].kind;
    const value = resolved[name];
    if (value === undefined || Token.isUnresolved(value)) continue;
    if (kind.type === 'integer') whole(name, Number(value), kind.min, kind.max);
    if (kind.type === 'rate') {
      check(
        typeof value === 'number' && Number.isFinite(value) && value > 0,
        `${name} must be a positive number of recipients per second, got ${value}`,
      );
    }
  }

  // Attempts, backoff, lease.
  if (!Token.isUnresolved(resolved.retryCapSeconds) && !Token.isUnresolved(resolved.retryBaseSeconds)) {
    check(
      resolved.retryCapSeconds >= resolved.retryBaseSeconds,
      `retryCapSeconds (${resolved.retryCapSeconds}) must be at least retryBaseSeconds (${resolved.retryBaseSeconds})`,
    );
  }
  const backoff = [resolved.maxAttempts, resolved.retryBaseSeconds, resolved.retryCapSeconds];
  if (!backoff.some((value) => Token.isUnresolved(value)) && Number.isInteger(resolved.maxAttempts)) {
    // The rule the functions start with (lambdas/core/backoff.ts), named by prop.
    const outlives = retryOutlivesSendQueue(resolved);
    if (outlives !== undefined) {
      problems.push(
        `maxAttempts (${resolved.maxAttempts}) with retryBaseSeconds (${resolved.retryBaseSeconds}) and retryCapSeconds (${resolved.retryCapSeconds}) can keep a copy retrying ${outlives.retryingSeconds} s, longer than the send queue retention (${outlives.retentionSeconds / 86_400} days = ${outlives.retentionSeconds} s): SQS would delete it before its last attempt`,
      );
    }
  }
  const timing = [
    resolved.leaseSeconds,
    resolved.senderTimeoutSeconds,
    resolved.smtpTimeoutSeconds,
    resolved.smtpReplyTimeoutSeconds,
  ];
  if (!timing.some((value) => Token.isUnresolved(value))) {
    // The same rule the functions check at cold start (lambdas/core/sendTiming.ts), named by prop.
    for (const problem of sendTimingProblems(resolved)) problems.push(problem);
  }

  // Timing.
  if (
    !Token.isUnresolved(resolved.scheduleLeadSeconds) &&
    !Token.isUnresolved(resolved.directDelayMaxSeconds)
  ) {
    check(
      resolved.scheduleLeadSeconds <= resolved.directDelayMaxSeconds,
      `scheduleLeadSeconds (${resolved.scheduleLeadSeconds}) must not exceed directDelayMaxSeconds (${resolved.directDelayMaxSeconds}): a schedule would fire before it was created`,
    );
  }
  const sweepSeconds = resolved.sweepInterval.toSeconds({ integral: false });
  if (sweepSeconds < SWEEPER_TIMEOUT_SECONDS) {
    problems.push(
      `sweepInterval must be at least ${SWEEPER_TIMEOUT_SECONDS} s (the sweeper's timeout), got ${sweepSeconds} s`,
    );
  } else {
    check(
      Number.isInteger(resolved.sweepInterval.toMinutes({ integral: false })),
      `sweepInterval must be a whole number of minutes (an EventBridge rate), got ${resolved.sweepInterval.toHumanString()}`,
    );
  }

  // Throughput.
  for (const problem of senderScalingProblems(props)) problems.push(problem);
  whole('webhookMaxConcurrency', resolved.webhookMaxConcurrency, 2, 1000);
  whole('apiThrottle.rateLimit', resolved.apiThrottle.rateLimit, 1, 1_000_000);
  whole('apiThrottle.burstLimit', resolved.apiThrottle.burstLimit, 1, 1_000_000);
  const cacheSeconds = wholeSeconds('authorizerCacheTtl', resolved.authorizerCacheTtl);
  check(cacheSeconds <= 3600, `authorizerCacheTtl must be at most one hour, got ${cacheSeconds} s`);

  // Alarms.
  const oldestSeconds = wholeSeconds(
    'oldestMessageAgeAlarmThreshold',
    resolved.oldestMessageAgeAlarmThreshold,
  );
  check(
    oldestSeconds > 900,
    `oldestMessageAgeAlarmThreshold must exceed 900 s (copies are delayed up to 900 s by design), got ${oldestSeconds} s`,
  );
  // The iterator-age alarm counts milliseconds: any part of a second is a threshold it takes.
  check(
    resolved.relayIteratorAgeAlarmThreshold.toMilliseconds({ integral: false }) >= 1000,
    'relayIteratorAgeAlarmThreshold must be at least one second',
  );
  whole('api5xxAlarmThreshold', resolved.api5xxAlarmThreshold, 1, 1_000_000);

  // CloudFormation's DeletionPolicy of a table, a secret and a bucket: no Snapshot (only a warning at
  // synth, then a failed deploy).
  check(
    resolved.removalPolicy !== RemovalPolicy.SNAPSHOT,
    `removalPolicy must be RETAIN, RETAIN_ON_UPDATE_OR_DELETE or DESTROY (the table, the SMTP secret and the attachments' bucket take no snapshot), got ${resolved.removalPolicy}`,
  );

  if (problems.length > 0) throw new PostdatePropsError(problems);
  return resolved;
}

/**
 * Invocations one event poller runs at once in provisioned mode (AWS Lambda, "Configuring scaling
 * behavior for SQS event source mappings": up to 10 concurrent invocations per poller).
 */
export const SQS_POLLER_INVOCATIONS = 10;

/** The send queue's event source in provisioned mode (PostdateProps.senderPollers). */
export interface SenderPollers {
  /** Pollers kept running, 2–200 (billed while idle). */
  readonly minimum: number;
  /** Pollers at most, 2–2000: at most 10 × this senders at once. */
  readonly maximum: number;
}

/**
 * The problems of the sender's scaling props: `senderMaxConcurrency` (the event source's
 * `MaximumConcurrency`, 2–1000) or `senderPollers` (provisioned mode), never both — AWS accepts one
 * or the other (API ProvisionedPollerConfig; SQS ranges: minimum 2–200, maximum 2–2000).
 */
function senderScalingProblems(props: PostdateProps): string[] {
  const problems: string[] = [];
  const whole = (name: string, value: number, min: number, max: number) => {
    if (Token.isUnresolved(value)) return;
    if (!(Number.isInteger(value) && value >= min && value <= max))
      problems.push(`${name} must be a whole number from ${min} to ${max}, got ${value}`);
  };
  const pollers = props.senderPollers;
  if (pollers === undefined) {
    whole(
      'senderMaxConcurrency',
      props.senderMaxConcurrency ?? POSTDATE_DEFAULTS.senderMaxConcurrency,
      CONFIG_SETTINGS.senderMaxConcurrency.kind.min,
      1000,
    );
    return problems;
  }
  if (props.senderMaxConcurrency !== undefined) {
    problems.push(
      'senderPollers and senderMaxConcurrency are exclusive (the event source has either provisioned pollers or a MaximumConcurrency): give one',
    );
  }
  whole('senderPollers.minimum', pollers.minimum, 2, 200);
  whole('senderPollers.maximum', pollers.maximum, 2, 2000);
  if (
    !Token.isUnresolved(pollers.minimum) &&
    !Token.isUnresolved(pollers.maximum) &&
    pollers.minimum > pollers.maximum
  ) {
    problems.push(
      `senderPollers.minimum (${pollers.minimum}) must not exceed senderPollers.maximum (${pollers.maximum})`,
    );
  }
  return problems;
}

const RELAY_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * The problems of {@link PostdateProps.sesNotificationTopics}: one way to give the topics, at least
 * one in a list, and no topic twice (each would add every address twice).
 */
function sesNotificationTopicProblems(props: PostdateProps): string[] {
  const topics = props.sesNotificationTopics;
  if (topics === undefined) return [];
  const problems: string[] = [];
  if (props.sesNotificationTopic !== undefined) {
    problems.push(
      'sesNotificationTopic and sesNotificationTopics were both given: list every topic in sesNotificationTopics',
    );
  }
  if (topics.length === 0)
    problems.push('sesNotificationTopics must list at least one topic (or be left out)');
  const seen = new Set<string>();
  for (const topic of topics) {
    if (Token.isUnresolved(topic.topicArn)) continue;
    if (seen.has(topic.topicArn)) problems.push(`sesNotificationTopics lists ${topic.topicArn} twice`);
    seen.add(topic.topicArn);
  }
  return problems;
}

/**
 * The problems of {@link PostdateProps.relays} (DESIGN §15), each naming the relay and the field: the
 * same rules as POSTDATE_RELAYS (lambdas/core/relays.ts), and no `smtp*` prop beside the list.
 */
function relayProblems(props: PostdateProps): string[] {
  const relays = props.relays;
  if (relays === undefined) return [];
  const problems: string[] = [];
  if (relays.length === 0) problems.push('relays must list at least one relay (or be left out)');
  for (const name of ['smtpHost', 'smtpPort', 'smtpSecure', 'smtpRequireTls', 'smtpSecret'] as const) {
    if (props[name] !== undefined) {
      problems.push(`${name} has no effect with relays: describe that relay as an entry of relays`);
    }
  }
  const seen = new Set<string>();
  relays.forEach((relay, index) => {
    const label = Token.isUnresolved(relay.name) ? `relays[${index}]` : `relays[${index}] "${relay.name}"`;
    if (!Token.isUnresolved(relay.name)) {
      const name = relay.name.trim();
      if (!RELAY_NAME.test(name)) problems.push(`${label}: name must be 1 to 32 letters, digits, "-" or "_"`);
      if (seen.has(name)) problems.push(`${label}: name is used twice`);
      seen.add(name);
    }
    if (!Token.isUnresolved(relay.host) && settingProblem('smtpHost', relay.host.trim()) !== undefined) {
      problems.push(`${label}: host must be a host name or an IP address, got "${relay.host}"`);
    }
    const port = relay.port;
    if (
      port !== undefined &&
      !Token.isUnresolved(port) &&
      !(Number.isInteger(port) && port >= 1 && port <= 65_535)
    ) {
      problems.push(`${label}: port must be a whole number from 1 to 65535, got ${port}`);
    }
    const rate = relay.maxSendRate;
    if (rate !== undefined && !Token.isUnresolved(rate) && !(Number.isFinite(rate) && rate > 0)) {
      problems.push(`${label}: maxSendRate must be a positive number of recipients per second, got ${rate}`);
    }
  });
  return problems;
}
