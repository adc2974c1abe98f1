import { DescribeTableCommand, DynamoDBClient, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { ConflictException, CreateScheduleGroupCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConfigError } from '../lambdas/core/config.js';
import { CONFIG_SETTINGS } from '../lambdas/core/configSpec.js';
import { ApiKeyError, createApiKey, lookupApiKey } from '../lambdas/keys/apiKeys.js';
import { SCHEDULE_GROUP } from '../lib/queueLayout.js';
import { createOutboxTable, createQueues, type QueueArns, type QueueUrls } from './createResources.js';

/** Names of the local resources; fixed so that a data dir finds its table again after a restart. */
export const LOCAL_RESOURCES = {
  tableName: 'postdate-outbox',
  queuePrefix: 'postdate',
  scheduleGroup: SCHEDULE_GROUP.logicalName,
  schedulerRoleArn: 'arn:aws:iam::000000000000:role/postdate-local-scheduler',
  tenant: 'local',
} as const;

/** The stack's own clients of the emulators (resource creation, readiness probes). */
export interface LocalClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly scheduler: SchedulerClient;
  destroy(): void;
}

export function localClients(endpoints: {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly scheduler: string;
}): LocalClients {
  const common = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const dynamodb = new DynamoDBClient({ ...common, endpoint: endpoints.dynamodb, maxAttempts: 2 });
  const sqs = new SQSClient({ ...common, endpoint: endpoints.sqs, maxAttempts: 2 });
  const scheduler = new SchedulerClient({ ...common, endpoint: endpoints.scheduler, maxAttempts: 2 });
  return {
    dynamodb,
    sqs,
    scheduler,
    destroy() {
      dynamodb.destroy();
      sqs.destroy();
      scheduler.destroy();
    },
  };
}

/** The table (found again in a data dir: `existed`), the queues and the schedule group of the stack. */
export interface StackResources {
  readonly table: { readonly streamArn: string; readonly existed: boolean };
  readonly queues: { readonly urls: QueueUrls; readonly arns: QueueArns };
}

/**
 * The queues and the schedule group of the stack, from the same definitions the CDK stack uses
 * (lib/queueLayout.ts through createResources.ts). They need only the SQS and Scheduler emulators,
 * which start in an instant: made first, they complete the functions' environment while DynamoDB
 * Local's JVM is still starting, so the functions load meanwhile.
 */
export async function createQueueResources(
  clients: LocalClients,
  options: { readonly maxAttempts: number; readonly senderTimeoutSeconds: number },
): Promise<StackResources['queues']> {
  const queues = await createQueues(clients.sqs, {
    prefix: LOCAL_RESOURCES.queuePrefix,
    maxAttempts: options.maxAttempts,
    senderTimeoutSeconds: options.senderTimeoutSeconds,
  });
  await ensureScheduleGroup(clients.scheduler, LOCAL_RESOURCES.scheduleGroup);
  return queues;
}

/**
 * Creates the outbox table (lambdas/store/tableLayout.ts through createResources.ts), or finds it
 * again in a data dir after a restart.
 */
export async function ensureTable(
  dynamodb: DynamoDBClient,
  tableName: string,
): Promise<{ streamArn: string; existed: boolean }> {
  try {
    return { streamArn: await createOutboxTable(dynamodb, tableName), existed: false };
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    const streamArn = Table?.LatestStreamArn;
    if (!streamArn)
      throw new Error(`table ${tableName} exists without a stream: delete the data dir to reset`);
    return { streamArn, existed: true };
  }
}

async function ensureScheduleGroup(scheduler: SchedulerClient, name: string): Promise<void> {
  try {
    await scheduler.send(new CreateScheduleGroupCommand({ Name: name }));
  } catch (error) {
    if (!(error instanceof ConflictException)) throw error;
  }
}

/**
 * Seeds the API key of tenant `local`: POSTDATE_API_KEY when set (createApiKey is a no-op for a key
 * that already exists after a restart on a kept database), otherwise a new one. A key the kept data
 * holds revoked, or for another tenant, stops the start with a ConfigError naming the variable.
 */
export async function seedApiKey(
  dynamodb: DynamoDBClient,
  fixed: string | undefined,
  dataDir: string | undefined,
): Promise<string> {
  const documents = DynamoDBDocumentClient.from(dynamodb);
  try {
    const created = await createApiKey(documents, LOCAL_RESOURCES.tableName, {
      tenant: LOCAL_RESOURCES.tenant,
      secret: fixed,
      now: new Date(),
    });
    return created.secret;
  } catch (error) {
    if (fixed === undefined || !(error instanceof ApiKeyError) || error.reason !== 'secret-in-use')
      throw error;
    const held = await lookupApiKey(documents, LOCAL_RESOURCES.tableName, fixed);
    const holds =
      held !== null && held.revokedAt === null ? `as a key of another tenant ("${held.tenant}")` : 'revoked';
    throw new ConfigError(
      CONFIG_SETTINGS.apiKey.variable,
      `${dataDir ? `the data kept in ${dataDir}` : 'the database'} holds this key ${holds}: set another key, or unset POSTDATE_API_KEY to have one generated`,
    );
  }
}
