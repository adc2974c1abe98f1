import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { type BreakerState, NOT_PAUSED } from '../../lambdas/core/relayBreaker.js';
import type { FleetSignal } from '../../lambdas/core/sendDecision.js';
import type { ProbeResult, RelayProbe } from '../../lambdas/ports/SendingGate.js';
import { SENDER_LANES } from '../../lambdas/sender/createSenderHandler.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoSendingGate, SENDING_GATE_KEY, SendingGateItems } from '../../lambdas/store/sendingGate.js';
import { KEY } from '../../lambdas/store/tableLayout.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { BREAKER_SETTINGS } from './breakerHarness.js';
import { RecordingLog, RecordingMetrics, RecordingQueue } from './senderHarness.js';

/**
 * DESIGN §5: while the breaker is half-open one sender probes, and its result decides — success
 * closes the breaker, failure opens it again. Other writers may move the breaker's version while the
 * probe runs (the probe token re-armed by another sender, the sweeper's safety net): the probe's
 * result must still be written, or the fleet waits for a prober that already finished. The gate item
 * is DynamoDB Local's; the probe is a relay that answers when the test says so.
 */

class HeldProbe implements RelayProbe {
  private release: ((result: ProbeResult) => void) | undefined;
  started = 0;
  probe(): Promise<ProbeResult> {
    this.started++;
    return new Promise((resolve) => {
      this.release = resolve;
    });
  }
  async answer(result: ProbeResult): Promise<void> {
    while (this.release === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    this.release(result);
  }
}

const UNAVAILABLE = {
  origin: 'outage',
  class: 'transient',
  code: '421',
  enhancedCode: null,
  reason: 'the relay closed the session',
  hardBounce: false,
} as const;

describe('a probe while another writer moves the breaker', () => {
  let store: DynamoSendingGate;
  let queue: RecordingQueue;
  let token: string;

  beforeEach(async () => {
    const [{ tableName }, { urls }] = await Promise.all([freshTable('gate'), freshQueues()]);
    store = new DynamoSendingGate(documentClient(), tableName);
    queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
    const dueSince = new Date(Date.now() - 10).toISOString();
    token = '12345';
    const open: BreakerState = {
      state: 'open',
      version: 1,
      opened_at: dueSince,
      reason: '421: the relay closed the session',
      probe_at: dueSince,
      token,
      failed_probes: 0,
    };
    expect(await store.writeBreaker({ state: 'closed', version: 0 }, open)).toBe('written');
  });

  const gate = (probe: RelayProbe) =>
    new RelayGate({
      store,
      probe,
      queue,
      settings: BREAKER_SETTINGS,
      now: () => new Date(),
      random: () => 0,
      cacheMs: 0,
      log: new RecordingLog(),
      metrics: new RecordingMetrics(),
    });

  it('a relay that answers closes the breaker, though the token was re-armed during the probe', async () => {
    const probe = new HeldProbe();
    const admission = gate(probe).admit(undefined);
    await eventually('the breaker half-open', async () => (await store.read()).breaker.state === 'half-open');

    // The token arrives at another sender while the probe runs: too early, it is re-armed.
    const tokenOutcome = await gate(new HeldProbe()).onToken(Number(token));
    expect(tokenOutcome).toEqual({ kind: 'done', reason: 'token re-armed for the next probe' });

    await probe.answer({ ok: true, durationMs: 3 });
    expect(await admission).toEqual({ kind: 'send', rateFactor: 1 });
    expect((await store.read()).breaker.state).toBe('closed');
    expect(probe.started).toBe(1);
  });

  it('a relay that does not answer opens it again, with the new token and no prober left', async () => {
    const probe = new HeldProbe();
    const admission = gate(probe).admit(undefined);
    await eventually('the breaker half-open', async () => (await store.read()).breaker.state === 'half-open');
    await gate(new HeldProbe()).onToken(Number(token));
    const rearmed = (await store.read()).breaker.token;
    expect(rearmed).not.toBe(token);

    await probe.answer({ ok: false, failure: UNAVAILABLE, durationMs: 3 });
    expect((await admission).kind).toBe('wait');
    const { breaker } = await store.read();
    expect(breaker).toMatchObject({ state: 'open', token: rearmed, failed_probes: 1 });
    expect(breaker.probe_owner).toBeUndefined();
  });

  it('a duplicate of the token copy re-arms nothing once the first re-armed it', async () => {
    const holder = new HeldProbe();
    const admission = gate(holder).admit(undefined);
    await eventually('the breaker half-open', async () => (await store.read()).breaker.state === 'half-open');
    const [first, duplicate] = await Promise.all([
      gate(new HeldProbe()).onToken(Number(token)),
      gate(new HeldProbe()).onToken(Number(token)),
    ]);
    const outcomes = [first, duplicate].map((outcome) => (outcome.kind === 'done' ? outcome.reason : 'kept'));
    expect(outcomes.filter((reason) => reason === 'token re-armed for the next probe')).toHaveLength(1);
    const tokens = queue.enqueued.filter((copy) => copy.payload.id === '_relay-probe');
    expect(tokens).toHaveLength(1);
    expect(String(tokens[0]?.payload.rev)).toBe((await store.read()).breaker.token);
    await holder.answer({ ok: true, durationMs: 1 });
    await admission;
  });
});

describe("what a gate decides on, when its sender's relays share their reads (DESIGN §4, §15)", () => {
  /**
   * The relays' gates of one sender share one read of the gate's items a second (the key's load),
   * and each gate keeps what it read for a second: the pauses and the breaker a gate decides on must
   * still be at most that second old — counted from the shared read, not from when the gate took
   * it. The clock is the test's, for the gates and the shared read alike.
   */
  it('a pause set after the shared read holds the copies of a relay whose gate took that read late, a second after it, not two', async () => {
    const [{ tableName }, { urls }] = await Promise.all([freshTable('gate-age'), freshQueues()]);
    const documents = documentClient();
    let clock = Date.parse('2026-12-01T10:00:00.000Z');
    const items = new SendingGateItems(documents, tableName, () => clock);
    const queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
    const answering: RelayProbe = { probe: async () => ({ ok: true, durationMs: 1 }) };
    const gateOf = (relay: string) =>
      new RelayGate({
        store: new DynamoSendingGate(documents, tableName, relay, items),
        probe: answering,
        queue,
        settings: BREAKER_SETTINGS,
        now: () => new Date(clock),
        random: () => 0,
        cacheMs: 1000,
        log: new RecordingLog(),
        metrics: new RecordingMetrics(),
        relay,
      });
    const [primary, backup] = [gateOf('primary'), gateOf('backup')];

    expect(await primary.admit('receipt')).toEqual({ kind: 'send', rateFactor: 1 });
    clock += 900;
    // The backup's gate is asked first now: it takes the primary's read, 900 ms old.
    expect(await backup.admit('receipt')).toEqual({ kind: 'send', rateFactor: 1 });
    const pause = {
      version: 1,
      kinds: {},
      all: { reason: 'incident', at: new Date(clock).toISOString(), except: [] },
    };
    expect(await new DynamoSendingGate(documents, tableName).writePause(NOT_PAUSED, pause)).toBe('written');

    clock += 100;
    expect(await backup.admit('receipt')).toMatchObject({ kind: 'wait', cause: 'paused' });
    expect(await primary.admit('receipt')).toMatchObject({ kind: 'wait', cause: 'paused' });
  });
});

describe('the gate key while the relay refuses every copy in flight (DESIGN §4: the sending gate)', () => {
  /**
   * DESIGN §4 bounds the sending gate's item at 10,000 messages/s, and docs/capacity.md counts a
   * sender's reads of `GATE#sending` per second, not per message (one a second, ~1,260 senders: 42 %
   * of a partition). A relay that throttles us, spends its daily quota or goes down refuses every
   * copy each sender has in flight at once, one per lane, in every sender of the fleet. Each refusal
   * tells the gate; the wave must cost a sender what its second costs — the read it decides on, and
   * one fresh read for the write it makes — not a consistent read per refused copy. Two senders
   * (containers: their own shared reads and clocks at the same time), the table DynamoDB Local's,
   * the requests counted on each sender's client.
   */
  const FAILURE = { code: '454', class: 'transient', reason: 'Throttling failure' } as const;
  const SIGNALS: readonly FleetSignal[] = ['throttled', 'quota-exhausted', 'relay-unavailable'];

  /** A document client that counts its reads of the gate key and its writes. */
  function countingClient(): {
    documents: DynamoDBDocumentClient;
    gateReads: () => number;
    writes: () => number;
  } {
    const documents = documentClient();
    let gateReads = 0;
    let writes = 0;
    documents.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? '';
        const input = JSON.stringify(args.input);
        if (/^(Query|GetItem)Command$/.test(name) && input.includes(SENDING_GATE_KEY[KEY.partition]))
          gateReads++;
        if (name === 'UpdateItemCommand') writes++;
        return next(args);
      },
      { step: 'initialize', name: 'countGateRequests' },
    );
    return { documents, gateReads: () => gateReads, writes: () => writes };
  }

  /** One sender of the fleet: its own gate over its own counting client, on the shared table and clock. */
  function countedSender(
    tableName: string,
    queue: RecordingQueue,
    clock: () => number,
    probe: RelayProbe = { probe: async () => ({ ok: true, durationMs: 1 }) },
  ) {
    const counted = countingClient();
    const gate = new RelayGate({
      store: new DynamoSendingGate(
        counted.documents,
        tableName,
        undefined,
        new SendingGateItems(counted.documents, tableName, clock),
      ),
      probe,
      queue,
      settings: BREAKER_SETTINGS,
      now: () => new Date(clock()),
      random: () => 0,
      cacheMs: 1000,
      log: new RecordingLog(),
      metrics: new RecordingMetrics(),
    });
    return { gate, ...counted };
  }

  for (const signal of SIGNALS) {
    it(`${signal}: each sender reads the key twice at most in the wave, and one write lands`, async () => {
      const [{ tableName }, { urls }] = await Promise.all([freshTable('gate-wave'), freshQueues()]);
      const clock = Date.parse('2026-12-01T10:00:00.000Z');
      const queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
      const sender = () => countedSender(tableName, queue, () => clock);
      const fleet = [sender(), sender()];
      // Every lane of each sender passed the gate, sent, and is refused together.
      for (const { gate } of fleet) {
        const admitted = await Promise.all(Array.from({ length: SENDER_LANES }, () => gate.admit(undefined)));
        expect(admitted.every((admission) => admission.kind === 'send')).toBe(true);
      }
      for (const { gate } of fleet)
        await Promise.all(Array.from({ length: SENDER_LANES }, () => gate.signal(signal, FAILURE)));

      const reads = fleet.map(({ gateReads }) => gateReads());
      expect(reads).toEqual(reads.map((count) => Math.min(count, 2)));
      expect(fleet.reduce((sum, { writes }) => sum + writes(), 0)).toBe(1);
      // And the wave holds each sender's next copies.
      for (const { gate } of fleet) expect((await gate.admit(undefined)).kind).toBe('wait');
    });
  }

  /**
   * The relay down, every sender's view of its breaker open: when the probe falls due, each sender
   * that holds a copy then finds it due at once, every lane of it. One probe is wanted (DESIGN §5);
   * the key must take from the others what their second takes — a read — not a conditional write
   * each, which lands on the one item at once from the whole fleet every probe interval.
   */
  it('a probe falling due: one claim and one result written, each sender reads twice at most', async () => {
    const [{ tableName }, { urls }] = await Promise.all([freshTable('gate-probe-due'), freshQueues()]);
    let clock = Date.parse('2026-12-01T10:00:00.000Z');
    const queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
    let probes = 0;
    const open: BreakerState = {
      state: 'open',
      version: 1,
      opened_at: new Date(clock - 1000).toISOString(),
      reason: '421: the relay closed the session',
      probe_at: new Date(clock + 500).toISOString(),
      token: '7',
      failed_probes: 0,
    };
    const setup = new DynamoSendingGate(documentClient(), tableName);
    expect(await setup.writeBreaker({ state: 'closed', version: 0 }, open)).toBe('written');
    const sender = () =>
      countedSender(tableName, queue, () => clock, {
        probe: async () => {
          probes++;
          return { ok: true, durationMs: 1 };
        },
      });
    const [first, late] = [sender(), sender()];
    // The late sender read the gate while the probe was not yet due; its read is still young.
    expect((await late.gate.admit(undefined)).kind).toBe('wait');
    clock += 600;
    const lanes = (gate: RelayGate) =>
      Promise.all(Array.from({ length: SENDER_LANES }, () => gate.admit(undefined)));
    await lanes(first.gate);
    await lanes(late.gate);

    expect(probes).toBe(1);
    expect((await setup.read()).breaker.state).toBe('closed');
    expect({ writes: first.writes() + late.writes() }).toEqual({ writes: 2 });
    const reads = [first.gateReads(), late.gateReads()];
    expect(reads).toEqual(reads.map((count) => Math.min(count, 2)));
  });
});
