import { Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SENDER_QUEUE } from '../eventSourceLayout.js';
import { RESOURCE_ENV } from '../functionEnvironment.js';
import type { SenderPollers } from '../postdateProps.js';
import { acknowledge } from './acknowledge.js';
import { PostdateFunction } from './postdateFunction.js';
import type { Storage } from './Storage.js';

export { SENDER_QUEUE } from '../eventSourceLayout.js';

export interface SendingProps {
  readonly storage: Storage;
  readonly sendQueue: sqs.IQueue;
  /** Where the sender moves the copies of `dead` messages itself. */
  readonly sendDeadLetterQueue: sqs.IQueue;
  readonly smtpSecret: secretsmanager.ISecret | undefined;
  /**
   * The secrets of the relays of `relays` (DESIGN §15), in order: the sender reads each; without
   * `smtpSecret` the first is also the stack's `smtpSecret`. Empty: the one relay `SMTP_*` describes.
   */
  readonly relaySecrets: readonly secretsmanager.ISecret[];
  /** The event source's `MaximumConcurrency` in standard mode (ignored with `pollers`). */
  readonly maxConcurrency: number;
  /**
   * Provisioned mode (AWS Lambda's `ProvisionedPollerConfig`, exclusive with `MaximumConcurrency`):
   * at most 10 invocations per poller (docs/decisions/0103).
   */
  readonly pollers?: SenderPollers | undefined;
  /** POSTDATE_SENDER_TIMEOUT_SECONDS, checked against the lease and the SMTP timeouts. */
  readonly timeoutSeconds: number;
  readonly configEnvironment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The sender: consumes the send queue (partial batch failures, bounded concurrency), claims, sends
 * over SMTP with credentials from Secrets Manager, and records the outcome.
 */
export class Sending extends Construct {
  readonly sender: PostdateFunction;
  readonly smtpSecret: secretsmanager.ISecret;

  constructor(scope: Construct, id: string, props: SendingProps) {
    super(scope, id);
    this.smtpSecret = props.smtpSecret ?? props.relaySecrets[0] ?? this.createSmtpSecret(props.removalPolicy);
    const secrets = [...new Set([this.smtpSecret, ...props.relaySecrets])];

    this.sender = new PostdateFunction(this, 'Sender', {
      name: 'sender',
      description: 'Postdate sender: claims a due message and delivers it over SMTP',
      timeout: Duration.seconds(props.timeoutSeconds),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: {
        ...props.configEnvironment,
        [RESOURCE_ENV.tableName]: props.storage.table.tableName,
        [RESOURCE_ENV.sendQueueUrl]: props.sendQueue.queueUrl,
        [RESOURCE_ENV.sendQueueArn]: props.sendQueue.queueArn,
        [RESOURCE_ENV.sendDeadLetterQueueUrl]: props.sendDeadLetterQueue.queueUrl,
        [RESOURCE_ENV.smtpSecretArn]: this.smtpSecret.secretArn,
      },
    });
    this.sender.function.addEventSource(
      new sources.SqsEventSource(props.sendQueue, {
        batchSize: SENDER_QUEUE.batchSize,
        reportBatchItemFailures: true,
        ...(props.pollers === undefined
          ? { maxConcurrency: props.maxConcurrency }
          : {
              provisionedPollerConfig: {
                minimumPollers: props.pollers.minimum,
                maximumPollers: props.pollers.maximum,
              },
            }),
      }),
    );
    // The event source grants consume (receive, delete, ChangeMessageVisibility for the backoff).
    // Send: an early copy is put back with the exact remaining DelaySeconds (DESIGN §5a).
    this.sender.sendsTo(props.sendQueue);
    // Dead means dead (DESIGN §5): the sender moves a dead message's copy to the DLQ itself.
    this.sender.sendsTo(props.sendDeadLetterQueue);
    // Items of the base table only (no index, no stream, no scan), and of the kinds a send touches:
    // it reads a message, its group head, its template version, its recipients' suppressions and
    // the sending gate; it writes the message, a hard bounce's suppression and the gate. Templates
    // and webhook endpoints it never writes. (A suppression's tenant is not in the key's prefix, so
    // IAM cannot tell one tenant's entries from another's: the code writes the message's tenant.)
    props.storage.grantItems(
      this.sender.role,
      'ReadSendingItems',
      ['dynamodb:GetItem'],
      ['message', 'groupHead', 'templateVersions'],
    );
    // The gate's items (the pauses, every relay's breaker) in one Query of their key (decision 0142).
    props.storage.grantItems(this.sender.role, 'ReadSendingGate', ['dynamodb:Query'], ['sendingGate']);
    props.storage.grantItems(
      this.sender.role,
      'ReadSuppressions',
      ['dynamodb:BatchGetItem'],
      ['suppression'],
    );
    props.storage.grantItems(
      this.sender.role,
      'WriteSendingItems',
      ['dynamodb:UpdateItem'],
      ['message', 'suppression', 'sendingGate'],
    );
    props.storage.denyApiKeyWrites(this.sender.role);
    // GetSecretValue only (grantRead adds DescribeSecret, which the sender never calls), on the
    // secret of every relay (DESIGN §15).
    this.sender.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadSmtpSecret',
        actions: ['secretsmanager:GetSecretValue'],
        resources: secrets.map((secret) => secret.secretArn),
      }),
    );
    // A secret imported with its customer-managed key: grantRead adds nothing for an imported key,
    // and the sender could not decrypt the credentials. Decrypt only through Secrets Manager.
    const keys = [
      ...new Set(
        [props.smtpSecret, ...props.relaySecrets].flatMap((secret) =>
          secret?.encryptionKey === undefined ? [] : [secret.encryptionKey.keyArn],
        ),
      ),
    ];
    if (keys.length > 0) {
      this.sender.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'DecryptSmtpSecret',
          actions: ['kms:Decrypt'],
          resources: keys,
          conditions: {
            StringEquals: { 'kms:ViaService': `secretsmanager.${Stack.of(this).region}.amazonaws.com` },
          },
        }),
      );
    }
  }

  private createSmtpSecret(removalPolicy: RemovalPolicy): secretsmanager.ISecret {
    const secret = new secretsmanager.Secret(this, 'SmtpCredentials', {
      description:
        'Postdate SMTP relay credentials {"username","password"}; replace the placeholder (docs/deploy.md)',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ username: 'replace-me' }),
        generateStringKey: 'password',
        excludePunctuation: true,
      },
      removalPolicy,
    });
    acknowledge(
      secret,
      'AwsSolutions-SMG4',
      'SMTP credentials are issued by the external relay (e.g. SES SMTP credentials derived from an IAM user); rotating them needs that provider, so they are rotated by the operator (docs/runbook.md §3), not by a Secrets Manager rotation Lambda.',
    );
    return secret;
  }
}
