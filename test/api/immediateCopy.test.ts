import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { mailText } from '../../bench/benchStack.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { API_COPY_HORIZON_SECONDS, outboxRecords } from '../../lambdas/store/outboxRecords.js';
import { freshQueues, queueDepth, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { apiHarness } from './apiHarness.js';
import { enqueueEvent, validBody } from './events.js';

/**
 * With `POSTDATE_API_IMMEDIATE_COPY` the api puts an immediate message's copy on the send queue
 * itself, right after the state record is written (issue 21): the sender need not wait for the
 * stream and the relay. The relay's copy still follows (the stream stays the safety net), and the
 * `rev` and status rules drop the second; test/local/immediateCopy.test.ts shows the message sent
 * once end to end.
 */
describe('the api’s own copy of an immediate message', () => {
  const copiesOn = async (queueUrl: string) => {
    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    return (Messages ?? []).map((message) => JSON.parse(message.Body ?? '') as unknown);
  };

  it('is on the send queue when POST answers 202, as the relay would put it: {v, id, rev}', async () => {
    const { urls } = await freshQueues();
    const api = await apiHarness({ immediateCopies: new SqsDispatchQueue(sqsClient(), urls.send) });

    const created = await api.call(enqueueEvent(validBody(), { key: 'now-1' }));

    expect(created.status).toBe(202);
    expect(await copiesOn(urls.send)).toEqual([{ v: 1, id: created.json.id, rev: 1 }]);
    expect(api.logs.find((line) => line.message === 'request')?.attributes).toMatchObject({
      immediate_copy: 'enqueued',
    });
    // Its record says so, and the relay holds its own copy of the INSERT back (test/relay).
    expect(await api.store.getMessage('acme', String(created.json.id), api.clock.now())).toMatchObject({
      api_copy: true,
    });
    expect(created.json).not.toHaveProperty('api_copy');
  });

  it('is made, delayed until it is due, for a message due within API_COPY_HORIZON_SECONDS: the relay is no step it waits behind', async () => {
    const { urls } = await freshQueues();
    const api = await apiHarness({ immediateCopies: new SqsDispatchQueue(sqsClient(), urls.send) });

    const soon = await api.call(enqueueEvent(validBody({ delay_seconds: 3 }), { key: 'soon-1' }));

    expect(soon.status).toBe(202);
    expect(await api.store.getMessage('acme', String(soon.json.id), api.clock.now())).toMatchObject({
      api_copy: true,
    });
    const { delayed } = await queueDepth(sqsClient(), urls.send);
    expect(delayed).toBe(1);
    // SQS's delay is whole seconds, rounded down: the copy is there by the due time.
    const copies = await eventually(
      'the delayed copy to become visible',
      async () => {
        const found = await copiesOn(urls.send);
        return found.length > 0 ? found : undefined;
      },
      { withinMs: 15_000, everyMs: 250 },
    );
    expect(copies).toEqual([{ v: 1, id: soon.json.id, rev: 1 }]);
  });

  it('is not made for a message due later than that, nor for a replay', async () => {
    const { urls } = await freshQueues();
    const api = await apiHarness({ immediateCopies: new SqsDispatchQueue(sqsClient(), urls.send) });

    const later = await api.call(
      enqueueEvent(validBody({ delay_seconds: API_COPY_HORIZON_SECONDS + 5 }), { key: 'later-1' }),
    );
    expect(later.status).toBe(202);
    const first = await api.call(enqueueEvent(validBody(), { key: 'now-2' }));
    const replay = await api.call(enqueueEvent(validBody(), { key: 'now-2' }));
    expect(replay.status).toBe(200);

    expect(await copiesOn(urls.send)).toEqual([{ v: 1, id: first.json.id, rev: 1 }]);
    expect(await queueDepth(sqsClient(), urls.send)).toMatchObject({ delayed: 0 });
    // The later message's record is not marked: the relay's copy is its only one.
    expect(await api.store.getMessage('acme', String(later.json.id), api.clock.now())).not.toHaveProperty(
      'api_copy',
    );
  });

  it('does not make a replay write: one that comes once the message is due within the horizon leaves the records as they were', async () => {
    // DESIGN §3, §4: a replay answers 200 and writes nothing. A record marked `api_copy` is larger,
    // so a body near the edge goes inside the state record of a message enqueued two minutes ahead
    // and would not inside the record its replay builds 90 s later: the body that is such an edge.
    const { urls } = await freshQueues();
    const api = await apiHarness({ immediateCopies: new SqsDispatchQueue(sqsClient(), urls.send) });
    const first = api.clock.now();
    const replayAt = new Date(first.getTime() + 90_000);
    const sendAt = new Date(first.getTime() + 120_000).toISOString();
    const bodyOf = (bytes: number) => validBody({ text: mailText(bytes), send_at: sendAt });
    const inside = (bytes: number, now: Date) => {
      const parsed = parseEnqueueRequest(bodyOf(bytes), {
        allowedFrom: ['*@example.com'],
        defaultFrom: 'postdate@example.com',
        maxHorizonDays: 400,
        now,
      });
      if (!parsed.ok) throw new Error(parsed.problem.detail);
      const records = outboxRecords({
        tenant: 'acme',
        idempotencyKey: 'edge-1',
        request: parsed.value,
        now,
        groupHeadVersion: null,
        apiCopy: true,
        bodyInline: true,
      });
      return records.state.body !== undefined;
    };
    let bytes = 200;
    while (bytes < 20_000 && !(inside(bytes, first) && !inside(bytes, replayAt))) bytes += 8;
    expect(bytes).toBeLessThan(20_000);

    const created = await api.call(enqueueEvent(bodyOf(bytes), { key: 'edge-1' }));
    expect(created.status).toBe(202);
    const mine = async () =>
      (await api.scanAll()).filter((item) => item.pk === messagePk(String(created.json.id)));
    const before = await mine();
    api.clock.set(replayAt.toISOString());
    const replay = await api.call(enqueueEvent(bodyOf(bytes), { key: 'edge-1' }));

    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(await mine()).toEqual(before);
  });

  it('is not made, nor marked, by an api without a send queue', async () => {
    const api = await apiHarness();

    const created = await api.call(enqueueEvent(validBody(), { key: 'now-4' }));

    expect(created.status).toBe(202);
    expect(await api.store.getMessage('acme', String(created.json.id), api.clock.now())).not.toHaveProperty(
      'api_copy',
    );
  });

  it('that cannot be enqueued changes nothing the client sees: 202, the message stored, the relay’s copy to come', async () => {
    const { urls } = await freshQueues();
    const missing = urls.send.replace(/[^/]+$/, 'no-such-queue');
    const api = await apiHarness({ immediateCopies: new SqsDispatchQueue(sqsClient(), missing) });

    const created = await api.call(enqueueEvent(validBody(), { key: 'now-3' }));

    expect(created.status).toBe(202);
    expect(created.json).toMatchObject({ status: 'scheduled' });
    const stored = await api.store.getMessage('acme', String(created.json.id), api.clock.now());
    expect(stored).toMatchObject({ status: 'scheduled', rev: 1 });
    expect(api.logs.find((line) => line.message === 'request')?.attributes).toMatchObject({
      status: 202,
      immediate_copy: 'failed',
    });
  });
});
