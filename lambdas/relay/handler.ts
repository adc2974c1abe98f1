import type { Logger } from '@aws-lambda-powertools/logger';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { EventBridgeScheduler } from '../adapters/EventBridgeScheduler.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaEntry } from '../adapters/lambdaEntry.js';
import { SqsDispatchQueue } from '../adapters/SqsDispatchQueue.js';
import { configTargetOf, loadConfig, loadResourceNames, requireResource } from '../core/config.js';
import type { RelayMetric } from '../core/metricNames.js';
import { createRelayHandler } from './createRelayHandler.js';

/** The relay once wired: one stream batch in, its batch item failures out. */
export type RelayBatchHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

/**
 * Wires the real clients from `env` (the entry does it once per cold start, from `process.env`); a
 * bad configuration fails here, naming the variable.
 */
export function wireRelay(
  env: Environment,
  log: Logger,
  count?: (name: RelayMetric, value?: number) => void,
): RelayBatchHandler {
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  // Endpoints come from AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_SCHEDULER when set (the local stack).
  const queue = new SqsDispatchQueue(
    new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') }),
    requireResource(names, 'sendQueueUrl', 'POSTDATE_SEND_QUEUE_URL'),
  );
  const scheduler = new EventBridgeScheduler(
    new SchedulerClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SCHEDULER') }),
    {
      groupName: requireResource(names, 'scheduleGroup', 'POSTDATE_SCHEDULE_GROUP'),
      sendQueueArn: requireResource(names, 'sendQueueArn', 'POSTDATE_SEND_QUEUE_ARN'),
      roleArn: requireResource(names, 'schedulerRoleArn', 'POSTDATE_SCHEDULER_ROLE_ARN'),
      deadLetterArn: requireResource(names, 'scheduleDeadLetterArn', 'POSTDATE_SCHEDULE_DLQ_ARN'),
    },
  );
  return createRelayHandler({
    queue,
    scheduler,
    now: () => new Date(),
    directDelayMaxSeconds: config.directDelayMaxSeconds,
    scheduleLeadSeconds: config.scheduleLeadSeconds,
    log,
    ...(count === undefined ? {} : { metrics: { count } }),
  });
}

/** The relay Lambda: DynamoDB Streams event source (filtered to state records), ReportBatchItemFailures. */
export const handler = lambdaEntry({
  name: 'relay',
  // NewerWriterRefusals (decision 0166): nothing is written while no record is refused.
  metrics: true,
  wire: (env, { logger, count }) => wireRelay(env, logger, count),
})(process.env);
