import type { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { awsClientOptions } from '../adapters/awsClients.js';
import { awsClientEnvironment, type Environment } from '../adapters/explicitEnvironment.js';
import { lambdaEntry } from '../adapters/lambdaEntry.js';
import { SqsDeadLetterCopies } from '../adapters/SqsDeadLetterCopies.js';
import { SqsDispatchQueue } from '../adapters/SqsDispatchQueue.js';
import { configTargetOf, loadConfig, loadResourceNames, requireResource } from '../core/config.js';
import { relayBreakerSettings } from '../core/relayBreaker.js';
import type { SweeperMetrics } from '../ports/SweeperMetrics.js';
import { DynamoDueIndex } from '../store/dueIndex.js';
import { DynamoSweepCursors } from '../store/sweepCursors.js';
import { DynamoSweepRecords } from '../store/sweepRecords.js';
import {
  createSweeperHandler,
  isIncomplete,
  SweepIncompleteError,
  type SweepRun,
  sweepRunOf,
} from './createSweeperHandler.js';
import { sweeperGateOf } from './relayToken.js';
import type { SweepReport } from './sweep.js';

/** The sweeper once wired: one pass over the due index, within the invocation's time when given its context. */
export type SweepOnce = (
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
  run?: SweepRun,
) => Promise<SweepReport>;

/**
 * Wires the real clients from `env` (the entry does it once per cold start, from `process.env`); a
 * bad configuration fails here, naming the variable. `now`: the clock (a test's may run ahead).
 */
export function wireSweeper(
  env: Environment,
  log: Logger,
  metrics: SweeperMetrics,
  now: () => Date = () => new Date(),
): SweepOnce {
  const config = loadConfig(env, configTargetOf(env));
  const names = loadResourceNames(env);
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'DYNAMODB') }),
  );
  const sqs = new SQSClient({ ...awsClientOptions(), ...awsClientEnvironment(env, 'SQS') });
  return createSweeperHandler({
    dueIndex: new DynamoDueIndex(documents, names.tableName),
    records: new DynamoSweepRecords(documents, names.tableName),
    queue: new SqsDispatchQueue(sqs, requireResource(names, 'sendQueueUrl', 'POSTDATE_SEND_QUEUE_URL')),
    now,
    graceSeconds: config.sweepGraceSeconds,
    gate: sweeperGateOf(
      documents,
      names.tableName,
      config.relays.map(({ name }) => name),
      relayBreakerSettings(config),
    ),
    // Stale copies in the DLQ (decision 0141): taken off when the DLQ's URL is given, as the stack gives it.
    ...(names.sendDeadLetterQueueUrl === undefined
      ? {}
      : { deadLetters: new SqsDeadLetterCopies(sqs, names.sendDeadLetterQueueUrl) }),
    // Where each shard's pass stopped, kept in the table so that a cold start goes on from there (0199).
    cursors: new DynamoSweepCursors(documents, names.tableName),
    log,
    metrics,
  });
}

/**
 * The sweeper Lambda, run by a schedule every few minutes. An incomplete pass (a shard unreadable,
 * copies refused) is thrown after doing all it could, so the invocation counts as an error. Invoked
 * with `{ "queueEmptiedAt": … }` after a purge of the send queue, it re-dispatches what it had stamped
 * before then (decision 0180).
 */
export const handler = lambdaEntry<unknown, SweepReport>({
  name: 'sweeper',
  metrics: true,
  wire: (env, tools) => {
    const sweepOnce = wireSweeper(env, tools.logger, tools);
    return async function sweepOrThrow(event: unknown, context?: Context): Promise<SweepReport> {
      const report = await sweepOnce(context, sweepRunOf(event, new Date()));
      if (isIncomplete(report)) throw new SweepIncompleteError(report);
      return report;
    };
  },
})(process.env);
