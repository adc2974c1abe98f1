import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { INDEX } from '../../lambdas/store/tableLayout.js';
import { dynamodbClient, freshQueues, freshTable, sqsClient } from './awsLocal.js';

describe('the local AWS parts the tests share', () => {
  it('creates an outbox table with its stream, TTL and every index of the shared layout', async () => {
    const { tableName, streamArn } = await freshTable();
    const { Table } = await dynamodbClient().send(new DescribeTableCommand({ TableName: tableName }));
    expect(streamArn).toContain(tableName);
    expect(Table?.StreamSpecification?.StreamViewType).toBe('NEW_AND_OLD_IMAGES');
    expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual(
      Object.values(INDEX)
        .map((index) => index.indexName)
        .sort(),
    );
  });

  it('creates a send queue whose redrive to the DLQ is the backstop well above maxAttempts (3 × 3 + 10)', async () => {
    const { urls, arns } = await freshQueues(3);
    const { Attributes } = await sqsClient().send(
      new GetQueueAttributesCommand({ QueueUrl: urls.send, AttributeNames: ['RedrivePolicy'] }),
    );
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toEqual({
      deadLetterTargetArn: arns.sendDeadLetter,
      maxReceiveCount: 19,
    });
  });
});
