import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SNSEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaEntry } from '../adapters/lambdaEntry.js';
import { configTargetOf, loadConfig, loadResourceNames } from '../core/config.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import type { Log } from '../ports/Log.js';
import { readStateRecord } from '../store/stateReads.js';
import { DynamoSuppressionList } from '../store/suppressionList.js';
import { type BouncesReport, createBouncesHandler } from './createBouncesHandler.js';

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
export const handler = lambdaEntry({
  name: 'bounces',
  metrics: true,
  wire: (env, { logger, count }) =>
    wireBounces(env, logger, (added) => count(SENDER_METRIC.suppressionsAdded, added)),
})(process.env);
