/**
 * The event producer (DESIGN §11) over stream records as the Lambda event source hands them over:
 * one event per status change, to the bus and to each subscribed endpoint of the event's own tenant
 * only; a replayed batch makes the same ids and no second delivery.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EventBridgeBus } from '../../lambdas/adapters/EventBridgeBus.js';
import { deriveStatusChange, type PostdateEvent } from '../../lambdas/core/messageEvents.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { wireEvents } from '../../lambdas/events/handler.js';
import type { EventBus } from '../../lambdas/ports/Webhooks.js';
import { type EventBridgeStandIn, startEventBridgeStandIn } from '../iam/recordingWorld.js';
import { emulatorEnv, LOCAL_AWS } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { startReceiver, stateImage, subscribe, webhookHarness } from './webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

let sequence = 0;
function state(tenant: string, id: string, status: MessageStatus, rev: number, updatedAt: string) {
  const attempts = status === 'sent' ? 1 : 0;
  return stateImage({ id, tenant, status, rev, attempts, updatedAt, tags: { kind: 'test' } });
}
/** A stream record in the Lambda event source's shape. */
function record(
  eventName: 'INSERT' | 'MODIFY',
  before: ReturnType<typeof state> | null,
  after: ReturnType<typeof state>,
): DynamoDBRecord {
  sequence++;
  return {
    eventName,
    dynamodb: {
      SequenceNumber: String(sequence).padStart(10, '0'),
      Keys: { pk: { S: after.pk }, sk: { S: 'STATE' } },
      ...(before ? { OldImage: marshall(before, { removeUndefinedValues: true }) as never } : {}),
      NewImage: marshall(after, { removeUndefinedValues: true }) as never,
    },
  };
}

function lifecycle(tenant: string, id: string): DynamoDBRecord[] {
  const scheduled = state(tenant, id, 'scheduled', 1, '2026-12-01T08:00:00.000Z');
  const sending = state(tenant, id, 'sending', 1, '2026-12-01T09:00:00.100Z');
  const sent = state(tenant, id, 'sent', 1, '2026-12-01T09:00:01.000Z');
  return [
    record('INSERT', null, scheduled),
    record('MODIFY', scheduled, sending),
    record('MODIFY', sending, sent),
  ];
}

describe('the event producer', () => {
  it("delivers each tenant's events to that tenant's endpoints only, and a replay adds nothing", async () => {
    const harness = await webhookHarness();
    const hookA = await startReceiver();
    const hookB = await startReceiver();
    const hookSentOnly = await startReceiver();
    receivers.push(hookA, hookB, hookSentOnly);
    const a = await subscribe(harness, hookA.url(), 'tenant-a');
    const b = await subscribe(harness, hookB.url(), 'tenant-b');
    await subscribe(harness, hookSentOnly.url(), 'tenant-b', ['message.sent']);
    const published: PostdateEvent[] = [];
    const bus: EventBus = {
      publish: async (events) => {
        published.push(...events);
        return { failed: [] };
      },
    };
    const produce = harness.producer({ bus });
    const batch = [...lifecycle('tenant-a', 'msga'), ...lifecycle('tenant-b', 'msgb')];
    expect((await produce({ Records: batch })).batchItemFailures).toEqual([]);
    await harness.pump();

    // Deliveries are not ordered (each is its own SQS message): a receiver orders by created_at.
    const typesOf = (hook: typeof hookA) =>
      hook.received.map((request) => JSON.parse(request.body).type).sort();
    expect(typesOf(hookA)).toEqual(['message.scheduled', 'message.sent']);
    expect(typesOf(hookB)).toEqual(['message.scheduled', 'message.sent']);
    expect(typesOf(hookSentOnly)).toEqual(['message.sent']);
    for (const request of hookA.received) {
      const event = new Webhook(a.secret).verify(request.body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      }) as PostdateEvent;
      expect(event.tenant).toBe('tenant-a');
      expect(event.data).toMatchObject({ id: 'msga', tags: { kind: 'test' } });
      expect(event.data).not.toHaveProperty('history');
      // B's secret does not verify A's deliveries.
      expect(() =>
        new Webhook(b.secret).verify(request.body, {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        }),
      ).toThrow();
    }
    for (const request of hookB.received) expect(JSON.parse(request.body).tenant).toBe('tenant-b');
    const sent = hookA.received
      .map((request) => JSON.parse(request.body))
      .find((event) => event.type === 'message.sent');
    expect(sent.data.previous_status).toBe('sending');
    expect(sent.id).toBe(
      deriveStatusChange({
        eventName: 'MODIFY',
        before: {
          id: 'msga',
          tenant: 'tenant-a',
          status: 'sending',
          rev: 1,
          updated_at: '2026-12-01T09:00:00.100Z',
          attempts: 0,
        },
        after: {
          id: 'msga',
          tenant: 'tenant-a',
          status: 'sent',
          rev: 1,
          updated_at: '2026-12-01T09:00:01.000Z',
          attempts: 1,
        },
      })?.eventId,
    );
    expect(published.map((event) => event.type)).toEqual([
      'message.scheduled',
      'message.sent',
      'message.scheduled',
      'message.sent',
    ]);

    // The stream hands the same batch over again: same ids on the bus, no second delivery.
    const firstIds = published.map((event) => event.id);
    await produce({ Records: structuredClone(batch) });
    await harness.pump();
    expect(published.slice(4).map((event) => event.id)).toEqual(firstIds);
    expect(hookA.received).toHaveLength(2);
    expect(hookB.received).toHaveLength(2);
  });

  it("delivers a test side's events with test: true to the test side's endpoints only, under the public tenant", async () => {
    const harness = await webhookHarness();
    const liveHook = await startReceiver();
    const testHook = await startReceiver();
    receivers.push(liveHook, testHook);
    await subscribe(harness, liveHook.url(), 'acme');
    await subscribe(harness, testHook.url(), testSideOf('acme'));
    const published: PostdateEvent[] = [];
    const produce = harness.producer({
      bus: {
        publish: async (events) => {
          published.push(...events);
          return { failed: [] };
        },
      },
    });
    const batch = [...lifecycle(testSideOf('acme'), 'msgt'), ...lifecycle('acme', 'msgl')];
    expect((await produce({ Records: batch })).batchItemFailures).toEqual([]);
    await harness.pump();

    const payloads = (hook: typeof liveHook) => hook.received.map((request) => JSON.parse(request.body));
    expect(
      payloads(testHook)
        .map((event) => [event.tenant, event.data.id, event.data.test])
        .sort(),
    ).toEqual([
      ['acme', 'msgt', true],
      ['acme', 'msgt', true],
    ]);
    expect(
      payloads(liveHook)
        .map((event) => [event.tenant, event.data.id, event.data.test])
        .sort(),
    ).toEqual([
      ['acme', 'msgl', false],
      ['acme', 'msgl', false],
    ]);
    expect(published.map((event) => event.tenant)).toEqual(['acme', 'acme', 'acme', 'acme']);
    // The bus carries the side too, as the webhooks do (DESIGN §14: `"test": true` on its events).
    expect(published.map((event) => [event.data.id, event.data.test]).sort()).toEqual([
      ['msgl', false],
      ['msgl', false],
      ['msgt', true],
      ['msgt', true],
    ]);
    expect(JSON.stringify(published)).not.toContain(testSideOf('acme'));
  });

  it('reports a record for a retry when the bus refuses its event', async () => {
    const harness = await webhookHarness();
    const produce = harness.producer({
      bus: { publish: async (events) => ({ failed: events.slice(0, 1), error: new Error('throttled') }) },
    });
    const batch = lifecycle('tenant-a', 'msgc');
    const { batchItemFailures } = await produce({ Records: batch });
    expect(batchItemFailures).toEqual([{ itemIdentifier: batch[0]?.dynamodb?.SequenceNumber }]);
  });

  it('queues the webhook copies without waiting for the bus: a slow or throttled bus does not hold the webhooks back', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    await subscribe(harness, hook.url(), 'tenant-a');
    const steps: string[] = [];
    const produce = harness.producer({
      // A bus that answers only once the batch's webhook copies are on their queue.
      bus: {
        publish: async () => {
          await eventually('the webhook copies queued while the bus is busy', () => steps.includes('queued'));
          steps.push('published');
          return { failed: [] };
        },
      },
      queue: {
        send: async (copies) => {
          const sent = await harness.queue.send(copies);
          steps.push('queued');
          return sent;
        },
      },
    });
    const { batchItemFailures } = await produce({ Records: lifecycle('tenant-a', 'msge') });
    expect(batchItemFailures).toEqual([]);
    expect(steps).toEqual(['queued', 'published']);
    await harness.pump();
    expect(hook.received.map((request) => JSON.parse(request.body).type).sort()).toEqual([
      'message.scheduled',
      'message.sent',
    ]);
  });

  it("writes a batch's counts at DEBUG: a routine line nobody acts on stays off CloudWatch Logs at INFO (issue 32)", async () => {
    const harness = await webhookHarness();
    const lines: { level: string; message: string }[] = [];
    const record = (level: string) => (message: string) => lines.push({ level, message });
    const produce = harness.producer({
      bus: { publish: async () => ({ failed: [] }) },
      log: { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') },
    });
    const { batchItemFailures } = await produce({ Records: lifecycle('tenant-a', 'msgd') });
    expect(batchItemFailures).toEqual([]);
    expect(lines).toEqual([{ level: 'debug', message: 'events batch done' }]);
  });

  it('puts events on EventBridge with source postdate and the type as detail-type', async () => {
    const inputs: unknown[] = [];
    const client = {
      send: async (command: { input: { Entries: unknown[] } }) => {
        inputs.push(command.input);
        return { Entries: command.input.Entries.map(() => ({ EventId: 'x' })) };
      },
    };
    const bus = new EventBridgeBus(client as never, 'postdate-bus');
    const event: PostdateEvent = {
      id: 'evt_1',
      type: 'message.sent',
      created_at: '2026-12-01T09:00:01.000Z',
      tenant: 't',
      data: { id: 'm' },
    };
    const many = Array.from({ length: 12 }, (_, index) => ({ ...event, id: `evt_${index}` }));
    expect(await bus.publish(many)).toEqual({ failed: [] });
    expect(inputs).toHaveLength(2);
    expect((inputs[0] as { Entries: unknown[] }).Entries[0]).toEqual({
      EventBusName: 'postdate-bus',
      Source: 'postdate',
      DetailType: 'message.sent',
      Detail: JSON.stringify({ ...event, id: 'evt_0' }),
      Time: new Date('2026-12-01T09:00:01.000Z'),
    });
  });
});

/**
 * Issue 32, decision 0178: a deployment chooses which types go on the bus (POSTDATE_BUS_EVENTS, the
 * construct's `busEvents`); webhooks get every type they subscribe to whatever it says. The producer
 * is wired from its environment as Lambda and the local stack wire it (wireEvents), its bus an
 * EventBridge stand-in that answers PutEvents as EventBridge does.
 */
describe('what the producer puts on the bus (POSTDATE_BUS_EVENTS)', () => {
  let eventBridge: EventBridgeStandIn;
  beforeAll(async () => {
    eventBridge = await startEventBridgeStandIn();
  });
  afterAll(async () => {
    await eventBridge?.close();
  });
  const silent = { info: () => {}, warn: () => {}, error: () => {} };

  it.each([
    { setting: undefined, onBus: ['message.scheduled', 'message.sent'] },
    { setting: 'all', onBus: ['message.scheduled', 'message.sent'] },
    { setting: 'none', onBus: [] },
    { setting: 'message.sent, message.dead', onBus: ['message.sent'] },
  ])('$setting: $onBus on the bus, and both events to the subscribed webhook', async ({ setting, onBus }) => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    await subscribe(harness, hook.url(), 'tenant-a');
    const bus = `bus-${sequence}`;
    const produce = wireEvents(
      {
        ...emulatorEnv(),
        AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridge.endpoint,
        POSTDATE_LOCAL: 'true',
        POSTDATE_TABLE_NAME: harness.tableName,
        POSTDATE_WEBHOOK_QUEUE_URL: harness.queueUrl,
        POSTDATE_EVENT_BUS_NAME: bus,
        ...(setting === undefined ? {} : { POSTDATE_BUS_EVENTS: setting }),
      },
      silent,
    );
    expect(
      (await produce({ Records: lifecycle('tenant-a', `msgbus${sequence}`) })).batchItemFailures,
    ).toEqual([]);
    const puts = eventBridge.received.filter((request) => request.bus === bus);
    // With none, no PutEvents at all (not one with no entries).
    expect(puts).toHaveLength(onBus.length === 0 ? 0 : 1);
    expect(puts.flatMap((request) => request.detailTypes)).toEqual(onBus);
    await harness.pump();
    expect(hook.received.map((request) => JSON.parse(request.body).type).sort()).toEqual([
      'message.scheduled',
      'message.sent',
    ]);
  });

  it('refuses to start with a type that is no message event type, naming the variable', () => {
    expect(() =>
      wireEvents(
        {
          AWS_REGION: LOCAL_AWS.region,
          POSTDATE_LOCAL: 'true',
          POSTDATE_TABLE_NAME: 't',
          POSTDATE_WEBHOOK_QUEUE_URL: 'http://127.0.0.1:1/q',
          POSTDATE_BUS_EVENTS: 'message.sent,message.snet',
        },
        silent,
      ),
    ).toThrow(/^POSTDATE_BUS_EVENTS: "message.snet" is not a message event type/);
  });
});
