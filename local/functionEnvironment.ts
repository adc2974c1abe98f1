import type { Config } from '../lambdas/core/config.js';
import { CONFIG_SETTINGS, RESOURCE_SETTINGS } from '../lambdas/core/configSpec.js';
import { METRICS } from '../lambdas/core/metricNames.js';
import { relayPort } from '../lambdas/core/relays.js';
import { configEnvironment, LOCAL_ATTACHMENT_BUCKET, type LocalPorts } from './localEnv.js';
import type { StackResources } from './localResources.js';
import { LOCAL_RESOURCES } from './localResources.js';

/**
 * The environment every function of the stack is wired from, as the CDK construct sets it
 * (lib/functionEnvironment.ts): the configuration, the resources, the emulators' endpoints, dummy
 * credentials and SMTP (the sink, or the relay of `config.smtp`). It is given explicitly: to each
 * sandbox as its worker's `env`, to the in-process api and authorizer as their entries' argument;
 * nothing is written to `process.env`.
 */
export function functionEnvironment(options: {
  readonly config: Config;
  readonly host: string;
  readonly ports: LocalPorts;
  readonly resources: Pick<StackResources, 'queues'>;
  /** The functions log only warnings. */
  readonly quiet: boolean;
  /** The second relay's sink port (LocalStackOptions `backupRelay`): two relays in POSTDATE_RELAYS. */
  readonly backupSmtpPort?: number | undefined;
}): Record<string, string> {
  const { config, host, ports } = options;
  const { queues } = options.resources;
  const smtp =
    config.smtp.host === undefined
      ? { SMTP_HOST: host, SMTP_PORT: String(ports.smtp) }
      : {
          SMTP_HOST: config.smtp.host,
          ...(config.smtp.port !== undefined ? { SMTP_PORT: String(config.smtp.port) } : {}),
        };
  return {
    ...configEnvironment(config),
    POSTDATE_LOCAL: 'true',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: `http://${host}:${ports.dynamodb}`,
    AWS_ENDPOINT_URL_SQS: `http://${host}:${ports.sqs}`,
    AWS_ENDPOINT_URL_SCHEDULER: `http://${host}:${ports.scheduler}`,
    // The caller's own Powertools settings win; metrics are off unless asked for.
    POWERTOOLS_SERVICE_NAME: process.env.POWERTOOLS_SERVICE_NAME ?? METRICS.service,
    POWERTOOLS_METRICS_NAMESPACE: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS.namespace,
    POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED ?? 'true',
    // The `stack` dimension of the metrics, as the construct sets it to the stack's name.
    [RESOURCE_SETTINGS.stackName.variable]: RESOURCE_SETTINGS.stackName.local,
    ...(options.quiet ? { POWERTOOLS_LOG_LEVEL: 'WARN' } : {}),
    ...smtp,
    ...(options.backupSmtpPort === undefined
      ? {}
      : twoRelays(
          config,
          smtp.SMTP_HOST,
          Number(smtp.SMTP_PORT ?? relayPort(config.smtp)),
          host,
          options.backupSmtpPort,
        )),
    POSTDATE_TABLE_NAME: LOCAL_RESOURCES.tableName,
    POSTDATE_SEND_QUEUE_URL: queues.urls.send,
    POSTDATE_SEND_DLQ_URL: queues.urls.sendDeadLetter,
    POSTDATE_SEND_QUEUE_ARN: queues.arns.send,
    POSTDATE_SCHEDULE_GROUP: LOCAL_RESOURCES.scheduleGroup,
    POSTDATE_SCHEDULER_ROLE_ARN: LOCAL_RESOURCES.schedulerRoleArn,
    POSTDATE_SCHEDULE_DLQ_ARN: queues.arns.scheduleDeadLetter,
    POSTDATE_RELAY_FAILURE_QUEUE_URL: queues.urls.relayFailures,
    [RESOURCE_SETTINGS.attachmentBucket.variable]: LOCAL_ATTACHMENT_BUCKET,
    [RESOURCE_SETTINGS.attachmentEndpoint.variable]: `http://${host}:${ports.s3}`,
  };
}

/**
 * POSTDATE_RELAYS for two relays (DESIGN §15): `primary`, where SMTP_* points (the sink, MailDev or
 * a real relay, with its TLS rules and login), then `backup`, the second built-in sink.
 */
function twoRelays(
  config: Config,
  primaryHost: string,
  primaryPort: number,
  host: string,
  backupPort: number,
): Record<string, string> {
  const { smtp } = config;
  const login =
    smtp.user !== undefined && smtp.pass !== undefined ? { user: smtp.user, pass: smtp.pass } : {};
  const relays = [
    {
      name: 'primary',
      host: primaryHost,
      port: primaryPort,
      secure: smtp.secure,
      require_tls: smtp.requireTls,
      ...login,
    },
    { name: 'backup', host, port: backupPort, secure: false, require_tls: false },
  ];
  return { [CONFIG_SETTINGS.relaysJson.variable]: JSON.stringify(relays) };
}
