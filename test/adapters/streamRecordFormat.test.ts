import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { describe, expect, it } from 'vitest';
import { toLambdaRecord } from '../../lambdas/adapters/streamRecordFormat.js';
import { dynamodbClient, freshTable, streamsClient } from '../support/awsLocal.js';

describe('stream records in Lambda format', () => {
  it('keeps empty maps and lists of the item, as Lambda delivers them', async () => {
    const { tableName, streamArn } = await freshTable();
    await dynamodbClient().send(
      new PutItemCommand({
        TableName: tableName,
        Item: {
          pk: { S: 'MSG#1' },
          sk: { S: 'STATE' },
          tags: { M: {} },
          history: { L: [] },
          note: { S: '' },
        },
      }),
    );
    const streams = streamsClient();
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const shardId = StreamDescription?.Shards?.[0]?.ShardId;
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    const { Records } = await streams.send(new GetRecordsCommand({ ShardIterator }));
    const [record] = Records ?? [];
    if (!record) throw new Error('the stream holds no record');

    const lambdaRecord = toLambdaRecord(record, streamArn);

    expect(lambdaRecord.dynamodb?.NewImage).toEqual({
      pk: { S: 'MSG#1' },
      sk: { S: 'STATE' },
      tags: { M: {} },
      history: { L: [] },
      note: { S: '' },
    });
  });
});
