/**
 * DESIGN §5 "Deadlines" (past `not_after` a message becomes `expired` instead of being sent) and
 * docs/design.md §16 (a message that comes due inside its quiet hours is held until they end), at
 * the moment that counts: when the copy would go. The send rate (DESIGN §5 "Rate") waits before the
 * claim, and that wait can carry a copy past its deadline or into its window; what was true when the
 * copy arrived no longer is. On DynamoDB Local, the SQS emulator and a real smtp-server; the send
 * rate is one recipient every 10 s on the sender's clock, which the test moves (the bucket's waits
 * advance it), so a second copy waits 10 s behind the first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  contextWithRemaining,
  createSenderRig,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from './senderHarness.js';

/** One recipient every 10 s: the bucket holds one token, and the next comes 10 s later. */
const SLOW_RATE = 0.1;

const HOUR = 3_600_000;
/** `HH:MM` of a time, in UTC. */
const hourOf = (ms: number): string => new Date(ms).toISOString().slice(11, 16);

describe('the sender judges deadlines and quiet hours after the send-rate wait', () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
    world.smtp.script();
  });
  afterAll(async () => {
    await world.close();
  });

  /** A first message takes the bucket's one token, so the next copy waits for the rate. */
  async function drainTheBucket(rig: SenderRig): Promise<void> {
    const first = await rig.putMessage();
    await rig.dispatch(first);
    await rig.deliverNext();
    expect(rig.received(first.id)).toHaveLength(1);
  }

  /** The next copy, in an invocation with a minute left on the sender's clock: time for the wait and a whole attempt. */
  async function deliverWithTime(rig: SenderRig) {
    const records = await rig.receive({ max: 1, waitSeconds: 3 });
    expect(records).toHaveLength(1);
    return { response: await rig.run(records, rig.handler, contextWithRemaining(60_000)) };
  }

  it('expires a copy whose not_after passes while it waits for the send rate: nothing reaches the relay', async () => {
    const rig = await createSenderRig(world, { maxSendRate: SLOW_RATE });
    await drainTheBucket(rig);
    const notAfter = new Date(rig.clock.ms + 5_000);
    const message = await rig.putMessage({ notAfter });
    await rig.dispatch(message);

    const { response } = await deliverWithTime(rig);

    // The copy did wait for the rate, past its deadline (the sender's clock, not the test's time).
    expect(rig.clock.ms).toBeGreaterThan(notAfter.getTime());
    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state.status).toBe('expired');
    expect(state.attempts).toBe(0);
    expect(rig.metrics.of('Expired')).toBe(1);
  });

  it('holds a copy whose quiet hours begin while it waits for the send rate: no attempt, due at their end', async () => {
    const rig = await createSenderRig(world, { maxSendRate: SLOW_RATE });
    // A window that opens in the future: the sender's clock only moves forward from when its bucket
    // was made (a clock set back would owe the bucket the difference, and the copy would run out of time).
    const start = Math.ceil((Date.now() + 60_000) / HOUR) * HOUR;
    const end = start + HOUR;
    rig.clock.ms = start - 5_000;
    await drainTheBucket(rig);
    const quietHours = { start: hourOf(start), end: hourOf(end) };
    const message = await rig.putMessage({ timeZone: 'UTC', quietHours });
    await rig.dispatch(message);

    const { response } = await deliverWithTime(rig);

    expect(rig.clock.ms).toBeGreaterThan(start);
    expect(response.batchItemFailures).toEqual([]);
    expect(rig.received(message.id)).toEqual([]);
    const held = await rig.state(message.id);
    expect(held).toMatchObject({ status: 'scheduled', attempts: 0, due_at: new Date(end).toISOString() });
    expect(rig.queue.enqueued).toEqual([{ payload: { id: message.id, rev: 1 }, delaySeconds: 900 }]);
  });
});
