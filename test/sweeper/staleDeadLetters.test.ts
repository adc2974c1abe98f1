import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import type { Log } from '../../lambdas/ports/Log.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { wireSweeper } from '../../lambdas/sweeper/handler.js';
import { deadLetter, drainIds } from '../cli/cliFixtures.js';
import { wholeSecondNow } from '../relay/relayParts.js';
import {
  documentClient,
  freshQueues,
  freshTable,
  LOCAL_AWS,
  queueDepth,
  sqsClient,
} from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { senderOutcomes } from './waitingMessages.js';

/**
 * DESIGN §2: `dead` — "its copy sits in the DLQ … until redrive"; a copy whose `rev` is not the
 * record's current one is stale. §6: an alarm on DLQ depth > 0. A manual retry of a dead message
 * (`POST /v1/messages/{id}/retry`, `messages retry`) gives it rev + 1 and a new copy; its old copy
 * must not stay in the DLQ for the queue's 14-day retention, holding `DeadLetterQueueNotEmpty` in
 * alarm so that it cannot notify for the next dead message. The sweeper takes such copies off, and
 * never the current copy of a dead message (its only one; §5 "Dead means dead"), which stays there
 * and visible for `dlq show` and a redrive. The sweeper is wired as its Lambda entry wires it.
 */
async function setUp() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable('dlq-stale');
  const { urls } = await freshQueues();
  const sqs = sqsClient();
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const record = (level: string) => (message: string, fields?: unknown) =>
    void lines.push({ level, message, fields });
  const log: Log = { info: record('info'), warn: record('warn'), error: record('error') };
  const published: { name: string; value: number }[] = [];
  const env = {
    AWS_REGION: LOCAL_AWS.region,
    AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    POSTDATE_LOCAL: 'true',
    POSTDATE_TABLE_NAME: tableName,
    POSTDATE_SEND_QUEUE_URL: urls.send,
    POSTDATE_SEND_DLQ_URL: urls.sendDeadLetter,
  };
  const sweepOnce = wireSweeper(env, log as never, {
    count: (name, value) => void published.push({ name, value }),
  });
  const api = new DynamoApiStore(documentClient(), tableName);
  const retry = async (message: { tenant: string; id: string }) => {
    const result = await api.retry({
      tenant: message.tenant,
      id: message.id,
      now: new Date(),
      maxAttempts: 8,
    });
    expect(result.kind).toBe('updated');
  };
  /**
   * Every copy left is visible again well before the walk's hiding (30 s) would end: released, so
   * `dlq show` and a redrive see it. (The emulator applies a release on its next timer tick.)
   */
  const visibleSoon = (count: number) =>
    eventually(
      `${count} visible and none in flight on the DLQ`,
      async () => {
        const depth = await queueDepth(sqs, urls.sendDeadLetter);
        return depth.visible === count && depth.inFlight === 0;
      },
      { withinMs: 10_000 },
    );
  return {
    sqs,
    urls,
    sweepOnce,
    endedAs: senderOutcomes(tableName, t0),
    retry,
    visibleSoon,
    lines,
    published,
  };
}

describe('the sweeper and stale copies in the DLQ', () => {
  it("takes a retried dead message's old copy off the DLQ in one run; another dead message's copy stays there, visible", async () => {
    const t = await setUp();
    const retried = await t.endedAs('dead');
    const waiting = await t.endedAs('dead');
    await deadLetter(t.sqs, t.urls, [retried, waiting]);
    await t.retry(retried);

    await t.sweepOnce();

    await t.visibleSoon(1);
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual([{ id: waiting.id, rev: waiting.rev }]);
    expect(t.published).toContainEqual({ name: 'StaleDeadLettersRemoved', value: 1 });
    // One count line: no message id, no body.
    const line = t.lines.find((entry) => /stale/i.test(entry.message));
    expect(line?.fields).toMatchObject({ removed: 1 });
    expect(JSON.stringify(line)).not.toContain(retried.id);
  });

  it('walks past the first receive: every stale copy goes, every current one stays visible', async () => {
    const t = await setUp();
    const dead = [];
    for (let i = 0; i < 14; i++) dead.push(await t.endedAs('dead'));
    await deadLetter(t.sqs, t.urls, dead);
    const retried = dead.slice(0, 3);
    for (const message of retried) await t.retry(message);

    await t.sweepOnce();

    await t.visibleSoon(11);
    expect(await drainIds(t.sqs, t.urls.sendDeadLetter)).toEqual(
      dead
        .slice(3)
        .map((message) => ({ id: message.id, rev: message.rev }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    );
  });

  it('leaves a DLQ that holds only the current copies of waiting dead messages unreceived', async () => {
    const t = await setUp();
    const dead = [await t.endedAs('dead'), await t.endedAs('dead')];
    await deadLetter(t.sqs, t.urls, dead);

    await t.sweepOnce();

    // The run counted and compared; it received nothing, so this is each copy's first receive.
    const { Messages = [] } = await t.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: t.urls.sendDeadLetter,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
        AttributeNames: ['All'],
      }),
    );
    expect(Messages.map((message) => parseDispatchPayload(message.Body ?? '').ok)).toEqual([true, true]);
    expect(Messages.map((message) => message.Attributes?.ApproximateReceiveCount)).toEqual(['1', '1']);
  });
});
