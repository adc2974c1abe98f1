import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { type AttemptRecord, type MessageStateRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore, HISTORY_LIMIT } from '../../lambdas/store/senderTransitions.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { type MessageFixture, putGroupHead, putMessage, readState, TENANT } from './records.js';

/** The sender's conditional writes against DynamoDB Local: what each one requires and what it writes. */
describe('DynamoSenderStore', () => {
  const documents = documentClient();
  let tableName: string;
  let store: DynamoSenderStore;
  const now = new Date('2026-12-01T09:00:00.000Z');
  const leaseUntil = new Date('2026-12-01T09:02:00.000Z');
  const attempt = (outcome: AttemptRecord['outcome'], at = now): AttemptRecord => ({
    at: at.toISOString(),
    outcome,
    code: outcome === 'sent' ? '250' : '451',
    enhanced_code: null,
    reply: null,
    duration_ms: 12,
  });

  beforeAll(async () => {
    ({ tableName } = await freshTable('transitions'));
    store = new DynamoSenderStore(documents, tableName);
  });

  const put = (fixture: MessageFixture = {}) => putMessage(documents, tableName, now, fixture);

  it('claims a scheduled record: sending, leased, its due entry left where it was (the sweeper reads the lease); no attempt yet', async () => {
    const swept = await put();
    // A record the sweeper re-dispatched: the claim ends that stall, so its count starts again.
    await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: swept.pk, sk: swept.sk },
        UpdateExpression: 'SET sweep_due_at = due_at, sweep_count = :one',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
    const observed = await readState(documents, tableName, swept.id);
    const result = await store.claim({ observed, owner: 'me', now, leaseUntil });
    expect(result.outcome).toBe('applied');
    const state = await readState(documents, tableName, observed.id);
    expect(state).not.toHaveProperty('sweep_due_at');
    expect(state).not.toHaveProperty('sweep_count');
    expect(state).toMatchObject({
      status: 'sending',
      lease_owner: 'me',
      lease_until: leaseUntil.toISOString(),
      due_pk: observed.due_pk,
      due_at: observed.due_at,
      attempts: 0,
      lst_pk: `${TENANT}#sending#${observed.lst_pk.split('#').at(-1)}`,
    });
  });

  it('does not claim when the record moved since it was read (rev or status)', async () => {
    const observed = await put();
    expect((await store.claim({ observed, owner: 'first', now, leaseUntil })).outcome).toBe('applied');
    expect((await store.claim({ observed, owner: 'second', now, leaseUntil })).outcome).toBe('conflict');
    const stale = await put({ rev: 2 });
    expect((await store.claim({ observed: { ...stale, rev: 1 }, owner: 'x', now, leaseUntil })).outcome).toBe(
      'conflict',
    );
    expect((await readState(documents, tableName, observed.id)).lease_owner).toBe('first');
  });

  it('settles an expired lease only, as retrying: the interrupted attempt counted, no lease, due at once', async () => {
    const live = await put({
      status: 'sending',
      leaseOwner: 'old',
      leaseUntil: new Date(now.getTime() + 1000),
    });
    const settle = (observed: MessageStateRecord) =>
      store.settleUnsent({
        observed,
        to: 'retrying',
        now,
        interruptedAttempt: attempt('ambiguous'),
        lastError: { class: 'ambiguous', code: null, enhanced_code: null, message: 'lease expired' },
        retentionDays: 30,
      });
    expect((await settle(live)).outcome).toBe('conflict');

    const expired = await put({
      status: 'sending',
      attempts: 1,
      leaseOwner: 'old',
      leaseUntil: new Date(now.getTime() - 1000),
    });
    expect((await settle(expired)).outcome).toBe('applied');
    const state = await readState(documents, tableName, expired.id);
    expect(state).toMatchObject({
      status: 'retrying',
      attempts: 2,
      last_error: { class: 'ambiguous' },
      due_pk: expired.due_pk,
      due_at: now.toISOString(),
      lst_pk: `${TENANT}#retrying#${expired.lst_pk.split('#').at(-1)}`,
    });
    expect(state).not.toHaveProperty('lease_owner');
    expect(state).not.toHaveProperty('lease_until');
    expect(state).not.toHaveProperty('expires_at');
    expect(state.history.map((entry) => entry.outcome)).toEqual(['ambiguous']);
  });

  it('claims a dead record again (a DLQ redrive): back in the due index, TTL removed', async () => {
    const dead = await put({ status: 'dead', attempts: 3 });
    expect(dead.expires_at).toBeDefined();
    expect((await store.claim({ observed: dead, owner: 'me', now, leaseUntil })).outcome).toBe('applied');
    const state = await readState(documents, tableName, dead.id);
    expect(state.status).toBe('sending');
    expect(state.expires_at).toBeUndefined();
    expect(state.due_pk).toBeDefined();
  });

  it('writes an outcome only for the lease owner', async () => {
    const observed = await put();
    const claim = await store.claim({ observed, owner: 'me', now, leaseUntil });
    if (claim.outcome !== 'applied') throw new Error('claim failed');
    const common = {
      claimed: claim.record,
      to: 'sent' as const,
      now,
      attempt: attempt('sent'),
      joinsHistory: true,
      lastError: null,
      retentionDays: 30,
      attempts: 1,
      recipients: { accepted: [0], rejected: [] },
    };
    expect((await store.recordOutcome({ ...common, owner: 'someone-else' })).outcome).toBe('conflict');
    expect((await store.recordOutcome({ ...common, owner: 'me' })).outcome).toBe('applied');
    const state = await readState(documents, tableName, observed.id);
    expect(state).toMatchObject({ status: 'sent', sent_at: now.toISOString(), attempts: 1 });
    expect(state.lease_owner).toBeUndefined();
    expect(state.lease_until).toBeUndefined();
    expect(state.due_pk).toBeUndefined();
    expect(state.due_at).toBeUndefined();
    expect(state.expires_at).toBe(Math.floor(now.getTime() / 1000) + 30 * 86_400);
    expect(state.lst_pk).toContain('#sent#');
    // Once written, the same outcome cannot be written twice.
    expect((await store.recordOutcome({ ...common, owner: 'me' })).outcome).toBe('conflict');
  });

  it('keeps a retrying record in the due index, due when its backoff ends', async () => {
    const observed = await put();
    const claim = await store.claim({ observed, owner: 'me', now, leaseUntil });
    if (claim.outcome !== 'applied') throw new Error('claim failed');
    const retryAt = new Date(now.getTime() + 30_000);
    await store.recordOutcome({
      claimed: claim.record,
      owner: 'me',
      to: 'retrying',
      now,
      attempt: attempt('transient'),
      joinsHistory: true,
      lastError: { class: 'transient', code: '451', enhanced_code: null, message: 'temporary' },
      retryAt,
      retentionDays: 30,
      attempts: 1,
      recipients: { accepted: [], rejected: [] },
    });
    const state = await readState(documents, tableName, observed.id);
    expect(state).toMatchObject({
      status: 'retrying',
      due_at: retryAt.toISOString(),
      last_error: { code: '451' },
    });
    expect(state.due_pk).toBeDefined();
    expect(state.expires_at).toBeUndefined();
  });

  it('caps the history at the newest entries', async () => {
    let observed = await put();
    for (let index = 0; index < HISTORY_LIMIT + 3; index += 1) {
      const at = new Date(now.getTime() + index * 1000);
      const claim = await store.claim({ observed, owner: `o${index}`, now: at, leaseUntil });
      if (claim.outcome !== 'applied') throw new Error('claim failed');
      const outcome = await store.recordOutcome({
        claimed: claim.record,
        owner: `o${index}`,
        to: 'retrying',
        now: at,
        attempt: attempt('transient', at),
        joinsHistory: true,
        lastError: null,
        retryAt: at,
        retentionDays: 30,
        attempts: index + 1,
        recipients: { accepted: [], rejected: [] },
      });
      if (outcome.outcome !== 'applied') throw new Error('outcome failed');
      observed = outcome.record;
    }
    expect(observed.history).toHaveLength(HISTORY_LIMIT);
    expect(observed.history.at(-1)?.at).toBe(
      new Date(now.getTime() + (HISTORY_LIMIT + 2) * 1000).toISOString(),
    );
    expect(observed.attempts).toBe(HISTORY_LIMIT + 3);
  });

  it('writes an outcome that is no history entry (an outage) as its last error only: history and relay stay', async () => {
    let observed = await put();
    const outcomeThrough = async (
      relay: string,
      entry: AttemptRecord,
      joinsHistory: boolean,
      lastError: MessageStateRecord['last_error'],
    ) => {
      const claim = await store.claim({ observed, owner: relay, now, leaseUntil });
      if (claim.outcome !== 'applied') throw new Error('claim failed');
      const result = await store.recordOutcome({
        claimed: claim.record,
        owner: relay,
        to: 'retrying',
        now,
        attempt: { ...entry, relay },
        joinsHistory,
        lastError,
        retryAt: now,
        retentionDays: 30,
        attempts: 1,
        recipients: { accepted: [], rejected: [] },
      });
      if (result.outcome !== 'applied') throw new Error('outcome not written');
      observed = result.record;
    };
    const deferred = { class: 'transient', code: '451', enhanced_code: null, message: 'deferred' } as const;
    await outcomeThrough('primary', attempt('transient'), true, deferred);
    const refused = {
      class: 'transient',
      code: 'ECONNECTION',
      enhanced_code: null,
      message: 'down',
    } as const;
    for (let index = 0; index < HISTORY_LIMIT + 1; index += 1)
      await outcomeThrough('backup', { ...attempt('transient'), code: 'ECONNECTION' }, false, refused);
    const state = await readState(documents, tableName, observed.id);
    expect(state).toMatchObject({ status: 'retrying', attempts: 1, relay: 'primary', last_error: refused });
    expect(state.history).toEqual([{ ...attempt('transient'), relay: 'primary' }]);
  });

  it('settles without sending only from the state it saw (expire, supersede, hold an expired lease)', async () => {
    const scheduled = await put();
    expect(
      (await store.settleUnsent({ observed: scheduled, to: 'expired', now, retentionDays: 30 })).outcome,
    ).toBe('applied');
    expect(
      (await store.settleUnsent({ observed: scheduled, to: 'superseded', now, retentionDays: 30 })).outcome,
    ).toBe('conflict');

    const live = await put({
      status: 'sending',
      leaseOwner: 'old',
      leaseUntil: new Date(now.getTime() + 1000),
    });
    expect(
      (await store.settleUnsent({ observed: live, to: 'unknown', now, retentionDays: 30 })).outcome,
    ).toBe('conflict');
    const expired = await put({
      status: 'sending',
      leaseOwner: 'old',
      leaseUntil: new Date(now.getTime() - 1),
    });
    expect(
      (
        await store.settleUnsent({
          observed: expired,
          to: 'unknown',
          now,
          interruptedAttempt: attempt('ambiguous'),
          retentionDays: 30,
        })
      ).outcome,
    ).toBe('applied');
    const state = await readState(documents, tableName, expired.id);
    expect(state.status).toBe('unknown');
    expect(state.lease_owner).toBeUndefined();
    expect(state.history).toHaveLength(1);
  });

  describe('lifetimes (the TTL)', () => {
    const DAY = 86_400;
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const bodyOf = async (id: string) =>
      (
        await documents.send(
          new GetCommand({
            TableName: tableName,
            Key: { pk: messagePk(id), sk: 'BODY' },
            ConsistentRead: true,
          }),
        )
      ).Item ?? {};
    /** A scheduled message as an enqueue writes it: no TTL on the state record nor on the body. */
    const putLive = async (fixture: MessageFixture = {}) => {
      const observed = await put(fixture);
      expect((await bodyOf(observed.id)).expires_at).toBeUndefined();
      return observed;
    };
    const outcome = (claimed: MessageStateRecord, to: 'sent' | 'failed' | 'dead', at = now) =>
      store.recordOutcome({
        claimed,
        owner: 'me',
        to,
        now: at,
        attempt: attempt(to === 'sent' ? 'sent' : 'permanent', at),
        joinsHistory: true,
        lastError: null,
        retentionDays: 30,
        attempts: 1,
        recipients: { accepted: [], rejected: [] },
      });
    const claimed = async (observed: MessageStateRecord) => {
      const claim = await store.claim({ observed, owner: 'me', now, leaseUntil });
      if (claim.outcome !== 'applied') throw new Error('claim failed');
      return claim.record;
    };

    it.each(['failed', 'dead'] as const)(
      'gives a %s record no TTL, neither the state nor the body, while it waits for an operator',
      async (to) => {
        const observed = await putLive();
        expect((await outcome(await claimed(observed), to)).outcome).toBe('applied');
        expect((await readState(documents, tableName, observed.id)).expires_at).toBeUndefined();
        expect((await bodyOf(observed.id)).expires_at).toBeUndefined();
      },
    );

    it('gives an unknown record (an expired lease held) no TTL, neither the state nor the body', async () => {
      const expired = await putLive({
        status: 'sending',
        leaseOwner: 'old',
        leaseUntil: new Date(now.getTime() - 1),
      });
      const result = await store.settleUnsent({ observed: expired, to: 'unknown', now, retentionDays: 30 });
      expect(result.outcome).toBe('applied');
      expect((await readState(documents, tableName, expired.id)).expires_at).toBeUndefined();
      expect((await bodyOf(expired.id)).expires_at).toBeUndefined();
    });

    it('starts the TTL again when a waiting record leaves: a redriven dead message that is sent expires, body too', async () => {
      const observed = await putLive();
      const dead = await outcome(await claimed(observed), 'dead');
      if (dead.outcome !== 'applied') throw new Error('dead failed');
      const later = new Date(now.getTime() + 100 * DAY * 1000);
      const redriven = await store.claim({
        observed: dead.record,
        owner: 'me',
        now: later,
        leaseUntil: later,
        attemptLimit: 6,
      });
      if (redriven.outcome !== 'applied') throw new Error('redrive claim failed');
      expect((await outcome(redriven.record, 'sent', later)).outcome).toBe('applied');
      const laterSeconds = Math.floor(later.getTime() / 1000);
      expect((await readState(documents, tableName, observed.id)).expires_at).toBe(laterSeconds + 30 * DAY);
      expect((await bodyOf(observed.id)).expires_at).toBe(laterSeconds + 30 * DAY);
    });

    it('starts the retention of sent and expired records, and of their bodies with them', async () => {
      const sent = await putLive();
      expect((await outcome(await claimed(sent), 'sent')).outcome).toBe('applied');
      expect((await readState(documents, tableName, sent.id)).expires_at).toBe(nowSeconds + 30 * DAY);
      expect((await bodyOf(sent.id)).expires_at).toBe(nowSeconds + 30 * DAY);
      const expired = await putLive();
      await store.settleUnsent({ observed: expired, to: 'expired', now, retentionDays: 30 });
      expect((await readState(documents, tableName, expired.id)).expires_at).toBe(nowSeconds + 30 * DAY);
      expect((await bodyOf(expired.id)).expires_at).toBe(nowSeconds + 30 * DAY);
    });

    it("lets a superseded message's body go with its state record (privacy), not weeks later", async () => {
      const observed = await putLive();
      await store.settleUnsent({ observed, to: 'superseded', now, retentionDays: 30 });
      expect((await readState(documents, tableName, observed.id)).expires_at).toBe(nowSeconds + 30 * DAY);
      expect((await bodyOf(observed.id)).expires_at).toBe(nowSeconds + 30 * DAY);
    });
  });

  it("names in the view the relay and the relay's id of one attempt: the last one the relay accepted, else the last one (DESIGN §15)", async () => {
    const message = await put({ to: ['a@example.com', 'b@example.com'] });
    let observed = message;
    /** One attempt through `relay`, written as the sender writes its outcome. */
    async function attemptThrough(
      relay: string,
      outcome: 'sent' | 'transient',
      accepted: number[],
      providerMessageId?: string,
    ): Promise<MessageStateRecord> {
      const claim = await store.claim({ observed, owner: relay, now, leaseUntil });
      if (claim.outcome !== 'applied') throw new Error('claim failed');
      const entry: AttemptRecord = {
        ...attempt(outcome),
        relay,
        ...(providerMessageId === undefined ? {} : { provider_message_id: providerMessageId }),
      };
      const result = await store.recordOutcome({
        claimed: claim.record,
        owner: relay,
        to: accepted.length === 2 ? 'sent' : 'retrying',
        now,
        attempt: entry,
        joinsHistory: true,
        lastError: null,
        retentionDays: 30,
        attempts: claim.record.attempts + 1,
        recipients: { accepted, rejected: [] },
      });
      if (result.outcome !== 'applied') throw new Error('outcome not written');
      observed = result.record;
      return readState(documents, tableName, message.id);
    }
    const pair = (state: MessageStateRecord) => [state.relay, state.provider_message_id];
    const fromOneAttempt = (state: MessageStateRecord) =>
      state.history.some(
        (entry) => entry.relay === state.relay && entry.provider_message_id === state.provider_message_id,
      );

    // Nothing accepted yet: the last attempt's relay, and no id.
    const deferred = await attemptThrough('primary', 'transient', []);
    expect(pair(deferred)).toEqual(['primary', undefined]);
    // The primary accepts recipient a (its id P); b is deferred.
    const partly = await attemptThrough('primary', 'sent', [0], 'P-1');
    expect(pair(partly)).toEqual(['primary', 'P-1']);
    // b's retry fails on the backup: the view keeps the pair of the attempt that was accepted.
    const failedOver = await attemptThrough('backup', 'transient', [0]);
    expect(pair(failedOver)).toEqual(['primary', 'P-1']);
    expect(fromOneAttempt(failedOver)).toBe(true);
    // The backup accepts b with a 250 that names no id: its pair, never the primary's id.
    const sent = await attemptThrough('backup', 'sent', [0, 1]);
    expect(pair(sent)).toEqual(['backup', undefined]);
    expect(fromOneAttempt(sent)).toBe(true);
  });

  it('reads a group head version, and nothing for a group without a head', async () => {
    await putGroupHead(documents, tableName, 'campaign:9', 5);
    expect(await store.readGroupVersion(TENANT, 'campaign:9')).toBe(5);
    expect(await store.readGroupVersion(TENANT, 'no-such-group')).toBeUndefined();
  });
});
