/**
 * docs/runbook.md procedure 4 (`RelayIteratorAge`, `RelayFailures`) walked with its typical cause,
 * Scheduler throttling (`ThrottlingException`: the CreateSchedule quota), on the local stack with
 * the real entry point (cli/postdate.mjs) and the SMTP sink as the relay (decision 0286; 0283
 * walked it with the send queue gone).
 *
 * How the relay is throttled, for real: the Scheduler emulator's throttling fault
 * (local/scheduler/throttleFault.ts, switched by its control route as an operator's curl) answers
 * CreateSchedule and DeleteSchedule with the service's 429 `ThrottlingException`. The relay's SDK
 * retries each call (3 attempts), the relay fails the record, its stream event source retries the
 * batch 5 times and puts the range on the relay failure queue. Meanwhile the tenant cancels one
 * message and reschedules another: their records join the failing range.
 *
 * Compressed: due times of seconds, not minutes (`POSTDATE_DIRECT_DELAY_MAX_SECONDS` 2 and lead 1,
 * deployed 900 and 90; no immediate copy from the api, whose 60 s horizon would otherwise cover
 * them), so that each message needs a schedule; the sweep grace 1 s (deployed 300) so that step 4
 * sees them overdue at once; the periodic sweeper an hour apart, so that only the redrive
 * dispatches. Steps 1 to 3 are CloudWatch, Logs, Lambda and Service Quotas: AWS's; step 3's
 * "raise the quota" is the fault switched off.
 *
 * What the user is promised (DESIGN §5, the runbook's Outcome): nothing lost, nothing sent twice, a
 * cancelled message never sent, a rescheduled one at its new time; read from what the relay (the
 * SMTP sink) received, not from Postdate's statuses. Step 2's `aws logs tail … --filter-pattern`
 * is read as CloudWatch reads it over the relay's log group: the functions' own log lines (what
 * their sandboxes write to stdout and stderr, both of which Lambda sends to CloudWatch), kept from
 * this process's streams.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import type { LocalStreamDiscard } from '../../local/localStackOptions.js';
import { eventually } from '../support/eventually.js';
import { matchesFilterPattern, runbookFilterPattern } from '../support/runbookLogSearch.js';
import {
  capturedLogs,
  enqueue,
  operatorCli,
  schedulerThrottle,
  sinkArrivals,
  tenantChanges,
} from './operatorShell.js';

describe('runbook procedure 4 with Scheduler throttling', () => {
  let stack: LocalStack;
  const discards: LocalStreamDiscard[] = [];
  /** The functions' log events, as CloudWatch Logs would hold them. */
  let logs: ReturnType<typeof capturedLogs>;

  beforeAll(async () => {
    logs = capturedLogs();
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-scheduler-throttling-01',
        POSTDATE_DIRECT_DELAY_MAX_SECONDS: '2',
        POSTDATE_SCHEDULE_LEAD_SECONDS: '1',
        POSTDATE_SWEEP_GRACE_SECONDS: '1',
        POSTDATE_API_IMMEDIATE_COPY: 'false',
      },
      'local',
    );
    stack = await startLocalStack({
      config,
      ports: ANY_FREE_PORTS,
      quiet: true,
      sweepIntervalMs: 3_600_000,
      onStreamDiscard: (discard) => discards.push(discard),
    });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    logs?.restore();
  });

  /** The relay's log events (Powertools JSON lines of service postdate-relay). */
  const relayLog = (): string[] => logs.of('postdate-relay');

  const throttle = (method: 'PUT' | 'DELETE' | 'GET', body?: unknown) =>
    schedulerThrottle(stack, method, body);
  const tenant = (method: 'PATCH' | 'DELETE', id: string, body?: unknown) =>
    tenantChanges(stack, method, id, body);
  const received = (id: string) => sinkArrivals(stack, id);

  it('walks steps 4, 5 and Verify: each live message sent once, the rescheduled one at its new time, the cancelled one never', async () => {
    const postdate = operatorCli(stack, {
      bin: true,
      env: {
        POSTDATE_SCHEDULER_ROLE_ARN: stack.functionEnvironment.POSTDATE_SCHEDULER_ROLE_ARN as string,
        POSTDATE_SCHEDULE_DLQ_ARN: stack.functionEnvironment.POSTDATE_SCHEDULE_DLQ_ARN as string,
        POSTDATE_SCHEDULE_GROUP: stack.functionEnvironment.POSTDATE_SCHEDULE_GROUP as string,
        AWS_ENDPOINT_URL_SCHEDULER: stack.schedulerEndpoint,
      },
    });
    // The burst: Scheduler refuses CreateSchedule and DeleteSchedule.
    await throttle('PUT', { operations: ['CreateSchedule', 'DeleteSchedule'] });
    const startedAt = Date.now();
    const soonAt = new Date(startedAt + 4_000).toISOString();
    const sendAt = new Date(startedAt + 18_000).toISOString();
    const soon = await enqueue(stack, 'runbook-throttle-soon', { subject: 'Soon', send_at: soonAt });
    const live = await enqueue(stack, 'runbook-throttle-live', { subject: 'Live', send_at: sendAt });
    const cancelled = await enqueue(stack, 'runbook-throttle-cancel', { subject: 'Cancel', send_at: sendAt });
    const moved = await enqueue(stack, 'runbook-throttle-move', { subject: 'Move', send_at: sendAt });
    await eventually('the relay throttled', async () => (await throttle('GET')).throttled > 0 || undefined, {
      withinMs: 30_000,
    });
    // Meanwhile the tenant cancels one and moves another later.
    await tenant('DELETE', cancelled);
    const movedTo = startedAt + 20_000;
    await tenant('PATCH', moved, { send_at: new Date(movedTo).toISOString() });

    // The relay gives up: the cancel and the move (DeleteSchedule refused) go to the relay failure
    // queue. A message whose time came during the relay's retries went from a retry through the send
    // queue (a message due needs no schedule); the others went to the failure queue too.
    await stack.idle();
    expect(discards.map((d) => `${d.source} → ${d.destination}`)).toContain('relay → onFailure');
    const given = discards.filter((d) => d.source === 'relay').flatMap((d) => d.keys.map((key) => key.pk));
    for (const id of [cancelled, moved]) expect(given).toContain(`MSG#${id}`);
    const path = (id: string) => (given.includes(`MSG#${id}`) ? 'the redrive' : "the relay's retry");

    // Step 2: the errors, read with the runbook's pattern, name the cause.
    const pattern = runbookFilterPattern('4', 2, '/aws/lambda/$RELAY');
    const shown = relayLog().filter((line) => matchesFilterPattern(pattern, line));
    expect(
      shown.filter((line) => line.includes('ThrottlingException')).length,
      `--filter-pattern '${pattern}' shows ${shown.length} of the relay's ${relayLog().length} log lines`,
    ).toBeGreaterThan(0);

    // Step 4: reconcile lists the moved one, overdue beyond the grace (the cancelled one is finished).
    await eventually('the moved message overdue', () => Date.now() > movedTo + 1_000 || undefined, {
      withinMs: 30_000,
    });
    const reconcile = await postdate('reconcile', '--since', '2h');
    expect(reconcile.code, reconcile.stdout).toBe(1);
    expect(reconcile.stdout).toContain(moved);
    expect(reconcile.stdout).not.toContain(cancelled);

    // Step 5 run too soon, while Scheduler still throttles: nothing is lost, the range stays.
    const early = await postdate('relay-failures', 'redrive');
    expect(early.code, `${early.stdout}${early.stderr}`).toBe(1);
    expect(early.stdout).toMatch(/left on the queue:\s+[1-9]/);

    // Step 3: the cause removed (the quota raised: the fault off), then step 5 as written.
    await throttle('DELETE');
    const throttleEnded = Date.now();
    const redrive = await postdate('relay-failures', 'redrive');
    expect(redrive.code, `${redrive.stdout}${redrive.stderr}`).toBe(0);
    expect(redrive.stdout).toMatch(/replayed from the stream:\s+[1-9]/);
    expect(redrive.stdout).toMatch(/left on the queue:\s+0\b/);

    // Verify, at the relay: each live message once, the moved one not before its new time, the
    // cancelled one never.
    await eventually(
      'every live message at the relay',
      () => ([soon, live, moved].every((id) => received(id).length > 0) ? true : undefined),
      { withinMs: 30_000 },
    );
    const again = await postdate('relay-failures', 'redrive');
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/failure messages:\s+0\b/);
    const clean = await postdate('reconcile', '--since', '24h');
    expect(clean.code, clean.stdout).toBe(0);
    await stack.idle();
    expect(received(soon)).toHaveLength(1);
    expect(received(live)).toHaveLength(1);
    expect(received(moved)).toHaveLength(1);
    expect(received(moved)[0]).toBeGreaterThanOrEqual(movedTo);
    expect(received(cancelled)).toEqual([]);
    const late = (id: string, dueMs: number) =>
      `${id === soon ? 'soon' : id === live ? 'live' : 'moved'} through ${path(id)}, ${(received(id)[0] ?? 0) - dueMs} ms after its time`;
    console.info(
      `${late(soon, Date.parse(soonAt))}; ${late(live, Date.parse(sendAt))}; ${late(moved, movedTo)}; the throttling ended ${throttleEnded - movedTo} ms after the moved one's time`,
    );
  }, 150_000);
});
