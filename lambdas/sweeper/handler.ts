import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { awsClientOptions } from '../adapters/awsClients.js';
import { SqsDispatchQueue } from '../adapters/SqsDispatchQueue.js';
import { configTargetOf, loadConfig, loadResourceNames, requireResource } from '../core/config.js';
import { DynamoDueIndex } from '../store/dueIndex.js';
import { DynamoSweepRecords } from '../store/sweepRecords.js';
import { createSweeperHandler, isIncomplete, SweepIncompleteError } from './createSweeperHandler.js';
import type { SweepReport } from './sweep.js';

const logger = new Logger({ serviceName: 'postdate-sweeper' });
const metrics = new Metrics({ namespace: 'Postdate', serviceName: 'postdate' });

let sweepOnce: (() => Promise<SweepReport>) | undefined;

function wire(): () => Promise<SweepReport> {
  const env = process.env;
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient(awsClientOptions()));
  return createSweeperHandler({
    dueIndex: new DynamoDueIndex(documents, names.tableName),
    records: new DynamoSweepRecords(documents, names.tableName),
    queue: new SqsDispatchQueue(
      new SQSClient(awsClientOptions()),
      requireResource(names, 'sendQueueUrl', 'POSTDATE_SEND_QUEUE_URL'),
    ),
    now: () => new Date(),
    graceSeconds: config.sweepGraceSeconds,
    log: logger,
    metrics: { count: (name, value) => metrics.addMetric(name, MetricUnit.Count, value) },
  });
}

/**
 * The sweeper Lambda, run by a schedule every few minutes. An incomplete pass (a shard unreadable,
 * copies refused) is thrown after doing all it could, so the invocation counts as an error.
 */
export const handler = middy<unknown, SweepReport>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .handler(async () => {
    sweepOnce ??= wire();
    const report = await sweepOnce();
    if (isIncomplete(report)) throw new SweepIncompleteError(report);
    return report;
  });
