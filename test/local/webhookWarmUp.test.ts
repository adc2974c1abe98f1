/**
 * The warm-up of the in-process event producer and webhook delivery function (DESIGN §7, decision
 * 0119) when it cannot run: the stack still comes up. Here the functions are wired to a table that
 * does not exist, so both warm-up batches fail; `warmed` must still resolve (the stack says ready
 * after it), each failure is logged, and the functions stay counted as cold.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { createWebhookQueue, startWebhookEventSources } from '../../local/webhookEventSources.js';
import { documentClient, freshTable, sqsClient, uniqueName } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

describe('the webhook functions warm-up, when it fails', () => {
  let sources: ReturnType<typeof startWebhookEventSources> | undefined;
  afterAll(async () => {
    for (const part of sources?.started ?? []) await part.stop();
  });

  it('logs each failure and lets the stack say ready, with both functions still cold', async () => {
    const dynamodbEndpoint = inject('dynamodbEndpoint');
    const sqsEndpoint = inject('sqsEndpoint');
    const { tableName, streamArn } = await freshTable('warm');
    const queue = await createWebhookQueue(sqsClient(), uniqueName('warm'));
    const logged: string[] = [];
    sources = startWebhookEventSources({
      dynamodbEndpoint,
      sqsEndpoint,
      streamArn,
      queue,
      eventFailureQueueUrl: queue.eventFailureUrl,
      environment: {
        POSTDATE_LOCAL: 'true',
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint,
        AWS_ENDPOINT_URL_SQS: sqsEndpoint,
        POSTDATE_TABLE_NAME: uniqueName('no-such-table'),
        POSTDATE_WEBHOOK_QUEUE_URL: queue.url,
      },
      reusedTable: false,
      log: (message) => logged.push(message),
    });

    await expect(sources.warmed).resolves.toBeUndefined();
    expect(logged.some((line) => line.startsWith('events warm-up'))).toBe(true);
    expect(logged.some((line) => line.startsWith('webhooks warm-up'))).toBe(true);
    // The stack runs on, the producer cold: a state record on the watched stream is its first batch.
    expect(sources.coldInvocations()).toEqual({ events: 0, webhooks: 0 });
    await documentClient().send(
      new PutCommand({
        TableName: tableName,
        Item: { pk: messagePk('msg_warm-up-failed'), sk: ITEM_SORT_KEY.messageState, status: 'scheduled' },
      }),
    );
    const running = sources;
    await eventually(
      () => `the producer's first real batch counted cold (${JSON.stringify(running.coldInvocations())})`,
      () => running.coldInvocations().events === 1,
      { withinMs: 30_000, everyMs: 50 },
    );
  }, 60_000);
});
