import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SNSEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaMiddy } from '../adapters/lambdaMiddy.js';
import { functionMetrics } from '../adapters/powertoolsMetrics.js';
import { configTargetOf, loadConfig, loadResourceNames } from '../core/config.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import type { Log } from '../ports/Log.js';
import { readStateRecord } from '../store/stateReads.js';
import { DynamoSuppressionList } from '../store/suppressionList.js';
import { type BouncesReport, createBouncesHandler } from './createBouncesHandler.js';

const logger = new Logger({ serviceName: 'postdate-bounces' });
const metrics = functionMetrics(process.env);

let handle: ((event: SNSEvent) => Promise<BouncesReport>) | undefined;

/**
 * Wires the real clients from `env` (once per cold start, from `process.env`); a bad configuration
 * fails here, naming the variable.
 */
export function wireBounces(
  env: Environment,
  log: Log,
  countAdded: (count: number) => void,
): (event: SNSEvent) => Promise<BouncesReport> {
  const config = loadConfig(env, configTargetOf(env));
  const { tableName } = loadResourceNames(env);
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') }),
  );
  return createBouncesHandler({
    suppressions: new DynamoSuppressionList(documents, tableName),
    tenantOf: async (id) => (await readStateRecord(documents, tableName, id))?.tenant,
    messageIdDomain: config.messageIdDomain,
    now: () => new Date(),
    log,
    countAdded,
  });
}

/** The bounce function: subscribed to the SES bounce and complaint topic (lib/constructs/Bounces.ts). */
export const handler = lambdaMiddy<SNSEvent, BouncesReport>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .handler(async (event) => {
    handle ??= wireBounces(process.env, logger, (count) =>
      metrics.addMetric(SENDER_METRIC.suppressionsAdded, MetricUnit.Count, count),
    );
    return handle(event);
  });
