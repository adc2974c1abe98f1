import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/dynamodbLocal.js';
import { freePort } from '../../local/freePort.js';
import { type LocalSqs, startLocalSqs } from '../../local/sqsServer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
  }
}

/**
 * One DynamoDB Local and one SQS emulator for the whole run. Every test creates its own table and
 * queues with unique names (test/support/awsLocal.ts), so files can run side by side.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let dynamodb: DynamoDbLocal | undefined;
  let sqs: LocalSqs | undefined;
  [dynamodb, sqs] = await Promise.all([
    freePort().then((port) => startDynamoDbLocal({ port })),
    freePort().then((port) => startLocalSqs({ port })),
  ]);
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('sqsEndpoint', sqs.endpoint);
  return async () => {
    await Promise.all([dynamodb?.stop(), sqs?.stop()]);
    dynamodb = undefined;
    sqs = undefined;
  };
}
