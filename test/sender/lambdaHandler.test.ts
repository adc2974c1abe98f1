import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished, vi } from 'vitest';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { documentClient, freshQueues, freshTable, LOCAL_AWS } from '../support/awsLocal.js';
import { putMessage, readState } from './records.js';

/**
 * The deployed entry point (`lambdas/sender/handler.ts`, middy + Powertools) wired from the
 * environment the way the CDK stack and the local stack set it, against the emulators.
 */
describe('the sender Lambda handler', () => {
  let smtp: TestSmtpServer;
  let tableName: string;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    ({ tableName } = await freshTable('lambda'));
    const { urls } = await freshQueues(3);
    Object.assign(process.env, {
      POSTDATE_LOCAL: 'true',
      POSTDATE_TABLE_NAME: tableName,
      POSTDATE_SEND_QUEUE_URL: urls.send,
      POSTDATE_SEND_DLQ_URL: urls.sendDeadLetter,
      AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
      AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
      AWS_REGION: LOCAL_AWS.region,
      AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
      SMTP_HOST: smtp.host,
      SMTP_PORT: String(smtp.port),
      POSTDATE_MESSAGE_ID_DOMAIN: 'lambda.test',
    });
  });
  afterAll(async () => {
    await smtp.close();
  });

  it('sends a due message and publishes EMF metrics in the Postdate namespace', async () => {
    const documents = documentClient();
    const message = await putMessage(documents, tableName, new Date());
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const { handler, closeSender } = await import('../../lambdas/sender/handler.js');
      onTestFinished(closeSender);
      const response = await handler(
        {
          Records: [
            {
              messageId: 'm-1',
              receiptHandle: 'not-a-real-handle',
              body: JSON.stringify({ v: 1, id: message.id, rev: 1 }),
              attributes: {
                ApproximateReceiveCount: '1',
                SentTimestamp: '0',
                SenderId: 'local',
                ApproximateFirstReceiveTimestamp: '0',
              },
              messageAttributes: {},
              md5OfBody: '',
              eventSource: 'aws:sqs',
              eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:send',
              awsRegion: 'us-east-1',
            },
          ],
        },
        { functionName: 'sender', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 900_000 } as Context,
      );
      expect(response).toEqual({ batchItemFailures: [] });
    } finally {
      spy.mockRestore();
    }
    expect((await readState(documents, tableName, message.id)).status).toBe('sent');
    expect(smtp.received.map((received) => received.messageId)).toEqual([`<${message.id}@lambda.test>`]);
    const emfDocuments = written
      .flatMap((chunk) => chunk.split('\n'))
      .map((line) => line.trim())
      .filter((line) => line.includes('"CloudWatchMetrics"'))
      .map((line) => JSON.parse(line));
    const document = emfDocuments.find((emf) => emf.Sent !== undefined);
    expect(document).toBeDefined();
    expect(document._aws.CloudWatchMetrics[0].Namespace).toBe('Postdate');
    expect(document.service).toBe('postdate');
    expect(document.Sent).toBe(1);
    // Per relay (DESIGN §15): the stack's series the alarms watch, and the relay's.
    expect(document.relay).toBe('default');
    expect(document._aws.CloudWatchMetrics[0].Dimensions).toEqual([
      ['service', 'stack', 'relay'],
      ['service', 'stack'],
    ]);
  });
});
