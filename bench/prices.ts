/**
 * AWS list prices used by the cost benchmark: us-east-1, on-demand, no free tier, no savings plans.
 * Each price names its source. Checked on 2026-11-29 against the AWS pricing pages below (and
 * third-party summaries of them dated 2025–2026 where the page itself was not reachable); update
 * the date when you re-check.
 */
export const PRICES_CHECKED_ON = '2026-11-29';
export const PRICES_REGION = 'us-east-1';

export interface Price {
  readonly usd: number;
  /** What one `usd` buys. */
  readonly per: string;
  readonly source: string;
  readonly note?: string;
}

export const PRICES = {
  dynamodbWriteRequestUnit: {
    usd: 0.625 / 1e6,
    per: 'write request unit (on-demand, Standard table class; 1 KB, transactional ×2)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    note: 'on-demand prices after the November 2024 reduction ($0.625 per million WRU)',
  },
  dynamodbReadRequestUnit: {
    usd: 0.125 / 1e6,
    per: 'read request unit (on-demand; 4 KB strongly consistent, eventually consistent ½)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  },
  dynamodbStreamsReadRequestUnit: {
    usd: 0.02 / 1e5,
    per: 'streams read request unit (one GetRecords call)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    note: 'GetRecords calls made by AWS Lambda for a DynamoDB trigger are not charged: the relay pays nothing here',
  },
  sqsRequest: {
    usd: 0.4 / 1e6,
    per: 'SQS standard request (each 64 KB chunk of payload is one request; a batch of up to 10 is one request)',
    source: 'https://aws.amazon.com/sqs/pricing/',
  },
  lambdaArmGbSecond: {
    usd: 0.0000133334,
    per: 'Lambda GB-second, arm64 (first 6 billion GB-s tier)',
    source: 'https://aws.amazon.com/lambda/pricing/',
  },
  lambdaRequest: {
    usd: 0.2 / 1e6,
    per: 'Lambda invocation',
    source: 'https://aws.amazon.com/lambda/pricing/',
  },
  schedulerInvocation: {
    usd: 1.0 / 1e6,
    per: 'EventBridge Scheduler invocation (schedule creation and deletion are not billed)',
    source: 'https://aws.amazon.com/eventbridge/pricing/',
    note: '14 million invocations a month are free; ignored here',
  },
  eventbridgePutEvent: {
    usd: 1.0 / 1e6,
    per: 'EventBridge custom event published with PutEvents (each 64 KB chunk of an entry is one event)',
    source: 'https://aws.amazon.com/eventbridge/pricing/',
    note: 'the entry size is Time (14 bytes) + Source + DetailType + Detail + Resources, in UTF-8',
  },
  httpApiRequest: {
    usd: 1.0 / 1e6,
    per: 'API Gateway HTTP API request (first 300 million a month; metered in 512 KB increments)',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
  },
  cloudwatchLogsIngestGb: {
    usd: 0.5,
    per: 'GB of CloudWatch Logs ingested (standard class; EMF metrics arrive as log lines)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    note: 'EMF custom metrics are billed per metric per month, not per message: not in the per-message cost',
  },
  secretsManagerApiCall: {
    usd: 0.05 / 1e4,
    per: 'Secrets Manager API call',
    source: 'https://aws.amazon.com/secrets-manager/pricing/',
    note: 'read once per sender cold start: not per message',
  },
  s3PutRequest: {
    usd: 0.005 / 1e3,
    per: 'S3 Standard PUT, COPY, POST or LIST request (PutObjectTagging is billed as one)',
    source: 'https://aws.amazon.com/s3/pricing/',
  },
  s3GetRequest: {
    usd: 0.0004 / 1e3,
    per: 'S3 Standard GET, SELECT or HEAD request',
    source: 'https://aws.amazon.com/s3/pricing/',
    note: 'data transferred from S3 to Lambda in the same region is free',
  },
  s3StorageGbMonth: {
    usd: 0.023,
    per: 'GB-month of S3 Standard storage (first 50 TB)',
    source: 'https://aws.amazon.com/s3/pricing/',
  },
  sesAttachmentGb: {
    usd: 0.12,
    per: 'GB of attachments SES sends (the comparison, beside its per-message price)',
    source: 'https://aws.amazon.com/ses/pricing/',
  },
  sesOutboundMessage: {
    usd: 0.1 / 1e3,
    per: 'SES outbound email (the comparison: $100 per million)',
    source: 'https://aws.amazon.com/ses/pricing/',
  },
} as const satisfies Record<string, Price>;

/** Memory of each function, as lib/constructs (Api.ts, Dispatch.ts, Sending.ts, Webhooks.ts, Bounces.ts) deploys it. */
export const FUNCTION_MEMORY_MB = {
  api: 1024,
  authorizer: 512,
  relay: 512,
  sender: 512,
  sweeper: 512,
  events: 512,
  webhooks: 256,
  bounces: 256,
} as const;

/**
 * Lambda billed duration is not measurable locally (emulator latencies are not AWS latencies), so it
 * is modelled per invocation: a fixed handler overhead plus a typical in-region latency per AWS call
 * the invocation makes, plus the SMTP exchange for a send. These are assumptions, stated here.
 */
export const DURATION_MODEL_MS = {
  handlerOverhead: 5,
  perDynamodbCall: 8,
  perSqsOrSchedulerCall: 12,
  /** One message over a pooled, already-open connection to an SMTP relay (SES SMTP) in the region. */
  perSmtpSend: 120,
  /** One signed webhook POST to a subscriber's endpoint that answers at once (the delivery waits for it). */
  perWebhookPost: 150,
  /**
   * Each MB of attachment a function moves: the api decoding and putting an inline file, the sender
   * reading it from S3 and writing it base64 to the relay (in-region, tens of MB/s).
   */
  perAttachmentMb: 25,
} as const;

/**
 * What API Gateway fills ACCESS_LOG_FORMAT's variables with (lib/constructs/Api.ts) for one enqueue:
 * a typical value of each, so that the line's size is the deployed format's. CloudWatch Logs bills the
 * line's bytes as ingested.
 */
export const ACCESS_LOG_SAMPLE: Readonly<Record<string, string>> = {
  '$context.requestId': 'Ab1CdEfGhIjKlMn=',
  '$context.requestTime': '02/Dec/2026:14:25:35 +0000',
  '$context.identity.sourceIp': '203.0.113.147',
  '$context.httpMethod': 'POST',
  '$context.routeKey': 'POST /v1/messages',
  '$context.status': '202',
  '$context.protocol': 'HTTP/1.1',
  '$context.responseLength': '212',
  '$context.responseLatency': '48',
  '$context.integrationLatency': '41',
  '$context.integrationErrorMessage': '-',
  '$context.authorizer.error': '-',
  '$context.authorizer.tenant': 'acme-production',
};

/** Lambda writes START, END and REPORT lines for every invocation (plain text, about this many bytes). */
export const PLATFORM_LOG_BYTES_PER_INVOCATION = 330;
