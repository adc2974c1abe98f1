import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaMiddy } from '../adapters/lambdaMiddy.js';
import { functionMetrics } from '../adapters/powertoolsMetrics.js';
import { configTargetOf, loadConfig, loadResourceNames } from '../core/config.js';
import type { SenderMetrics } from '../ports/SenderMetrics.js';
import { createSenderHandler } from './createSenderHandler.js';
import { senderDependencies } from './senderDependencies.js';

const logger = new Logger({ serviceName: 'postdate-sender' });
const metrics = functionMetrics(process.env);

const senderMetrics: SenderMetrics = {
  count: (name, value = 1) => metrics.addMetric(name, MetricUnit.Count, value),
  milliseconds: (name, value) => metrics.addMetric(name, MetricUnit.Milliseconds, value),
};

type SenderBatchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;
let sender: { readonly handle: SenderBatchHandler; readonly close: () => Promise<void> } | undefined;

/**
 * Wires the real clients from `env` (the entry does it once per cold start, from `process.env`; the
 * pooled SMTP transport itself opens on the first send); a bad configuration fails here, naming the
 * variable. The SMTP secret's client, when one is needed, reads `process.env` itself.
 */
export function wireSender(env: Environment): { handle: SenderBatchHandler; close: () => Promise<void> } {
  // Endpoints come from AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS when set (the local stack).
  const deps = senderDependencies({
    config: loadConfig(env, configTargetOf(env)),
    names: loadResourceNames(env),
    sqs: new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') }),
    documents: DynamoDBDocumentClient.from(
      new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') }),
      {
        marshallOptions: { removeUndefinedValues: true },
      },
    ),
    log: logger,
    metrics: senderMetrics,
  });
  return { handle: createSenderHandler(deps), close: () => deps.mailer.close() };
}

/** Closes the pooled SMTP connections (the local stack calls it on stop; Lambda never needs to). */
export async function closeSender(): Promise<void> {
  const wired = sender;
  sender = undefined;
  await wired?.close();
}

/** The sender Lambda: SQS event source with ReportBatchItemFailures; EMF metrics flushed per invocation. */
export const handler = lambdaMiddy<SQSEvent, SQSBatchResponse>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .handler(async (event) => {
    sender ??= wireSender(process.env);
    return sender.handle(event);
  });
