import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodemailerRelayProbe } from '../../lambdas/adapters/NodemailerRelayProbe.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import { validateEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import type { MessageStatus } from '../../lambdas/core/messageStatus.js';
import { pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { SIMULATOR_DOMAIN, testSideOf } from '../../lambdas/core/testSide.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { expiresAtAfter, type MessageStateRecord, messagePk } from '../../lambdas/store/messageRecord.js';
import { outboxRecords } from '../../lambdas/store/outboxRecords.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { validBody } from '../api/events.js';
import {
  BREAKER_SETTINGS,
  type BreakerRig,
  type BreakerWorld,
  createBreakerRig,
  startBreakerWorld,
} from '../sender/breakerHarness.js';
import { FAST_SMTP_TIMEOUTS, type SenderHandler } from '../sender/senderHarness.js';
import { expireAsTtlWould } from './ttlSweep.js';

/**
 * DESIGN §2: "No TTL deletes a message that is not terminal, or its body or attachments, however long
 * it waits … Only a terminal status starts the retention clock." The real enqueue records, the real
 * sender (its clock moved by the test), DynamoDB Local with its TTL played by `expireAsTtlWould`, and
 * a real smtp-server: what the relay received decides "sent exactly once".
 */

const DAY_MS = 86_400_000;
const RETENTION_DAYS = 30;
const TENANT = 'acme';

describe('a message lives as long as it waits, and its retention starts when it ends', () => {
  let world: BreakerWorld;
  let rig: BreakerRig;
  let api: DynamoApiStore;
  let sender: SenderHandler;
  let keys = 0;

  beforeEach(async () => {
    world = await startBreakerWorld();
    await world.outage.set('up');
    rig = await createBreakerRig(world);
    api = new DynamoApiStore(world.documents, world.tableName);
    const relay = {
      host: world.outage.host,
      port: world.outage.port,
      secure: false,
      requireTls: false,
      credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
      timeouts: FAST_SMTP_TIMEOUTS,
    };
    // The gate on the test's clock, so that the sender lives through the weeks the test skips.
    sender = rig.newHandler({
      relayGate: new RelayGate({
        store: rig.gateStore,
        probe: new NodemailerRelayProbe(relay),
        queue: rig.queue,
        settings: BREAKER_SETTINGS,
        now: rig.clock.now,
        random: () => 0,
        cacheMs: 0,
        log: rig.log,
        metrics: rig.metrics,
      }),
    });
  });
  afterEach(async () => {
    await world.close();
  });

  /** Enqueues through the records the API and the public outbox write, due now. */
  async function enqueue(kind: string, tenant = TENANT, to?: string[]): Promise<string> {
    keys += 1;
    const now = rig.clock.now();
    const request = validBody({
      tags: { kind },
      send_at: now.toISOString(),
      ...(to === undefined ? {} : { to }),
    });
    // The api's validation, for either side: the outbox helper's parse is for live messages only and
    // refuses the mailbox simulator's addresses that the test side's cases use (decision 0192).
    const parsed = validateEnqueueRequest(request, {
      allowedFrom: ['*@example.com'],
      defaultFrom: 'ops@example.com',
      maxHorizonDays: 400,
      now,
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const records = outboxRecords({
      tenant,
      idempotencyKey: `life-${keys}`,
      request: parsed.value,
      now,
      retentionDays: RETENTION_DAYS,
    });
    expect(await api.writeEnqueue(records)).toEqual({ kind: 'written' });
    return records.messageId;
  }

  const item = async (id: string, sk: 'STATE' | 'BODY') =>
    (
      await world.documents.send(
        new GetCommand({ TableName: world.tableName, Key: { pk: messagePk(id), sk }, ConsistentRead: true }),
      )
    ).Item;
  const ttls = async (id: string) => ({
    state: (await item(id, 'STATE'))?.expires_at,
    body: (await item(id, 'BODY'))?.expires_at,
  });
  const skipDays = async (days: number) => {
    rig.clock.advance(days * DAY_MS);
    return expireAsTtlWould(world.documents, world.tableName, rig.clock.now());
  };
  const setPause = async (command: Parameters<typeof pauseAfter>[1]) => {
    const { pause } = await rig.gateStore.read();
    expect(await rig.gateStore.writePause(pause, pauseAfter(pause, command, new Date()))).toBe('written');
  };
  const driveUntil = async (id: string, statuses: readonly MessageStatus[]) => {
    await rig.drive({
      handlers: [sender],
      timeoutMs: 30_000,
      done: async () => statuses.includes((await rig.state(id)).status),
    });
    return rig.state(id);
  };
  const retentionFromNow = () => expiresAtAfter(rig.clock.now(), RETENTION_DAYS);

  it('a message paused 45 days keeps its body and is sent exactly once on resume; then its retention starts', async () => {
    await setPause({ action: 'pause', kind: 'digest', reason: 'rollout' });
    const id = await enqueue('digest');
    expect(await ttls(id)).toEqual({ state: undefined, body: undefined });
    await rig.dispatch({ id, rev: 1 });
    const copies = await rig.receive({ max: 1, waitSeconds: 3 });
    expect(copies).toHaveLength(1);
    expect((await rig.run(copies, sender)).batchItemFailures).toHaveLength(1);
    expect(rig.received(id)).toHaveLength(0);

    expect(await skipDays(45)).toEqual([]);
    await setPause({ action: 'resume', kind: 'digest' });
    const sent = await driveUntil(id, ['sent', 'failed']);
    expect(sent.status).toBe('sent');
    expect(rig.received(id)).toHaveLength(1);
    expect(await ttls(id)).toEqual({ state: retentionFromNow(), body: retentionFromNow() });

    // The retention after the send, and both records are gone.
    const gone = await skipDays(RETENTION_DAYS + 1);
    expect(gone.map((key) => key.sk).sort()).toEqual(['BODY', 'STATE']);
  }, 90_000);

  it('a failed message waits 60 days for an operator, then a retry sends it to every recipient not yet accepted', async () => {
    world.smtp.script({ rcptTo: { code: 550, message: '5.7.1 Relaying denied by policy' } }, {});
    const id = await enqueue('report');
    await rig.dispatch({ id, rev: 1 });
    const failed = await driveUntil(id, ['failed', 'sent']);
    expect(failed).toMatchObject({ status: 'failed', rcpt_rejected: [0] });
    expect(await ttls(id)).toEqual({ state: undefined, body: undefined });

    expect(await skipDays(60)).toEqual([]);
    const retried = await api.retry({ tenant: TENANT, id, now: rig.clock.now(), maxAttempts: 3 });
    expect(retried.kind).toBe('updated');
    const state = retried.kind === 'updated' ? retried.state : ({} as MessageStateRecord);
    await rig.dispatch({ id, rev: state.rev });
    expect((await driveUntil(id, ['sent', 'failed'])).status).toBe('sent');
    expect(rig.received(id)).toHaveLength(1);
    expect(await ttls(id)).toEqual({ state: retentionFromNow(), body: retentionFromNow() });
  }, 90_000);

  it('a test-side failed message ends for good: the retention from its failure, taken back by a retry with the test key (decision 0145)', async () => {
    const side = testSideOf(TENANT);
    const rejected = [`reject@${SIMULATOR_DOMAIN}`];
    const retried = await enqueue('report', side, rejected);
    await rig.dispatch({ id: retried, rev: 1 });
    expect((await driveUntil(retried, ['failed', 'sent'])).status).toBe('failed');
    expect(await ttls(retried)).toEqual({ state: retentionFromNow(), body: retentionFromNow() });
    // Nobody is told of it (decision 0135); its tenant's retry, well within the retention, takes it back.
    expect(await skipDays(RETENTION_DAYS - 1)).toEqual([]);
    const taken = await api.retry({ tenant: side, id: retried, now: rig.clock.now(), maxAttempts: 3 });
    expect(taken).toMatchObject({ kind: 'updated', state: { status: 'scheduled' } });
    expect(await ttls(retried)).toEqual({ state: undefined, body: undefined });

    const left = await enqueue('report', side, rejected);
    await rig.dispatch({ id: left, rev: 1 });
    expect((await driveUntil(left, ['failed', 'sent'])).status).toBe('failed');
    const gone = await skipDays(RETENTION_DAYS + 1);
    expect(
      gone
        .filter((key) => key.pk === messagePk(left))
        .map((key) => key.sk)
        .sort(),
    ).toEqual(['BODY', 'STATE']);
    expect(world.smtp.transactions).toBe(0);
  }, 60_000);

  it('a discarded message takes the retention, and a retry takes it back off the state and the body', async () => {
    world.smtp.script({ rcptTo: { code: 550, message: '5.7.1 Relaying denied by policy' } }, {});
    const id = await enqueue('report');
    await rig.dispatch({ id, rev: 1 });
    await driveUntil(id, ['failed', 'sent']);
    const discarded = await api.discard({
      tenant: TENANT,
      id,
      now: rig.clock.now(),
      expiresAt: retentionFromNow(),
    });
    expect(discarded.kind).toBe('updated');
    expect(await ttls(id)).toEqual({ state: retentionFromNow(), body: retentionFromNow() });

    expect((await api.retry({ tenant: TENANT, id, now: rig.clock.now(), maxAttempts: 3 })).kind).toBe(
      'updated',
    );
    expect(await ttls(id)).toEqual({ state: undefined, body: undefined });
    expect(await skipDays(RETENTION_DAYS + 10)).toEqual([]);
  }, 60_000);

  it('a discarded dead message redriven from the DLQ loses both TTLs when its copy claims it', async () => {
    const id = await enqueue('report');
    const store = new DynamoSenderStore(world.documents, world.tableName);
    const now = rig.clock.now();
    const scheduled = await rig.state(id);
    const claim = await store.claim({
      observed: scheduled,
      owner: 'me',
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
    });
    if (claim.outcome !== 'applied') throw new Error('claim failed');
    const dead = await store.recordOutcome({
      claimed: claim.record,
      owner: 'me',
      to: 'dead',
      now,
      attempt: {
        at: now.toISOString(),
        outcome: 'transient',
        code: '451',
        enhanced_code: null,
        reply: null,
        duration_ms: 3,
      },
      joinsHistory: true,
      lastError: null,
      retentionDays: RETENTION_DAYS,
      attempts: 8,
      recipients: { accepted: [], rejected: [] },
    });
    expect(dead.outcome).toBe('applied');
    expect(await ttls(id)).toEqual({ state: undefined, body: undefined });
    await api.discard({ tenant: TENANT, id, now, expiresAt: retentionFromNow() });
    const observed = await rig.state(id);
    expect(observed.expires_at).toBe(retentionFromNow());

    const redriven = await store.claim({
      observed,
      owner: 'redrive',
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      attemptLimit: 16,
    });
    expect(redriven.outcome).toBe('applied');
    expect(await ttls(id)).toEqual({ state: undefined, body: undefined });
  }, 60_000);
});
