import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { SqsCopyVisibility } from '../../lambdas/adapters/SqsCopyVisibility.js';
import { freshQueues, sqsClient } from '../support/awsLocal.js';

describe('a copy visibility on SQS', () => {
  it('changes the visibility of a received copy', async () => {
    const { urls } = await freshQueues();
    const sqs = sqsClient();
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'copy' }));
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: urls.send, VisibilityTimeout: 30, WaitTimeSeconds: 1 }),
    );
    const receipt = Messages?.[0]?.ReceiptHandle;
    expect(receipt).toBeDefined();

    const change = await new SqsCopyVisibility(sqs, urls.send).change(receipt ?? '', 0);

    expect(change).toEqual({ changed: true });
  });

  it('keeps the cause of a refusal instead of a bare false, and never throws', async () => {
    const { urls } = await freshQueues();
    const visibility = new SqsCopyVisibility(sqsClient(), `${urls.send}-does-not-exist`);

    const change = await visibility.change('not-a-receipt-handle', 30);

    expect(change.changed).toBe(false);
    const error = change.changed ? undefined : change.error;
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toMatch(/QueueDoesNotExist|NonExistentQueue/);
  });
});
