/**
 * The OpenAPI document describes what a webhook endpoint receives (DESIGN §11; decision 0216): one
 * `webhooks` entry per event type the code can emit, and every event the system really delivers
 * matches its entry — the Standard Webhooks headers and the body, as a receiver generated from the
 * document would check them. The events are the production path's: a message enqueued and cancelled
 * through the API, read back from DynamoDB Local's stream, turned into events by the event producer
 * and POSTed by the delivery function to a real receiver, plus the `webhook.test` event of the API.
 */
import type { _Record, AttributeValue } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENT_STATUSES, EVENT_TYPES, eventTypeOf } from '../../lambdas/core/messageEvents.js';
import { MESSAGE_STATUS } from '../../lambdas/core/messageStatus.js';
import { ITEM_SORT_KEY } from '../../lambdas/store/tableLayout.js';
import { buildOpenApiDocument } from '../../lib/openapi/openApiDocument.js';
import { streamRecords } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { webhookRequestChecker } from '../support/openApiResponses.js';
import { type Received, startReceiver, subscribe, webhookHarness } from '../webhooks/webhookHarness.js';
import { validBody } from './events.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

const document = JSON.parse(JSON.stringify(buildOpenApiDocument())) as { webhooks?: Record<string, unknown> };

/** The message state records of a table's stream, in the Lambda event source's shape. */
async function stateRecords(streamArn: string): Promise<DynamoDBRecord[]> {
  const records = await streamRecords(streamArn);
  return records
    .filter((record) => record.dynamodb?.Keys?.sk?.S === ITEM_SORT_KEY.messageState)
    .map((record) => record as unknown as DynamoDBRecord);
}

/**
 * A MODIFY of the real scheduled image to `status`: the stored record with only its status and
 * `updated_at` moved (and one attempt counted: a move into `retrying` without one is a claim given
 * back, no event, decision 0223), for the statuses that take the sender or the relay to reach.
 */
function movedTo(inserted: _Record, status: string, index: number): DynamoDBRecord {
  const image = inserted.dynamodb?.NewImage as Record<string, AttributeValue>;
  const updatedAt = new Date(Date.parse(String(image.updated_at?.S)) + 1000 * (index + 1)).toISOString();
  return {
    eventName: 'MODIFY',
    dynamodb: {
      ...(inserted.dynamodb as object),
      SequenceNumber: `9${String(index).padStart(20, '0')}`,
      OldImage: image,
      NewImage: { ...image, status: { S: status }, updated_at: { S: updatedAt }, attempts: { N: '1' } },
    },
  } as unknown as DynamoDBRecord;
}

describe("the OpenAPI document's webhooks (DESIGN §11)", () => {
  it('has one entry for every event type the code can emit, and none more', () => {
    expect(Object.keys(document.webhooks ?? {}).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('describes every event the system delivers: its headers and its body, by its type', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());

    // A real message, stored and cancelled through the API: its INSERT and its MODIFY on the stream.
    const enqueued = await harness.call({
      method: 'POST',
      path: '/v1/messages',
      headers: { 'idempotency-key': 'openapi-webhooks-1' },
      body: validBody({ send_at: new Date(harness.clock.now().getTime() + 3_600_000).toISOString() }),
    });
    expect(enqueued.status).toBe(202);
    const id = String(enqueued.json.id);
    expect((await harness.call({ method: 'DELETE', path: `/v1/messages/${id}` })).status).toBe(200);
    const stored = await eventually('the INSERT and the MODIFY on the stream', async () => {
      const records = await stateRecords(harness.streamArn);
      const has = (name: string) => records.some((record) => record.eventName === name);
      return has('INSERT') && has('MODIFY') ? records : undefined;
    });
    const inserted = stored.find((record) => record.eventName === 'INSERT') as unknown as _Record;
    const reached = new Set([MESSAGE_STATUS.scheduled, MESSAGE_STATUS.cancelled] as string[]);
    const others = EVENT_STATUSES.filter((status) => !reached.has(status)).map((status, index) =>
      movedTo(inserted, status, index),
    );

    const produce = harness.producer();
    expect((await produce({ Records: [...stored, ...others] })).batchItemFailures).toEqual([]);
    expect((await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` })).status).toBe(
      202,
    );
    await harness.pump();

    const typeOf = (request: Received) => String(JSON.parse(request.body).type);
    expect(hook.received.map(typeOf).sort()).toEqual(
      [...EVENT_STATUSES.map(eventTypeOf), 'webhook.test'].sort(),
    );
    const check = webhookRequestChecker(document);
    for (const request of hook.received) expect(check(request), typeOf(request)).toEqual([]);

    // Each entry is its own type's: a `message.sent` does not match what `message.cancelled` describes.
    const sent = hook.received.find((request) => typeOf(request) === 'message.sent') as Received;
    const swapped = webhookRequestChecker({
      ...document,
      webhooks: { ...document.webhooks, 'message.sent': document.webhooks?.['message.cancelled'] },
    });
    expect(swapped(sent).join('\n')).toMatch(/message\.sent: body/);
  }, 60_000);
});
