import type { ResolvedPostdateProps } from './postdateProps.js';

/** Metric namespace and service dimension of the sender's EMF metrics (Powertools). */
export const METRICS = { namespace: 'Postdate', service: 'postdate' } as const;

/**
 * The configuration every function reads with `loadConfig(process.env, 'aws')` (DESIGN §8): the
 * same variable names the local stack reads, built from the construct's props. SMTP credentials
 * are not here: the sender reads them from the secret named by `POSTDATE_SMTP_SECRET_ARN`.
 */
export function configEnvironment(props: ResolvedPostdateProps, smtpHost: string): Record<string, string> {
  const environment: Record<string, string> = {
    SMTP_HOST: smtpHost,
    SMTP_PORT: String(props.smtpPort),
    SMTP_SECURE: String(props.smtpSecure),
    SMTP_REQUIRE_TLS: String(props.smtpRequireTls),
    POSTDATE_DEFAULT_FROM: props.defaultFrom,
    POSTDATE_ALLOWED_FROM: props.allowedFrom.join(','),
    POSTDATE_MESSAGE_ID_DOMAIN: props.messageIdDomain,
    POSTDATE_MAX_ATTEMPTS: String(props.maxAttempts),
    POSTDATE_RETRY_BASE_SECONDS: String(props.retryBaseSeconds),
    POSTDATE_RETRY_CAP_SECONDS: String(props.retryCapSeconds),
    POSTDATE_LEASE_SECONDS: String(props.leaseSeconds),
    POSTDATE_SENDER_TIMEOUT_SECONDS: String(props.senderTimeoutSeconds),
    POSTDATE_SMTP_TIMEOUT_SECONDS: String(props.smtpTimeoutSeconds),
    POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS: String(props.smtpReplyTimeoutSeconds),
    POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(props.directDelayMaxSeconds),
    POSTDATE_SCHEDULE_LEAD_SECONDS: String(props.scheduleLeadSeconds),
    POSTDATE_SWEEP_GRACE_SECONDS: String(props.sweepGraceSeconds),
    POSTDATE_MAX_HORIZON_DAYS: String(props.maxHorizonDays),
    POSTDATE_RETENTION_DAYS: String(props.retentionDays),
    POWERTOOLS_SERVICE_NAME: METRICS.service,
    POWERTOOLS_METRICS_NAMESPACE: METRICS.namespace,
  };
  if (props.maxSendRate !== undefined) environment.POSTDATE_MAX_SEND_RATE = String(props.maxSendRate);
  return environment;
}

/** Resource variables (helpers' rules): each function gets only the ones it uses. */
export const RESOURCE_ENV = {
  tableName: 'POSTDATE_TABLE_NAME',
  sendQueueUrl: 'POSTDATE_SEND_QUEUE_URL',
  sendQueueArn: 'POSTDATE_SEND_QUEUE_ARN',
  sendDeadLetterQueueUrl: 'POSTDATE_SEND_DLQ_URL',
  scheduleGroup: 'POSTDATE_SCHEDULE_GROUP',
  schedulerRoleArn: 'POSTDATE_SCHEDULER_ROLE_ARN',
  scheduleDeadLetterArn: 'POSTDATE_SCHEDULE_DLQ_ARN',
  relayFailureQueueUrl: 'POSTDATE_RELAY_FAILURE_QUEUE_URL',
  smtpSecretArn: 'POSTDATE_SMTP_SECRET_ARN',
} as const;
