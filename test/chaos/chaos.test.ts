import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planWorkload, runChaos, seededRandom, smtpScript } from '../../chaos/run.js';

describe('the chaos workload and fault script', () => {
  it('are reproducible from the seed and mix every kind', () => {
    const first = planWorkload(400, seededRandom(3), 'run');
    const second = planWorkload(400, seededRandom(3), 'run');
    expect(first.map((plan) => plan.kind)).toEqual(second.map((plan) => plan.kind));
    expect(new Set(first.map((plan) => plan.kind))).toEqual(
      new Set(['immediate', 'short', 'long', 'cancel', 'reschedule', 'supersede', 'group-fresh', 'expire']),
    );
    const script = smtpScript(2000, seededRandom(3), 0.2, 0.01);
    expect(new Set(script.kinds)).toEqual(
      new Set([
        'accept',
        'rcpt-451',
        'rcpt-550',
        'data-451',
        'data-554',
        'data-drop',
        'rcpt-stall',
        'data-stall',
      ]),
    );
  });
});

/**
 * The fast variant of `npm run chaos`: ~60 messages through the local stack in a child process,
 * SMTP faults, duplicate and stale SQS copies, replayed stream batches, DynamoDB throttling,
 * schedules fired twice and late, one SIGKILL of the sender process alone at an SMTP moment (after
 * DATA or after the final dot) and its restart, and one SIGKILL of the whole stack with messages in
 * every state, then a restart on the same data dir (this is also the restart test: the sweeper must
 * bring every message to a terminal state).
 */
describe('the chaos run (fast variant, with a SIGKILL and a restart)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'postdate-chaos-spec-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loses nothing and doubles nothing without an ambiguous attempt to explain it', async () => {
    const reportPath = join(dir, 'report.json');
    const outcome = await runChaos({
      messages: 60,
      seed: 20261129,
      deadlineSeconds: 100,
      kills: 1,
      authFailureSeconds: 0,
      smtpFaultRate: 0.2,
      stallRate: 0.02,
      throttleRate: 0.05,
      replayRate: 0.5,
      duplicateCopyRate: 0.5,
      schedulerFireTwiceRate: 0.5,
      schedulerLateRate: 0.5,
      schedulerLateMs: 4000,
      senderKills: 1,
      concurrency: 6,
      timeScale: 0.4,
      leaseSeconds: 22,
      reportPath,
      log: () => undefined,
    });
    const { counts } = outcome.result;
    expect(outcome.result.problems).toEqual([]);
    expect(counts).toMatchObject({
      accepted: 60,
      lost: 0,
      unexplainedDuplicates: 0,
      unexpected: 0,
      wrongFate: 0,
    });
    expect(outcome.exitCode).toBe(0);

    // The faults really happened.
    const faults = outcome.figures.faults as {
      smtpScript: Record<string, number>;
      duplicateSqsCopies: number;
      dynamodbThrottled: number;
      replayedStreamBatches: number;
      scheduleFires: number;
      scheduleFiredTwice: number;
      scheduleLate: number;
      stackKills: { statesBefore: Record<string, number> }[];
      senderKills: { moment: string }[];
      senderRestartFailures: number;
    };
    expect(Object.keys(faults.smtpScript).filter((kind) => kind !== 'accept').length).toBeGreaterThan(1);
    expect(faults.duplicateSqsCopies).toBeGreaterThan(0);
    expect(faults.dynamodbThrottled).toBeGreaterThan(0);
    expect(faults.replayedStreamBatches).toBeGreaterThan(0);
    expect(faults.scheduleFires).toBeGreaterThan(0);
    expect(faults.scheduleFiredTwice).toBeGreaterThan(0);
    expect(faults.scheduleLate).toBeGreaterThan(0);
    expect(faults.senderKills).toHaveLength(1);
    expect(faults.senderRestartFailures).toBe(0);
    expect(faults.stackKills).toHaveLength(1);
    const before = faults.stackKills[0]?.statesBefore ?? {};
    expect(before.sent).toBeGreaterThan(0);
    expect((before.scheduled ?? 0) + (before.sending ?? 0) + (before.retrying ?? 0)).toBeGreaterThan(0);

    // The JSON report holds the checker's input, so the run can be checked again.
    const saved = JSON.parse(readFileSync(reportPath, 'utf8')) as {
      input: { accepted: unknown[] };
      ok: boolean;
    };
    expect(saved.ok).toBe(true);
    expect(saved.input.accepted).toHaveLength(60);
  }, 180_000);
});
