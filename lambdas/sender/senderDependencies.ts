import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../adapters/awsClients.js';
import { lazyS3AttachmentStore } from '../adapters/LazyS3AttachmentStore.js';
import { NodemailerMailer, smtpTimeoutsOf } from '../adapters/NodemailerMailer.js';
import { NodemailerRelayProbe } from '../adapters/NodemailerRelayProbe.js';
import { SqsCopyVisibility } from '../adapters/SqsCopyVisibility.js';
import { SqsDispatchQueue } from '../adapters/SqsDispatchQueue.js';
import { environmentSmtpCredentials, secretsManagerSmtpCredentials } from '../adapters/smtpCredentials.js';
import { type Config, ConfigError, type ResourceNames, requireResource } from '../core/config.js';
import { relayBreakerSettings } from '../core/relayBreaker.js';
import { type RelayConfig, relayPort, relaySecretArn } from '../core/relays.js';
import type { Log } from '../ports/Log.js';
import { NO_METRICS, type SenderMetrics } from '../ports/SenderMetrics.js';
import type { SmtpCredentialsSource } from '../ports/SmtpCredentialsSource.js';
import { DynamoSenderStore } from '../store/senderTransitions.js';
import { DynamoSendingGate, SendingGateItems } from '../store/sendingGate.js';
import { DynamoTemplateStore } from '../store/templateStore.js';
import {
  type FailoverRelay,
  type SenderDependencies,
  SILENT,
  senderSettings,
} from './createSenderHandler.js';
import { GATE_READ_REUSE_MS, RelayGate } from './relayGate.js';

export interface SenderWiring {
  readonly config: Config;
  readonly names: ResourceNames;
  readonly sqs: SQSClient;
  /** A document client that drops undefined values. */
  readonly documents: DynamoDBDocumentClient;
  /** Only used in AWS with POSTDATE_SMTP_SECRET_ARN set; created when absent. */
  readonly secretsManager?: SecretsManagerClient;
  readonly log?: Log;
  readonly metrics?: SenderMetrics;
  /** The S3 client's settings for the attachments' bucket (POSTDATE_ATTACHMENT_BUCKET), when not `process.env`'s. */
  readonly s3?: S3ClientConfig;
}

/**
 * The sender's real dependencies from the validated configuration and the clients: what the Lambda
 * handler wires at cold start, and what the local stack can wire the same way.
 */
export function senderDependencies(wiring: SenderWiring): SenderDependencies {
  const { config, names } = wiring;
  const queueUrl = requireResource(names, 'sendQueueUrl', 'POSTDATE_SEND_QUEUE_URL');
  const deadLetterUrl = requireResource(names, 'sendDeadLetterQueueUrl', 'POSTDATE_SEND_DLQ_URL');
  const queue = new SqsDispatchQueue(wiring.sqs, queueUrl);
  // DESIGN §15: each relay in order, with its own mailer and breaker; the first is `mailer`. The
  // relays share one read of the gate's items (one Query) per cache period (docs/capacity.md).
  const gateItems = new SendingGateItems(wiring.documents, names.tableName);
  const [first, ...others] = config.relays.map((relay) => senderRelay(wiring, relay, queue, gateItems));
  if (first === undefined) throw new ConfigError('POSTDATE_RELAYS', 'lists no relay');
  return {
    store: new DynamoSenderStore(wiring.documents, names.tableName, {
      groupHeadReplicas: config.groupHeadReplicas,
      random: Math.random,
    }),
    templates: new DynamoTemplateStore(wiring.documents, names.tableName),
    ...(names.attachmentBucket === undefined
      ? {}
      : {
          // The S3 client loads with the first attachment (decision 0114).
          attachments: lazyS3AttachmentStore({
            bucket: names.attachmentBucket,
            endpoint: names.attachmentEndpoint,
            ...(wiring.s3 ? { config: wiring.s3 } : {}),
          }),
        }),
    mailer: first.mailer,
    relayGate: first.gate,
    relayName: first.name,
    ...(others.length > 0 ? { failover: others } : {}),
    queue,
    deadLetters: new SqsDispatchQueue(wiring.sqs, deadLetterUrl),
    visibility: new SqsCopyVisibility(wiring.sqs, queueUrl),
    settings: senderSettings(config),
    timeoutSeconds: config.senderTimeoutSeconds,
    maxSendRate: first.maxSendRate,
    now: () => new Date(),
    random: Math.random,
    ...(wiring.log ? { log: wiring.log } : {}),
    ...(wiring.metrics ? { metrics: wiring.metrics } : {}),
  };
}

/** One relay's mailer, gate and rate share (its breaker in the table: store/sendingGate.ts `breakerKeyOf`). */
function senderRelay(
  wiring: SenderWiring,
  relayConfig: RelayConfig,
  queue: SqsDispatchQueue,
  gateItems: SendingGateItems,
): FailoverRelay & { readonly gate: RelayGate } {
  const { config, names } = wiring;
  // DESIGN §5 "Rate", §15: the rate is the relay's, for the fleet (its own `max_send_rate`, else
  // POSTDATE_MAX_SEND_RATE); each sender takes an equal share.
  const rate = relayConfig.maxSendRate ?? config.maxSendRate;
  const relay = {
    host: relayConfig.host ?? 'localhost',
    port: relayPort(relayConfig),
    secure: relayConfig.secure,
    requireTls: relayConfig.requireTls,
    credentials: credentialsSource(wiring, relayConfig),
    timeouts: smtpTimeoutsOf(config),
  };
  return {
    name: relayConfig.name,
    ...(rate === undefined ? {} : { maxSendRate: rate / config.senderMaxConcurrency }),
    mailer: new NodemailerMailer({
      ...relay,
      messageIdDomain: config.messageIdDomain,
      maxMessagesPerSession: config.smtpSessionMaxMessages,
      maxSessionAgeMs: config.smtpSessionMaxAgeSeconds * 1000,
    }),
    gate: new RelayGate({
      store: new DynamoSendingGate(wiring.documents, names.tableName, relayConfig.name, gateItems),
      probe: new NodemailerRelayProbe(relay),
      queue,
      settings: relayBreakerSettings(config),
      cacheMs: GATE_READ_REUSE_MS,
      now: () => new Date(),
      random: Math.random,
      log: wiring.log ?? SILENT,
      metrics: wiring.metrics ?? NO_METRICS,
      relay: relayConfig.name,
    }),
  };
}

/**
 * In AWS the relay login is a Secrets Manager secret (core/relays.ts `relaySecretArn`); locally (or
 * without a secret) its user and pass.
 */
function credentialsSource(wiring: SenderWiring, relay: RelayConfig): SmtpCredentialsSource {
  const secretArn = relaySecretArn(relay, wiring.names.smtpSecretArn);
  if (wiring.config.target === 'aws' && secretArn !== undefined) {
    return secretsManagerSmtpCredentials({
      client: wiring.secretsManager ?? new SecretsManagerClient(awsClientOptions()),
      secretArn,
    });
  }
  return environmentSmtpCredentials(relay);
}
