import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaEntry } from '../adapters/lambdaEntry.js';
import { configTargetOf, loadConfig, loadResourceNames } from '../core/config.js';
import type { Log } from '../ports/Log.js';
import type { SenderMetrics } from '../ports/SenderMetrics.js';
import { createSenderHandler } from './createSenderHandler.js';
import { senderDependencies } from './senderDependencies.js';

/** One batch, with the invocation's context: each copy claims only with a whole attempt's time left. */
type SenderBatchHandler = (
  event: SQSEvent,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
) => Promise<SQSBatchResponse>;

/**
 * Wires the real clients from `env` (the entry does it once per cold start, from `process.env`; the
 * pooled SMTP transport itself opens on the first send); a bad configuration fails here, naming the
 * variable. The SMTP secret's client, when one is needed, reads `process.env` itself.
 */
export function wireSender(
  env: Environment,
  log?: Log,
  metrics?: SenderMetrics,
): { handle: SenderBatchHandler; close: () => Promise<void> } {
  // Endpoints come from AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS when set (the local stack).
  const deps = senderDependencies({
    config: loadConfig(env, configTargetOf(env)),
    names: loadResourceNames(env),
    sqs: new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') }),
    s3: awsClientEnvironment(env, 'S3'),
    documents: DynamoDBDocumentClient.from(
      new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') }),
      {
        marshallOptions: { removeUndefinedValues: true },
      },
    ),
    ...(log ? { log } : {}),
    ...(metrics ? { metrics } : {}),
  });
  return { handle: createSenderHandler(deps), close: () => deps.mailer.close() };
}

/** The sender Lambda: SQS event source with ReportBatchItemFailures; EMF metrics flushed per invocation. */
export const handler = lambdaEntry({
  name: 'sender',
  metrics: true,
  wire: (env, tools) => {
    const { handle, close } = wireSender(env, tools.logger, tools);
    return Object.assign(handle, { close });
  },
})(process.env);

/** Closes the pooled SMTP connections (the local stack calls it on stop; Lambda never needs to). */
export const closeSender = (): Promise<void> => handler.close();
