import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateQueueCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { vi } from 'vitest';
import { FUNCTION_VARIABLE, RECORD_VARIABLE } from '../../lambdas/adapters/awsClients.js';
import type { PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';
import { toLambdaSqsRecord } from '../../local/runners/sqsRecordFormat.js';
import { sqsClient, uniqueName } from '../support/awsLocal.js';

/**
 * What the suites that drive every function with its AWS requests recorded share: the IAM
 * simulation (permissions.test.ts), the per-key load check (partitionLoad.test.ts) and the cost
 * model's bill (test/bench/billedRequests.test.ts). Each wires the functions as in Lambda; the
 * recording itself is lambdas/adapters/awsClients.ts's, read back with iamRequests.ts.
 */

/**
 * Builds functions' clients with their requests recorded into `file` under the function's name,
 * which the clients read when they are built.
 */
export function recordedAs(file: string) {
  return <T>(name: PostdateFunctionName, wire: () => T): T => {
    vi.stubEnv(RECORD_VARIABLE, file);
    vi.stubEnv(FUNCTION_VARIABLE, name);
    try {
      return wire();
    } finally {
      vi.unstubAllEnvs();
    }
  };
}

export interface EventBridgeStandIn {
  /** `AWS_ENDPOINT_URL_EVENTBRIDGE` of the functions. */
  readonly endpoint: string;
  /** Each PutEvents it answered: its entries' bus and detail-type. */
  readonly received: readonly { readonly bus: string; readonly detailTypes: readonly string[] }[];
  close(): Promise<void>;
}

/**
 * No EventBridge emulator exists: this answers PutEvents as EventBridge does, so the event producer
 * makes (and records) the request it makes in AWS.
 */
export async function startEventBridgeStandIn(): Promise<EventBridgeStandIn> {
  const received: { bus: string; detailTypes: string[] }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entries = (
        JSON.parse(Buffer.concat(chunks).toString()) as {
          Entries: { EventBusName?: string; DetailType?: string }[];
        }
      ).Entries;
      received.push({
        bus: entries[0]?.EventBusName ?? 'default',
        detailTypes: entries.map((entry) => entry.DetailType ?? ''),
      });
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      res.end(
        JSON.stringify({ FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `e${i}` })) }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const queueName = (url: string) => url.split('/').pop() ?? url;

/** A fresh webhook queue beside the send queue, with its ARN in the emulator's account and region. */
export async function webhookQueueBeside(send: {
  readonly url: string;
  readonly arn: string;
}): Promise<{ url: string; arn: string }> {
  const { QueueUrl = '' } = await sqsClient().send(new CreateQueueCommand({ QueueName: uniqueName('whq') }));
  return { url: QueueUrl, arn: send.arn.replace(queueName(send.url), queueName(QueueUrl)) };
}

/** Up to ten messages of a queue, waiting a second for the first, as Lambda's poller receives them. */
export async function receiveAll(queueUrl: string): Promise<Message[]> {
  const { Messages } = await sqsClient().send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return Messages ?? [];
}

export const sqsEvent = (messages: readonly Message[], queueArn: string): SQSEvent => ({
  Records: messages.map((message) => toLambdaSqsRecord(message, queueArn)),
});
