import { describe, expect, it } from 'vitest';
import { SWEEPER_METRIC } from '../../lambdas/core/metricNames.js';
import { NEVER_OPENED, opened, PROBE_TOKEN_ID } from '../../lambdas/core/relayBreaker.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { isIncomplete } from '../../lambdas/sweeper/createSweeperHandler.js';
import { wasRead } from '../../lambdas/sweeper/relayToken.js';
import { putMessage } from '../sender/records.js';
import { SWEEP_GATE_SETTINGS as SETTINGS, sweepWorld } from './sweepWorld.js';

/**
 * The sweeper during a relay outage (DESIGN §5, §5a): the safety net under the probe token — a lost
 * token is replaced — and no re-dispatch of messages that wait because the breaker holds them.
 */

async function world() {
  const { tableName, documents, gate: store, queue, run, gauges } = await sweepWorld('sweep-breaker');
  return { tableName, documents, store, queue, run, gauges };
}

describe('the sweeper and the relay breaker', () => {
  it('re-arms a token lost for two probe intervals, and leaves overdue messages to the breaker while it is open', async () => {
    const w = await world();
    const openedAt = new Date(Date.now() - 3_600_000);
    const message = await putMessage(w.documents, w.tableName, new Date(openedAt.getTime() - 600_000));
    const open = opened(NEVER_OPENED, { reason: 'ESOCKET: refused' }, openedAt, SETTINGS, '11');
    if (open === undefined) throw new Error('opens');
    await w.store.writeBreaker(NEVER_OPENED, open);

    const report = await w.run(new Date());
    expect(report.breaker).toEqual({ state: 'open', tokenRearmed: true });
    expect(report.redispatched).toBe(0);
    const tokens = w.queue.copies.filter((copy) => copy.payload.id === PROBE_TOKEN_ID);
    expect(tokens).toHaveLength(1);
    const after = await w.store.read();
    expect(after.breaker.token).toBe(String(tokens[0]?.payload.rev));
    expect(w.queue.copies.some((copy) => copy.payload.id === message.id)).toBe(false);

    // Two runs in a row: the fresh token is not lost yet.
    expect((await w.run(new Date())).breaker).toEqual({ state: 'open', tokenRearmed: false });
  });

  it('re-dispatches a lost test message while no relay takes mail: no gate holds its copies (DESIGN §14, §5a)', async () => {
    const w = await world();
    const openedAt = new Date(Date.now() - 3_600_000);
    const sendAt = new Date(openedAt.getTime() - 600_000);
    const live = await putMessage(w.documents, w.tableName, sendAt);
    const test = await putMessage(w.documents, w.tableName, sendAt, { tenant: testSideOf('acme') });
    const open = opened(NEVER_OPENED, { reason: 'ESOCKET: refused' }, openedAt, SETTINGS, '13');
    if (open === undefined) throw new Error('opens');
    await w.store.writeBreaker(NEVER_OPENED, open);

    const report = await w.run(new Date());
    expect(report.breaker?.state).toBe('open');
    expect(w.queue.of(test.id)).toBe(1);
    expect(w.queue.of(live.id)).toBe(0);
    expect(report.redispatched).toBe(1);
  });

  it('counts only live messages in Redispatched: a test message moves no dashboard series (DESIGN §14), though the run reports both', async () => {
    const w = await world();
    const sendAt = new Date(Date.now() - 3_600_000);
    const live = await putMessage(w.documents, w.tableName, sendAt);
    const test = await putMessage(w.documents, w.tableName, sendAt, { tenant: testSideOf('acme') });

    const report = await w.run(new Date());

    expect([w.queue.of(live.id), w.queue.of(test.id)]).toEqual([1, 1]);
    expect(report.redispatched).toBe(2);
    const series = w.gauges.filter((metric) => metric.name === SWEEPER_METRIC.redispatched);
    expect(series.map((metric) => metric.value)).toEqual([1]);
  });

  it('with the breaker closed it sweeps as before', async () => {
    const w = await world();
    const message = await putMessage(w.documents, w.tableName, new Date(Date.now() - 3_600_000));
    const report = await w.run(new Date());
    expect(report.breaker).toEqual({ state: 'closed', tokenRearmed: false });
    expect(w.queue.copies.map((copy) => copy.payload.id)).toContain(message.id);
  });

  it('with several relays: re-arms a lost token of any relay, and sweeps while another relay takes mail', async () => {
    const w = await sweepWorld('sweep-relays', ['primary', 'backup']);
    const primary = new DynamoSendingGate(w.documents, w.tableName, 'primary');
    const backup = new DynamoSendingGate(w.documents, w.tableName, 'backup');
    const openedAt = new Date(Date.now() - 3_600_000);
    const message = await putMessage(w.documents, w.tableName, new Date(openedAt.getTime() - 600_000));
    const open = opened(NEVER_OPENED, { reason: 'ESOCKET: refused' }, openedAt, SETTINGS, '12');
    if (open === undefined) throw new Error('opens');
    await backup.writeBreaker(NEVER_OPENED, open);

    // The backup is down with its token lost; mail leaves through the primary.
    const report = await w.run(new Date());
    expect(
      report.relays?.filter(wasRead).map((relay) => [relay.relay, relay.state, relay.tokenRearmed]),
    ).toEqual([
      ['primary', 'closed', false],
      ['backup', 'open', true],
    ]);
    const token = w.queue.copies.find((copy) => copy.payload.id === PROBE_TOKEN_ID);
    expect((await backup.read()).breaker.token).toBe(String(token?.payload.rev));
    expect(w.queue.of(message.id)).toBe(1);
    expect(w.gauges.filter((gauge) => gauge.name === 'RelayUnavailable')).toEqual([
      { name: 'RelayUnavailable', value: 0, relay: 'primary' },
      { name: 'RelayUnavailable', value: 1, relay: 'backup' },
    ]);

    // The primary down too: no relay takes mail, the overdue message is left to the senders.
    await primary.writeBreaker(NEVER_OPENED, open);
    const later = await putMessage(w.documents, w.tableName, new Date(openedAt.getTime() - 600_000));
    await w.run(new Date());
    expect(w.queue.of(later.id)).toBe(0);
  });
});

/**
 * The gauges the relay alarms watch (DESIGN §15, docs/runbook.md §5a), published by every sweep: a
 * relay's `RelayUnavailable` while its breaker holds the mail that would leave through it, and
 * `RelayFailover` while mail leaves through a relay other than the first — each on for as long as it
 * is true, so an alarm on it notifies when it starts and when it ends, not every quiet minute.
 */
describe('the relay gauges the sweeper publishes', () => {
  const OPENED_AT = new Date(Date.now() - 3_600_000);
  const openBreaker = (token: string) => {
    const open = opened(NEVER_OPENED, { reason: 'ESOCKET: refused' }, OPENED_AT, SETTINGS, token);
    if (open === undefined) throw new Error('opens');
    return open;
  };
  const drain = { reason: 'provider maintenance', at: OPENED_AT.toISOString() };

  async function relaysWorld() {
    const w = await sweepWorld('sweep-gauges', ['primary', 'backup']);
    const primary = new DynamoSendingGate(w.documents, w.tableName, 'primary');
    const backup = new DynamoSendingGate(w.documents, w.tableName, 'backup');
    /** The gauges of one run: each relay's `RelayUnavailable`, and `RelayFailover`. */
    const gaugesOf = async () => {
      w.gauges.length = 0;
      await w.run(new Date());
      const of = (name: string) =>
        w.gauges.filter((gauge) => gauge.name === name).map(({ value, relay }) => [relay, value]);
      return { unavailable: of('RelayUnavailable'), failover: of('RelayFailover') };
    };
    return { primary, backup, gaugesOf };
  }

  it('RelayFailover is 0 while mail leaves through the first relay, 1 while it leaves through another, 0 again when none takes it', async () => {
    const { primary, backup, gaugesOf } = await relaysWorld();
    expect((await gaugesOf()).failover).toEqual([[undefined, 0]]);

    await primary.writeBreaker(NEVER_OPENED, openBreaker('21'));
    expect(await gaugesOf()).toEqual({
      unavailable: [
        ['primary', 1],
        ['backup', 0],
      ],
      failover: [[undefined, 1]],
    });

    // The backup down too: nothing leaves through another relay; the backup's own gauge says why.
    await backup.writeBreaker(NEVER_OPENED, openBreaker('22'));
    expect(await gaugesOf()).toEqual({
      unavailable: [
        ['primary', 1],
        ['backup', 1],
      ],
      failover: [[undefined, 0]],
    });
  });

  it('a drained relay counts as available: its RelayUnavailable is 0 whatever its breaker, so the next relay failing is news', async () => {
    const { primary, backup, gaugesOf } = await relaysWorld();
    // Opened, then drained: a disabled relay is never probed, so its breaker stays open.
    await primary.writeBreaker(NEVER_OPENED, openBreaker('23'));
    await primary.setDisabled(drain);
    expect(await gaugesOf()).toEqual({
      unavailable: [
        ['primary', 0],
        ['backup', 0],
      ],
      failover: [[undefined, 1]],
    });

    await backup.writeBreaker(NEVER_OPENED, openBreaker('24'));
    expect((await gaugesOf()).unavailable).toEqual([
      ['primary', 0],
      ['backup', 1],
    ]);
  });
});

/**
 * A gate item the sweeper cannot read (a throttle on `GATE#sending` that outlasted the SDK's retries)
 * fails no run: the pass, the gauges and the DLQ's care go on, and the run says it is incomplete.
 * What it could not read holds the mail, as in the senders, who hand back a copy whose gate they cannot
 * read: a relay unread takes no mail, a pause unread holds every live message (DESIGN §5: a pause
 * exists to stop mail). A test message no gate holds (DESIGN §14).
 */
describe('a gate item the sweeper cannot read', () => {
  const THROTTLED = 'ProvisionedThroughputExceededException';
  const named = (gauges: { name: string }[], ...names: string[]) =>
    gauges.filter((gauge) => names.includes(gauge.name));

  it("a backup relay's gate unread: the lost message goes out through the primary, the gauges are published, the run is incomplete", async () => {
    const w = await sweepWorld('sweep-backup-unread', ['primary', 'backup'], {
      throttledGateItems: ['RELAY#backup'],
    });
    const lost = await putMessage(w.documents, w.tableName, new Date(Date.now() - 3_600_000));

    const report = await w.run(new Date());

    expect(w.queue.of(lost.id)).toBe(1);
    expect(report.gateErrors).toEqual([{ gate: 'backup', error: THROTTLED }]);
    expect(isIncomplete(report)).toBe(true);
    // The backup's alarm keeps its state (no gauge, missing data ignored); mail leaves through the first.
    expect(named(w.gauges, 'RelayUnavailable', 'RelayFailover')).toEqual([
      { name: 'RelayUnavailable', value: 0, relay: 'primary' },
      { name: 'RelayFailover', value: 0, relay: undefined },
    ]);
    expect(named(w.gauges, 'WaitingFailed', 'WaitingDead', 'WaitingUnknown')).toHaveLength(3);
  });

  it('the gate item unread (the pauses, the one relay): live messages are held as the senders hold them, a test message is re-dispatched', async () => {
    const w = await sweepWorld('sweep-gate-unread', undefined, { throttledGateItems: ['GATE'] });
    const sendAt = new Date(Date.now() - 3_600_000);
    const live = await putMessage(w.documents, w.tableName, sendAt);
    const test = await putMessage(w.documents, w.tableName, sendAt, { tenant: testSideOf('acme') });

    const report = await w.run(new Date());

    expect([w.queue.of(live.id), w.queue.of(test.id)]).toEqual([0, 1]);
    expect(report).toMatchObject({ held: 'gate-unread', redispatched: 1, paused: 0 });
    expect(report.gateErrors).toEqual([
      { gate: 'pauses', error: THROTTLED },
      { gate: 'default', error: THROTTLED },
    ]);
    expect(isIncomplete(report)).toBe(true);
    expect(named(w.gauges, 'RelayUnavailable', 'RelayFailover')).toEqual([]);
    expect(named(w.gauges, 'WaitingFailed', 'WaitingDead', 'WaitingUnknown')).toHaveLength(3);
  });
});
