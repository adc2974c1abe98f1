import { describe, expect, it } from 'vitest';
import { NEVER_OPENED, opened, PROBE_TOKEN_ID } from '../../lambdas/core/relayBreaker.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { putMessage } from '../sender/records.js';
import { SWEEP_GATE_SETTINGS as SETTINGS, sweepWorld } from './sweepWorld.js';

/**
 * The sweeper during a relay outage (DESIGN §5, §5a): the safety net under the probe token — a lost
 * token is replaced — and no re-dispatch of messages that wait because the breaker holds them.
 */

async function world() {
  const { tableName, documents, gate: store, queue, run } = await sweepWorld('sweep-breaker');
  return { tableName, documents, store, queue, run };
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
    expect(report.relays?.map((relay) => [relay.relay, relay.state, relay.tokenRearmed])).toEqual([
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
