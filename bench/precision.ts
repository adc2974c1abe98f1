import { randomUUID } from 'node:crypto';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { withinGoal } from './benchResult.js';
import { enqueue, inParallel, startBenchStack, waitForDelivery } from './benchStack.js';
import { round, type Spread, spread } from './stats.js';

const GOAL_P99_MS = 500;
const BODY_BYTES = 1024;
/** Consecutive messages of one case are due this far apart, so a case is a stream, not one burst. */
const STAGGER_MS = 173;

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

    // Deferred messages are enqueued up front, interleaving the cases; each is due at
    // base + its delay + its place in the case's stream. The set-up time is sized from the warm-up.
    const deferredCases = cases.filter((c) => c.delaySeconds > 0);
    const setupMs = 3000 + perCase * deferredCases.length * 400;
    const base = Date.now() + setupMs;
    const plan = cases.flatMap((pathCase, caseIndex) =>
      pathCase.delaySeconds === 0
        ? []
        : Array.from({ length: perCase }, (_, i) => ({
            caseIndex,
            sendAt: new Date(base + pathCase.delaySeconds * 1000 + i * STAGGER_MS + caseIndex * 37),
          })),
    );
    plan.sort((a, b) => a.sendAt.getTime() - b.sendAt.getTime());

    const timerLateness: number[] = [];
    const timers: NodeJS.Timeout[] = [];
    const armBaseline = (dueAt: number) => {
      // The baseline: a timer for the same instant, armed in the same process.
      timers.push(setTimeout(() => timerLateness.push(Date.now() - dueAt), Math.max(0, dueAt - Date.now())));
    };
    const deferred = await inParallel(plan, 4, async (item) => {
      const message = await enqueue(stack, { bodyBytes: BODY_BYTES, key: randomUUID(), sendAt: item.sendAt });
      armBaseline(message.sendAt.getTime());
      return { ...item, id: message.id, sendAt: message.sendAt };
    });
    // Delay 0: immediate messages (no send_at), enqueued one by one as a stream while the deferred
    // ones come due; their send_at is the acceptance time the API answers.
    const immediateIndex = cases.findIndex((c) => c.delaySeconds === 0);
    const immediate = await Promise.all(
      Array.from(
        { length: immediateIndex >= 0 ? perCase : 0 },
        (_, i) =>
          new Promise<{ caseIndex: number; id: string; sendAt: Date }>((resolve, reject) => {
            setTimeout(
              () => {
                enqueue(stack, { bodyBytes: BODY_BYTES, key: randomUUID() }).then(
                  (message) => resolve({ caseIndex: immediateIndex, id: message.id, sendAt: message.sendAt }),
                  reject,
                );
              },
              Math.max(0, base - Date.now()) + i * STAGGER_MS * 3,
            );
          }),
      ),
    );
    const enqueued = [...deferred, ...immediate];
    const lateEnqueues = deferred.filter((m, i) => m.sendAt.getTime() !== plan[i]?.sendAt.getTime()).length;
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
        enqueuedAfterDue: lateEnqueues,
        baselineSetTimeout: baseline,
        paths: perPath,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack.stop();
  }
}
