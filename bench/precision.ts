import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { budgetRow, withinGoal } from './benchResult.js';
import { startBenchStack } from './benchStack.js';
import { localTimeCases, measureLateness, precisionSetup, STAGGER_MS } from './lateness.js';
import { postdateTarget } from './mailTarget.js';
import { round, type Spread, spread } from './stats.js';
import { startWebhookLatencyProbe } from './webhookLatency.js';

const GOAL_P99_MS = 500;
/** Issue 32: a status change's webhook arrives within 1 s at p99. */
const WEBHOOK_GOAL_P99_MS = 1000;
const BODY_BYTES = 1024;

/**
 * Scheduling precision: lateness = the SMTP sink's receive time − the message's `send_at`, per
 * dispatch path, against a bare `setTimeout` armed for the same instant in the same process (its
 * lateness is what the event loop alone adds on this machine).
 *
 * Time compression: the production thresholds (15 min direct to SQS, 90 s schedule lead) are
 * scaled down through the same variables the Lambdas read, so every code path runs in seconds
 * (lateness.ts, precisionSetup).
 *
 * Beside it, in the same run: the webhook latency (bench/webhookLatency.ts), the time from each status
 * change of these messages (`message.scheduled` at acceptance, `message.sent`) to its webhook's
 * arrival at a receiver subscribed to the local tenant.
 */
export async function precision(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const setup = precisionSetup(options.quick);
  const { perCase, directMax, lead } = setup;
  // Beside the paths, the same paths with the time given as send_at_local (issue 33).
  const cases = [...setup.cases, ...localTimeCases(setup)];
  const stack = await startBenchStack(setup.env);
  const webhooks = await startWebhookLatencyProbe(stack);
  try {
    // Every message is enqueued at its own moment with its case's delay (`delay_seconds`, none for
    // 0 s; `send_at_local` for the local-time cases), so the relay sees exactly that much time left
    // and takes the case's path.
    const run = await measureLateness(postdateTarget(stack), {
      delaysSeconds: cases.map((c) => c.delaySeconds),
      timeZones: cases.map((c) => c.timeZone),
      perCase,
      bodyBytes: BODY_BYTES,
      // The warm-up's events (its 20 messages' acceptances, enqueued at once, then their sends) are
      // not the measured ones: they are reported apart below.
      warmedUp: () => webhooks.measureFrom(Date.now()),
    });

    const baseline = spread(run.timer);
    const rows: BenchRow[] = [];
    const perPath: Record<string, Spread & { min: number; path: string }> = {};
    cases.forEach((pathCase, caseIndex) => {
      const lateness = run.perCase[caseIndex] ?? [];
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

    // The last sends' events are still on their way: wait for the `message.sent` of every measured message.
    const messages = run.perCase.reduce((sum, lateness) => sum + lateness.length, 0);
    await webhooks.waitForSent(messages, 60_000);
    const latency = webhooks.spreads();
    for (const [type, s] of [['every event', latency.all] as const, ...Object.entries(latency.byType)]) {
      options.log(
        `  webhook ${type.padEnd(20)} status change → arrival p50 ${round(s.p50, 0)} ms  p99 ${round(s.p99, 0)} ms  max ${round(s.max, 0)} ms  (${s.n} events)`,
      );
    }
    options.log(
      `  webhook warm-up's events       status change → arrival p50 ${round(latency.warmUp.p50, 0)} ms  p99 ${round(latency.warmUp.p99, 0)} ms  max ${round(latency.warmUp.max, 0)} ms  (${latency.warmUp.n} events, not in the row)`,
    );
    // Where the time went, from the deliveries the API lists (bench/webhookLatency.ts, stages()).
    const stages = await webhooks.stages();
    for (const [part, s] of [
      ['status change → delivery made', stages.toProducer],
      ['delivery made → POST started', stages.queued],
      ['POST started → arrival', stages.post],
    ] as const) {
      options.log(
        `  webhook stage ${part.padEnd(30)} p50 ${round(s.p50, 0)} ms  p99 ${round(s.p99, 0)} ms  max ${round(s.max, 0)} ms  (${s.n})`,
      );
    }
    rows.push(
      budgetRow({
        metric: `webhook latency, status change → arrival p99 (p50 ${round(latency.all.p50, 0)}, max ${round(latency.all.max, 0)}; ${latency.all.n} events)`,
        value: round(latency.all.p99, 0),
        unit: 'ms',
        baselineLabel: 'setTimeout p99',
        baseline: round(baseline.p99, 1),
        max: WEBHOOK_GOAL_P99_MS,
        note: `${webhooks.arrived('message.sent')} of ${webhooks.arrived('message.scheduled')} sent events arrived (${messages} measured messages; the warm-up's ${latency.warmUp.n} events apart, p99 ${round(latency.warmUp.p99, 0)} ms); ${webhooks.unverified()} unverified`,
      }),
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
        webhookLatency: latency,
        webhookStages: stages,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await webhooks.close();
    await stack.stop();
  }
}
