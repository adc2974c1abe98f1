/**
 * The sweeper while EventBridge Scheduler throttles (DESIGN §5a, docs/runbook.md procedure 4's
 * Outcome; decision 0290, after 0286 walked the redrive alone): nobody runs the redrive, the relay
 * has given up on what Scheduler refused, and only the sweeper stands between the tenant's messages
 * and their loss.
 *
 * On the local stack, the SMTP sink as the relay. Scheduler refuses every operation its emulator
 * knows (the fault of local/scheduler/throttleFault.ts, switched by its control route): the relay's
 * CreateSchedule and DeleteSchedule, and any call the sweeper made. Two messages are scheduled
 * before the burst (their rev-1 schedules exist); then the tenant enqueues a third, cancels one of
 * the two and moves the other later, and the relay gives each of those records up (its retries,
 * then the relay failure queue). The cancelled and the moved messages' rev-1 schedules, which
 * Scheduler would not delete, fire at the old time.
 *
 * Compressed, and only here ({@link COMPRESSED}): due times of seconds, not minutes, with
 * `POSTDATE_DIRECT_DELAY_MAX_SECONDS` 2 and lead 1 (deployed 900 and 90) and no immediate copy from
 * the api (whose 60 s horizon would send them without Scheduler), so that each message needs a
 * schedule; the sweep grace 1 s (deployed 300); the periodic sweeper an hour apart, and each run the
 * test's `stack.sweep()`, the local stack's trigger (deployed: every 5 minutes), so that the runs
 * are known. Decided from what the relay received, not from Postdate's statuses.
 */
import { GetScheduleCommand, ResourceNotFoundException, SchedulerClient } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { scheduleName } from '../../lambdas/ports/Scheduler.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import type { LocalStreamDiscard } from '../../local/localStackOptions.js';
import { THROTTLEABLE_OPERATIONS } from '../../local/scheduler/throttleFault.js';
import { eventually } from '../support/eventually.js';
import { matchesFilterPattern, runbookFilterPattern } from '../support/runbookLogSearch.js';
import { capturedLogs, enqueue, schedulerThrottle, sinkArrivals, tenantChanges } from './operatorShell.js';

/** The one place time is compressed (see the file's comment). */
const COMPRESSED = {
  env: {
    POSTDATE_DIRECT_DELAY_MAX_SECONDS: '2',
    POSTDATE_SCHEDULE_LEAD_SECONDS: '1',
    POSTDATE_SWEEP_GRACE_SECONDS: '1',
    POSTDATE_API_IMMEDIATE_COPY: 'false',
  },
  graceMs: 1_000,
  /**
   * The messages' time, from the test's start: after the relay has given up on them, as a rule (its
   * six invocations, each with the SDK's three attempts and their throttling backoff, took 12.9 and
   * 14.1 s from the start here, on a quiet machine; 30 s leaves CI's loaded machine room). One whose
   * time comes first goes from a retry.
   */
  dueInMs: 30_000,
  /** The moved message's new time. */
  movedToMs: 34_000,
} as const;

describe('the sweeper while Scheduler throttles', () => {
  let stack: LocalStack;
  const discards: (LocalStreamDiscard & { at: number })[] = [];
  /** The stack's own lines (a sweeper run that threw is one of them). */
  const stackLines: string[] = [];
  let logs: ReturnType<typeof capturedLogs>;

  beforeAll(async () => {
    // The functions log at INFO (the sweeper's runs and re-dispatches), kept off the console.
    logs = capturedLogs({ echo: false });
    stack = await startLocalStack({
      config: loadConfig(
        { POSTDATE_API_KEY: 'pd_sweeper-scheduler-throttling-01', ...COMPRESSED.env },
        'local',
      ),
      ports: ANY_FREE_PORTS,
      log: (line) => stackLines.push(line),
      sweepIntervalMs: 3_600_000,
      onStreamDiscard: (discard) => discards.push({ ...discard, at: Date.now() }),
    });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    logs?.restore();
  });

  const throttle = (method: 'PUT' | 'DELETE' | 'GET', body?: unknown) =>
    schedulerThrottle(stack, method, body);
  const tenant = (method: 'PATCH' | 'DELETE', id: string, body?: unknown) =>
    tenantChanges(stack, method, id, body);
  const received = (id: string) => sinkArrivals(stack, id);

  /** The sweeper's log events (Powertools JSON lines), parsed. */
  const sweeperLog = () =>
    logs.of('postdate-sweeper').map((line) => ({ line, event: JSON.parse(line) as Record<string, unknown> }));
  const redispatchedBySweeper = (): unknown[] =>
    sweeperLog()
      .filter(({ event }) => event.message === 'sweeper re-dispatched a stuck message')
      .map(({ event }) => event.messageId);

  /** Whether rev 1's schedule of a message is in the Scheduler (read with the fault off). */
  const scheduleOf = async (id: string): Promise<boolean> => {
    const scheduler = new SchedulerClient({
      endpoint: stack.schedulerEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      await scheduler.send(
        new GetScheduleCommand({
          Name: scheduleName({ id, rev: 1 }),
          GroupName: stack.functionEnvironment.POSTDATE_SCHEDULE_GROUP as string,
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return false;
      throw error;
    } finally {
      scheduler.destroy();
    }
  };

  const passed = (what: string, atMs: number) =>
    eventually(what, () => Date.now() > atMs || undefined, { withinMs: COMPRESSED.movedToMs + 30_000 });

  it('sends each live message once, the moved one at its new time, the cancelled one never, and asks Scheduler nothing', async () => {
    const startedAt = Date.now();
    const dueAt = startedAt + COMPRESSED.dueInMs;
    const movedTo = startedAt + COMPRESSED.movedToMs;
    const iso = (ms: number) => new Date(ms).toISOString();

    // Before the burst: two messages scheduled, their rev-1 schedules made.
    const cancelled = await enqueue(stack, 'sweeper-throttle-cancel', {
      subject: 'Cancel',
      send_at: iso(dueAt),
    });
    const moved = await enqueue(stack, 'sweeper-throttle-move', { subject: 'Move', send_at: iso(dueAt) });
    await eventually(
      'the rev-1 schedules made',
      async () => ((await scheduleOf(cancelled)) && (await scheduleOf(moved))) || undefined,
    );

    // The burst: Scheduler refuses every operation. The tenant enqueues, cancels one, moves one later.
    await throttle('PUT', { operations: [...THROTTLEABLE_OPERATIONS] });
    const live = await enqueue(stack, 'sweeper-throttle-live', { subject: 'Live', send_at: iso(dueAt) });
    await tenant('DELETE', cancelled);
    await tenant('PATCH', moved, { send_at: iso(movedTo) });

    // The relay gives each record up (no redrive is run): what is left is the sweeper's.
    await stack.idle();
    const given = discards.filter((d) => d.source === 'relay').flatMap((d) => d.keys.map((key) => key.pk));
    for (const id of [live, cancelled, moved]) expect(given, id).toContain(`MSG#${id}`);
    const gaveUpAt = Math.max(...discards.filter((d) => d.source === 'relay').map((d) => d.at));
    const refusedBeforeSweeps = (await throttle('GET')).throttled;
    expect(refusedBeforeSweeps).toBeGreaterThan(0);

    // The stack's first run (told that the send queue was emptied at the start, it reads every entry
    // due within the hour: local/periodicSweep.ts, decision 0264), 5 s before anything is due:
    // re-dispatches nothing (a sweeper that took a message as overdue early would send it here).
    await passed('5 s before the time', dueAt - 5_000);
    const firstRunAt = Date.now();
    await stack.sweep();
    // (A machine so slow that the relay gave up after the time makes this run the next one.)
    if (firstRunAt < dueAt) expect(redispatchedBySweeper()).toEqual([]);

    // A run past the old time and the grace: the live message goes; the moved one is not due, the
    // cancelled one finished. Their rev-1 schedules fire meanwhile, and the sender drops those copies.
    await passed('the old time and the grace', dueAt + COMPRESSED.graceMs);
    await stack.sweep();
    await eventually('the live message at the relay', () => received(live).length > 0 || undefined);
    expect(redispatchedBySweeper()).not.toContain(moved);
    expect(redispatchedBySweeper()).not.toContain(cancelled);

    // A run past the new time and the grace, Scheduler still refusing: the moved message goes.
    await passed('the new time and the grace', movedTo + COMPRESSED.graceMs);
    await stack.sweep();
    await eventually('the moved message at the relay', () => received(moved).length > 0 || undefined);
    // Whatever the relay gave up on before its time, only the sweeper could send.
    if (gaveUpAt < dueAt) expect(redispatchedBySweeper()).toContain(live);
    if (gaveUpAt < movedTo) expect(redispatchedBySweeper()).toContain(moved);

    // The sweeper asked Scheduler nothing in its runs: the fault refused no request meanwhile.
    expect((await throttle('GET')).throttled, 'requests Scheduler refused during the sweeps').toBe(
      refusedBeforeSweeps,
    );
    // Its runs under the fault were whole: nothing at WARN or ERROR, no run that threw.
    const runbookPattern = runbookFilterPattern('4', 2, '/aws/lambda/$RELAY');
    expect(
      sweeperLog()
        .map(({ line }) => line)
        .filter((line) => matchesFilterPattern(runbookPattern, line)),
    ).toEqual([]);
    expect(sweeperLog().filter(({ event }) => event.message === 'sweep finished')).toHaveLength(3);
    expect(stackLines.filter((line) => line.startsWith('sweeper'))).toEqual([]);
    // And it names no address (the recipient is ada@example.com).
    expect(logs.of('postdate-sweeper').join('\n')).not.toContain('@example.com');
    // The cause is named where procedure 4 step 2 reads: the relay's log.
    expect(
      logs
        .of('postdate-relay')
        .filter((line) => matchesFilterPattern(runbookPattern, line) && line.includes('ThrottlingException')),
    ).not.toEqual([]);

    // The throttling ends; one more run finds nothing to do.
    await throttle('DELETE');
    await stack.sweep();
    await stack.idle();
    expect(received(live)).toHaveLength(1);
    expect(received(moved)).toHaveLength(1);
    expect(received(moved)[0]).toBeGreaterThanOrEqual(movedTo);
    expect(received(cancelled)).toEqual([]);
    // The rev-1 schedules Scheduler would not delete fired (and were deleted after completion).
    expect(await scheduleOf(cancelled)).toBe(false);
    expect(await scheduleOf(moved)).toBe(false);
    const path = (id: string) =>
      redispatchedBySweeper().includes(id) ? 'the sweeper' : "the relay's retry (due before it gave up)";
    console.info(
      `the relay gave up ${gaveUpAt - startedAt} ms after the start; live through ${path(live)}, ${(received(live)[0] ?? 0) - dueAt} ms after its time; moved through ${path(moved)}, ${(received(moved)[0] ?? 0) - movedTo} ms after its new time`,
    );
  }, 120_000);
});
