import type { Context, SQSEvent } from 'aws-lambda';
import { startSenderEventSource } from '../local/localStack.js';
import { type ChaosChildParts, serveChaosChild } from './childProtocol.js';
import { installDynamoDbThrottling } from './throttleMiddleware.js';

/**
 * The sender alone — its SQS event source and handler — in its own process, next to a stack
 * process started with `CHAOS_SENDER=external`, so that the chaos run can SIGKILL the sender
 * mid-send without touching anything else, and start it again.
 *
 * Its environment is the stack's `functionEnvironment` (configuration, the emulators' endpoints,
 * the queue), plus the SMTP relay and `CHAOS_THROTTLE_RATE` (DynamoDB throttling, as in the stack
 * process). It prints `CHAOS-READY {"pid"}` once polling, then `CHAOS-STATS {json}` every half
 * second.
 */

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required (the stack's functionEnvironment)`);
  return value;
}

async function start(): Promise<ChaosChildParts> {
  const rate = Number(process.env.CHAOS_THROTTLE_RATE ?? '0');
  if (!Number.isFinite(rate) || rate < 0 || rate > 1)
    throw new Error('CHAOS_THROTTLE_RATE: must be in [0, 1]');
  const throttle = installDynamoDbThrottling(rate, Math.random);
  const { handler, closeSender } = await import('../lambdas/sender/handler.js');
  const runner = startSenderEventSource({
    sqsEndpoint: required('AWS_ENDPOINT_URL_SQS'),
    queueUrl: required('POSTDATE_SEND_QUEUE_URL'),
    queueArn: required('POSTDATE_SEND_QUEUE_ARN'),
    handler: (event: SQSEvent, context: Context) => handler(event, context),
    log: (message, error) =>
      process.stderr.write(
        `sender event source: ${message}${error instanceof Error ? `: ${error.name}: ${error.message}` : ''}\n`,
      ),
  });
  return {
    ready: { pid: process.pid },
    stats: () => ({ throttled: throttle.throttled, dynamodbCalls: throttle.calls }),
    stop: async () => {
      await runner.stop();
      await closeSender();
    },
  };
}

serveChaosChild(start);
