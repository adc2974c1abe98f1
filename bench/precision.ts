import { randomUUID } from 'node:crypto';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { withinGoal } from './benchResult.js';
import { enqueue, startBenchStack, waitForDelivery } from './benchStack.js';
import { round, type Spread, spread } from './stats.js';

const GOAL_P99_MS = 500;
const BODY_BYTES = 1024;
/**
 * Consecutive messages of one case are enqueued this far apart, so a case is a stream, not one
 * burst: with five cases that is five messages a second, well inside what the local stack drains
 * (bench/scale.ts), so the lateness is the path's, not a backlog's.
 */
const STAGGER_MS = 1000;
/** The cases' streams are offset from each other by this much. */
const CASE_OFFSET_MS = 197;

interface PathCase {
  readonly name: string;
  readonly delaySeconds: number;
  readonly path: string;
}

/**
 * Scheduling precision: lateness = the SMTP sink's receive time − the message's `send_at`, per
 * dispatch path, against a bare `setTimeout` armed for the same instant in the same process (its
 * lateness is what the event loop alone adds on this machine).
 *
 * Time compression: the production thresholds (15 min direct to SQS, 90 s schedule lead) are
 * scaled down through the same variables the Lambdas read, so every code path runs in seconds:
 * POSTDATE_DIRECT_DELAY_MAX_SECONDS = D and POSTDATE_SCHEDULE_LEAD_SECONDS = L. "14 min" becomes
 * D − 1 s (the longest direct SQS delay), "> 15 min" becomes D + 10 s (EventBridge Scheduler at
 * send_at − L, then the exact remaining SQS delay and the in-process sub-second wait).
 */
export async function precision(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const perCase = options.quick ? 8 : 30;
  const directMax = options.quick ? 12 : 70;
  const lead = options.quick ? 3 : 5;
  const cases: PathCase[] = [
    { name: '0 s', delaySeconds: 0, path: 'SQS, no delay' },
    { name: '5 s', delaySeconds: 5, path: 'SQS DelaySeconds' },
    ...(options.quick ? [] : [{ name: '60 s', delaySeconds: 60, path: 'SQS DelaySeconds' }]),
    {
      name: `14 min (compressed: ${directMax - 1} s)`,
      delaySeconds: directMax - 1,
      path: 'SQS DelaySeconds, longest direct delay',
    },
    {
      name: `> 15 min (compressed: ${directMax + 10} s)`,
      delaySeconds: directMax + 10,
      path: `Scheduler at send_at − ${lead} s, then SQS`,
    },
  ];
  const stack = await startBenchStack({
    POSTDATE_DIRECT_DELAY_MAX_SECONDS: String(directMax),
    POSTDATE_SCHEDULE_LEAD_SECONDS: String(lead),
  });
  try {
    // Warm the functions (cold-start imports and client set-up are not part of the precision).
    const warm = await enqueue(stack, { bodyBytes: 10, key: randomUUID() });
    await waitForDelivery(stack, [warm.id], 60_000);

    // Every message is enqueued at its own moment with its case's delay (`delay_seconds`, none for
    // 0 s), so the relay sees exactly that much time left and takes the case's path: the cases are
    // interleaved streams, each message STAGGER_MS after the previous one of its case.
    const setupMs = 3000;
    const base = Date.now() + setupMs;
    const plan = cases.flatMap((pathCase, caseIndex) =>
      Array.from({ length: perCase }, (_, i) => ({
        caseIndex,
        delaySeconds: pathCase.delaySeconds,
        enqueueAt: base + i * STAGGER_MS + caseIndex * CASE_OFFSET_MS,
      })),
    );

    const timerLateness: number[] = [];
    const timers: NodeJS.Timeout[] = [];
    const armBaseline = (dueAt: number) => {
      // The baseline: a timer for the same instant, armed in the same process.
      timers.push(setTimeout(() => timerLateness.push(Date.now() - dueAt), Math.max(0, dueAt - Date.now())));
    };
    const enqueued = await Promise.all(
      plan.map(
        (item) =>
          new Promise<{ caseIndex: number; id: string; sendAt: Date }>((resolve, reject) => {
            setTimeout(
              () => {
                enqueue(stack, {
                  bodyBytes: BODY_BYTES,
                  key: randomUUID(),
                  ...(item.delaySeconds > 0 ? { delaySeconds: item.delaySeconds } : {}),
                }).then((message) => {
                  // The API's send_at is the truth (the acceptance time for 0 s).
                  if (item.delaySeconds > 0) armBaseline(message.sendAt.getTime());
                  resolve({ caseIndex: item.caseIndex, id: message.id, sendAt: message.sendAt });
                }, reject);
              },
              Math.max(0, item.enqueueAt - Date.now()),
            );
          }),
      ),
    );
    const longest = Math.max(...cases.map((c) => c.delaySeconds));
    const received = await waitForDelivery(
      stack,
      enqueued.map((m) => m.id),
      setupMs + longest * 1000 + perCase * STAGGER_MS + 120_000,
    );
    for (const timer of timers) clearTimeout(timer);

    const baseline = spread(timerLateness);
    const rows: BenchRow[] = [];
    const perPath: Record<string, Spread & { min: number; path: string }> = {};
    cases.forEach((pathCase, caseIndex) => {
      const lateness = enqueued
        .filter((m) => m.caseIndex === caseIndex)
        .map((m) => (received.get(m.id)?.getTime() ?? Number.NaN) - m.sendAt.getTime());
      const s = spread(lateness);
      perPath[pathCase.name] = { ...s, min: Math.min(...lateness), path: pathCase.path };
      options.log(
        `  ${pathCase.name.padEnd(28)} p50 ${round(s.p50, 0)} ms  p99 ${round(s.p99, 0)} ms  max ${round(s.max, 0)} ms  min ${round(Math.min(...lateness), 0)} ms  (${pathCase.path})`,
      );
      rows.push({
        metric: `lateness ${pathCase.name} p99 (p50 ${round(s.p50, 0)}, max ${round(s.max, 0)})`,
        value: round(s.p99, 0),
        unit: 'ms',
        baseline: { label: 'setTimeout p99', value: round(baseline.p99, 1) },
        comparison: { kind: 'ratio', value: round(s.p99 / Math.max(baseline.p99, 1), 1) },
        goal: `p99 ≤ ${GOAL_P99_MS} ms`,
        pass: withinGoal(s.p99, { max: GOAL_P99_MS }),
      });
    });
    options.log(
      `  baseline setTimeout            p50 ${round(baseline.p50, 1)} ms  p99 ${round(baseline.p99, 1)} ms  max ${round(baseline.max, 1)} ms`,
    );
    return {
      name: 'precision',
      title: `Scheduling precision: lateness at the SMTP sink (${perCase} messages per path; D=${directMax} s, lead ${lead} s)`,
      rows,
      details: {
        perCase,
        compression: { POSTDATE_DIRECT_DELAY_MAX_SECONDS: directMax, POSTDATE_SCHEDULE_LEAD_SECONDS: lead },
        staggerMs: STAGGER_MS,
        baselineSetTimeout: baseline,
        paths: perPath,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack.stop();
  }
}
