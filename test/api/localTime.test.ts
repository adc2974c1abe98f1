/**
 * Local time and quiet hours through the API (docs/design.md §16 Local time and quiet hours; issue
 * 33): `send_at_local` with `time_zone` instead of `send_at`/`delay_seconds` on an enqueue, a batch
 * item and a reschedule; the stored `send_at` is the instant; the view carries `send_at`,
 * `send_at_local`, `time_zone` and `quiet_hours`; the idempotency fingerprint covers them; and each
 * mistake is a 400 naming its field. Covers api/routes/enqueue.ts, enqueueBatch.ts, messages.ts,
 * core/messageSchema.ts and the store's item mapping, on DynamoDB Local.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';
import { enqueueMessage } from '../../lambdas/api/routes/enqueue.js';
import { validateEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { apiHarness } from './apiHarness.js';
import { apiEvent, enqueueEvent, getEvent, validBody } from './events.js';

type Harness = Awaited<ReturnType<typeof apiHarness>>;

const patchEvent = (id: string, body: unknown): ApiEvent =>
  apiEvent({
    method: 'PATCH',
    path: `/v1/messages/${id}`,
    routeKey: 'PATCH /v1/messages/{id}',
    pathParameters: { id },
    body,
  });
const batchEvent = (body: unknown): ApiEvent =>
  apiEvent({ method: 'POST', path: '/v1/messages/batch', routeKey: 'POST /v1/messages/batch', body });

/** The fields of each error of a 400 problem. */
const fieldsOf = (json: Record<string, unknown>) =>
  ((json.errors ?? []) as { field: string }[]).map((error) => error.field);

describe('send_at_local and time_zone on POST /v1/messages', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness(); // the clock: 2026-11-29T18:00:00Z
  });

  it('stores the instant the wall time names in the zone, and shows send_at, send_at_local, time_zone and quiet_hours', async () => {
    const quiet = { start: '21:00', end: '08:00' };
    const body = validBody({
      send_at_local: '2026-12-03T09:00',
      time_zone: 'Europe/Berlin',
      quiet_hours: quiet,
    });
    const created = await api.call(enqueueEvent(body, { key: 'local-1' }));
    expect(created.status).toBe(202);
    expect(created.json).toMatchObject({
      send_at: '2026-12-03T08:00:00.000Z',
      send_at_local: '2026-12-03T09:00:00',
      time_zone: 'Europe/Berlin',
      quiet_hours: quiet,
    });
    const id = String(created.json.id);
    const read = await api.call(getEvent(id));
    expect(read.json).toMatchObject({ send_at_local: '2026-12-03T09:00:00', time_zone: 'Europe/Berlin' });

    // The state record keeps the instant, the zone and the window (the view derives the local time).
    const { Item } = await api.documents.send(
      new GetCommand({ TableName: api.tableName, Key: { pk: messagePk(id), sk: 'STATE' } }),
    );
    expect(Item).toMatchObject({
      send_at: '2026-12-03T08:00:00.000Z',
      due_at: '2026-12-03T08:00:00.000Z',
      time_zone: 'Europe/Berlin',
      quiet_hours: quiet,
    });
  });

  it('moves a time in the spring gap forward by the gap, and takes the earlier of an autumn overlap', async () => {
    const gap = await api.call(
      enqueueEvent(validBody({ send_at_local: '2027-03-28T02:30', time_zone: 'Europe/Berlin' }), {
        key: 'local-gap',
      }),
    );
    expect(gap.json).toMatchObject({
      send_at: '2027-03-28T01:30:00.000Z',
      send_at_local: '2027-03-28T03:30:00',
    });
    const overlap = await api.call(
      enqueueEvent(validBody({ send_at_local: '2027-11-07T01:30:00', time_zone: 'America/New_York' }), {
        key: 'local-overlap',
      }),
    );
    expect(overlap.json).toMatchObject({ send_at: '2027-11-07T05:30:00.000Z' });
  });

  it('shows null local time and zone for a message without them', async () => {
    const plain = await api.call(
      enqueueEvent(validBody({ send_at: '2026-12-01T09:00:00Z' }), { key: 'plain' }),
    );
    expect(plain.json).toMatchObject({ send_at_local: null, time_zone: null, quiet_hours: null });
  });

  it('replays the same local time (with or without seconds) and refuses the key with another zone or window (422)', async () => {
    const body = validBody({ send_at_local: '2026-12-05T07:00', time_zone: 'Asia/Kolkata' });
    expect((await api.call(enqueueEvent(body, { key: 'local-replay' }))).status).toBe(202);
    const again = await api.call(
      enqueueEvent({ ...body, send_at_local: '2026-12-05T07:00:00' }, { key: 'local-replay' }),
    );
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    for (const other of [
      { ...body, time_zone: 'Asia/Dhaka' },
      { ...body, send_at_local: '2026-12-05T07:01' },
      { ...body, quiet_hours: { start: '22:00', end: '06:00' } },
    ]) {
      expect((await api.call(enqueueEvent(other, { key: 'local-replay' }))).status).toBe(422);
    }
  });

  // A zone the API took as given before decision 0259 (`EUROPE/BERLIN`) is refused for a new message,
  // but a retry of that request under its key is a replay of the stored one (decision 0236: a deploy
  // between a request and its retry changes neither), not a 400 that tells the client to send it
  // again under a new key — twice (decision 0267).
  it('replays a message stored with a case-variant zone before the rule, and refuses a new one', async () => {
    const body = validBody({
      send_at: '2026-12-03T08:00:00Z',
      time_zone: 'EUROPE/BERLIN',
      quiet_hours: { start: '21:00', end: '08:00' },
    });
    const now = new Date('2026-11-29T18:00:00Z');
    const asSpelled = validateEnqueueRequest(
      { ...body, time_zone: 'Europe/Berlin' },
      { allowedFrom: ['*'], defaultFrom: 'p@example.com', maxHorizonDays: 400, now },
    );
    if (!asSpelled.ok) throw new Error('the body is valid but for the zone');
    // Written past the api, as the api wrote it before the rule: the zone as given.
    const stored = await enqueueMessage(
      { store: new DynamoApiStore(api.documents, api.tableName), sleep: async () => {} },
      {
        tenant: 'acme',
        idempotencyKey: 'zone-before-0259',
        request: { ...asSpelled.value, time_zone: 'EUROPE/BERLIN' },
        now,
        random: Math.random,
        retentionDays: 30,
      },
    );
    if (stored.kind !== 'created') throw new Error(`stored: ${stored.kind}`);
    const replayed = await api.call(enqueueEvent(body, { key: 'zone-before-0259' }));
    expect([replayed.status, replayed.json.id, replayed.json.time_zone]).toEqual([
      200,
      stored.state.id,
      'EUROPE/BERLIN',
    ]);
    const fresh = await api.call(enqueueEvent(body, { key: 'zone-after-0259' }));
    expect([fresh.status, fieldsOf(fresh.json)]).toEqual([400, ['/time_zone']]);
  });

  it.each([
    ['an unknown zone', { send_at_local: '2026-12-03T09:00', time_zone: 'Mars/Olympus_Mons' }, '/time_zone'],
    [
      'a zone in the wrong case',
      { send_at_local: '2026-12-03T09:00', time_zone: 'europe/berlin' },
      '/time_zone',
    ],
    // Each part starts with a capital, so only the tz database's own list can refuse these.
    ['a zone in upper case', { send_at_local: '2026-12-03T09:00', time_zone: 'EUROPE/BERLIN' }, '/time_zone'],
    ['a zone with one part in upper case', { time_zone: 'Europe/BERLIN' }, '/time_zone'],
    ['an Etc zone in the wrong case', { time_zone: 'Etc/Gmt+5' }, '/time_zone'],
    [
      'a local time with an offset',
      { send_at_local: '2026-12-03T09:00:00+01:00', time_zone: 'UTC' },
      '/send_at_local',
    ],
    [
      'a local time with fractional seconds',
      { send_at_local: '2026-12-03T09:00:00.5', time_zone: 'UTC' },
      '/send_at_local',
    ],
    ['a date that is not one', { send_at_local: '2026-02-30T09:00', time_zone: 'UTC' }, '/send_at_local'],
    ['a malformed local time', { send_at_local: 'tomorrow at nine', time_zone: 'UTC' }, '/send_at_local'],
    ['send_at_local without time_zone', { send_at_local: '2026-12-03T09:00' }, '/time_zone'],
    [
      'send_at_local with send_at',
      { send_at_local: '2026-12-03T09:00', time_zone: 'UTC', send_at: '2026-12-03T09:00:00Z' },
      '/send_at_local',
    ],
    [
      'send_at_local with delay_seconds',
      { send_at_local: '2026-12-03T09:00', time_zone: 'UTC', delay_seconds: 60 },
      '/send_at_local',
    ],
    ['quiet_hours without time_zone', { quiet_hours: { start: '21:00', end: '08:00' } }, '/time_zone'],
    [
      'quiet_hours from a time to itself',
      { time_zone: 'UTC', quiet_hours: { start: '08:00', end: '08:00' } },
      '/quiet_hours/end',
    ],
    [
      'quiet_hours not HH:MM',
      { time_zone: 'UTC', quiet_hours: { start: '9pm', end: '08:00' } },
      '/quiet_hours/start',
    ],
    [
      'a local time beyond the horizon',
      { send_at_local: '2028-12-03T09:00', time_zone: 'UTC' },
      '/send_at_local',
    ],
  ])('answers 400 naming the field for %s, and stores nothing', async (_what, fields, field) => {
    const before = (await api.scanAll()).length;
    const response = await api.call(
      enqueueEvent(validBody(fields), { key: `bad-${field}-${JSON.stringify(fields)}`.slice(0, 200) }),
    );
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(fieldsOf(response.json)).toContain(field);
    expect((await api.scanAll()).length).toBe(before);
  });

  it('holds a zone-only message (quiet hours for a message sent now): time_zone may come with send_at or neither', async () => {
    const response = await api.call(
      enqueueEvent(validBody({ time_zone: 'UTC', quiet_hours: { start: '21:00', end: '08:00' } }), {
        key: 'zone-only',
      }),
    );
    expect(response.status).toBe(202);
    expect(response.json).toMatchObject({
      send_at: '2026-11-29T18:00:00.000Z',
      send_at_local: '2026-11-29T18:00:00',
    });
  });
});

describe('send_at_local on a batch item', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it("schedules each recipient's own morning, and reports an item's bad zone as that item's 400", async () => {
    const item = (key: string, zone: string) => ({
      idempotency_key: key,
      ...validBody({ send_at_local: '2026-12-03T09:00', time_zone: zone }),
    });
    const response = await api.call(
      batchEvent({
        messages: [
          item('d-berlin', 'Europe/Berlin'),
          item('d-tokyo', 'Asia/Tokyo'),
          item('d-bad', 'Nowhere/Else'),
        ],
      }),
    );
    expect(response.status).toBe(200);
    const results = response.json.results as {
      status: number;
      message?: Record<string, unknown>;
      problem?: Record<string, unknown>;
    }[];
    expect(results.map((result) => result.status)).toEqual([202, 202, 400]);
    expect(results[0]?.message).toMatchObject({
      send_at: '2026-12-03T08:00:00.000Z',
      time_zone: 'Europe/Berlin',
    });
    expect(results[1]?.message).toMatchObject({
      send_at: '2026-12-03T00:00:00.000Z',
      send_at_local: '2026-12-03T09:00:00',
    });
    expect(fieldsOf(results[2]?.problem ?? {})).toEqual(['/messages/2/time_zone']);
  });
});

describe('send_at_local and time_zone on PATCH /v1/messages/{id}', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await apiHarness();
  });

  it('reschedules to a local time, and may change the zone that quiet hours are read in', async () => {
    const created = await api.call(
      enqueueEvent(
        validBody({
          send_at_local: '2026-12-03T09:00',
          time_zone: 'Europe/Berlin',
          quiet_hours: { start: '21:00', end: '08:00' },
        }),
        { key: 'move-me' },
      ),
    );
    const id = String(created.json.id);
    const moved = await api.call(
      patchEvent(id, { send_at_local: '2026-12-04T09:00', time_zone: 'America/New_York' }),
    );
    expect(moved.status).toBe(200);
    expect(moved.json).toMatchObject({
      send_at: '2026-12-04T14:00:00.000Z',
      send_at_local: '2026-12-04T09:00:00',
      time_zone: 'America/New_York',
      quiet_hours: { start: '21:00', end: '08:00' },
      rev: 2,
    });
    // send_at with a zone: the instant as given, shown in the new zone.
    const again = await api.call(
      patchEvent(id, { send_at: '2026-12-05T00:00:00Z', time_zone: 'Asia/Tokyo' }),
    );
    expect(again.json).toMatchObject({
      send_at_local: '2026-12-05T09:00:00',
      time_zone: 'Asia/Tokyo',
      rev: 3,
    });
  });

  it("answers 400 naming /send_at_local for a local time at or after the message's not_after", async () => {
    const created = await api.call(
      enqueueEvent(validBody({ send_at: '2026-12-03T09:00:00Z', not_after: '2026-12-03T10:00:00Z' }), {
        key: 'move-past-deadline',
      }),
    );
    const response = await api.call(
      patchEvent(String(created.json.id), { send_at_local: '2026-12-03T11:00', time_zone: 'Europe/Berlin' }),
    );
    expect(response.status).toBe(400);
    expect(fieldsOf(response.json)).toEqual(['/send_at_local']);
  });

  it.each([
    ['an unknown zone', { send_at_local: '2026-12-04T09:00', time_zone: 'Atlantis/Capital' }, '/time_zone'],
    ['send_at_local without time_zone', { send_at_local: '2026-12-04T09:00' }, '/time_zone'],
    [
      'both ways of giving the time',
      { send_at_local: '2026-12-04T09:00', time_zone: 'UTC', send_at: '2026-12-04T09:00:00Z' },
      '/send_at_local',
    ],
    ['no time at all', { time_zone: 'UTC' }, '/send_at'],
  ])('answers 400 naming the field for %s', async (_what, body, field) => {
    const created = await api.call(
      enqueueEvent(validBody({ send_at: '2026-12-03T09:00:00Z' }), { key: `p-${field}-${_what}` }),
    );
    const response = await api.call(patchEvent(String(created.json.id), body));
    expect(response.status).toBe(400);
    expect(fieldsOf(response.json)).toContain(field);
  });
});
