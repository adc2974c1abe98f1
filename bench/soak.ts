import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { BenchOptions, BenchResult } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import {
  enqueue,
  findDynamoDbLocalPid,
  procStatusKb,
  startBenchStack,
  waitForDelivery,
} from './benchStack.js';
import { round, sleep, spread } from './stats.js';

const RATE_PER_SECOND = 10;
const BODY_BYTES = 1024;
const WINDOW_MS = 60_000;
/** A long run's cost per message may not grow by more than this from its first minute to its last. */
const GOAL = 1.25;
/** Linux's clock ticks per second, the unit of `/proc/PID/stat`'s CPU times. */
const TICKS_PER_SECOND = 100;

interface Window {
  readonly minute: number;
  readonly messages: number;
  readonly engineCpuMsPerMessage: number;
  readonly nodeCpuMsPerMessage: number;
  readonly enqueueP50Ms: number;
  readonly enqueueP99Ms: number;
  readonly engineRssMb: number;
}

/**
 * The local stack kept busy for a while, as a developer's `npm start` is through a day: immediate 1 KB
 * messages at a steady 10 a second (one in five due in 30 s), for 10 minutes (3 with `--quick`).
 * Each minute, DynamoDB Local's CPU per message (its JVM, from /proc), this process's (the stack's
 * functions, runners and emulators, and the client that enqueues), and the enqueue's latency. The
 * last minute is compared with the second (the first warms the JVM's JIT): a cost that grows with
 * what the stack has stored shows as a ratio above 1. Every message must reach the SMTP sink. What
 * it was written for: decision 0311 (the engine's GetRecords walked its stream's records).
 */
export async function soak(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const minutes = options.quick ? 3 : 10;
  const stack = await startBenchStack();
  const engine = findDynamoDbLocalPid(stack.ports.dynamodb);
  const ids: string[] = [];
  const windows: Window[] = [];
  try {
    if (engine === undefined)
      throw new Error('DynamoDB Local not found in /proc: the soak reads its CPU there (Linux)');
    let latencies: number[] = [];
    let windowStart = Date.now();
    let engineBefore = cpuTicks(engine);
    let nodeBefore = process.cpuUsage();
    let sentBefore = 0;
    const inFlight = new Set<Promise<void>>();
    // The first enqueue that failed: the run stops there and fails with it.
    let failed: unknown;
    let next = Date.now();
    while (windows.length < minutes && failed === undefined) {
      if (Date.now() >= next) {
        next += 1000 / RATE_PER_SECOND;
        const t0 = performance.now();
        const sent: Promise<void> = enqueue(stack, {
          bodyBytes: BODY_BYTES,
          key: randomUUID(),
          ...(ids.length % 5 === 4 ? { delaySeconds: 30 } : {}),
        })
          .then(
            ({ id }) => {
              latencies.push(performance.now() - t0);
              ids.push(id);
            },
            (error: unknown) => {
              failed ??= error;
            },
          )
          .finally(() => inFlight.delete(sent));
        inFlight.add(sent);
      }
      if (Date.now() - windowStart >= WINDOW_MS) {
        const engineNow = cpuTicks(engine);
        const node = process.cpuUsage(nodeBefore);
        const messages = ids.length - sentBefore;
        const { p50, p99 } = spread(latencies);
        const window: Window = {
          minute: windows.length + 1,
          messages,
          engineCpuMsPerMessage: round(((engineNow - engineBefore) * 1000) / TICKS_PER_SECOND / messages, 2),
          nodeCpuMsPerMessage: round((node.user + node.system) / 1000 / messages, 2),
          enqueueP50Ms: round(p50, 1),
          enqueueP99Ms: round(p99, 1),
          engineRssMb: round((procStatusKb(engine)?.VmRSS ?? Number.NaN) / 1024, 0),
        };
        windows.push(window);
        options.log(
          `  minute ${window.minute}: ${messages} messages, DynamoDB Local ${window.engineCpuMsPerMessage} ms CPU a message (RSS ${window.engineRssMb} MB), this process ${window.nodeCpuMsPerMessage} ms, enqueue p50 ${window.enqueueP50Ms} ms p99 ${window.enqueueP99Ms} ms`,
        );
        latencies = [];
        windowStart = Date.now();
        engineBefore = engineNow;
        nodeBefore = process.cpuUsage();
        sentBefore = ids.length;
      }
      await sleep(Math.max(0, next - Date.now()));
    }
    await Promise.all(inFlight);
    if (failed !== undefined) throw new Error('an enqueue of the soak failed', { cause: failed });
    await waitForDelivery(stack, ids, 120_000);
  } finally {
    await stack.stop();
  }
  const first = windows[1];
  const last = windows[windows.length - 1];
  if (!first || !last) throw new Error('the soak ended before its second minute');
  const versus = `minute ${first.minute}`;
  return {
    name: 'soak',
    title: `A long run: ${RATE_PER_SECOND} messages a second for ${minutes} minutes, its last minute against its second`,
    rows: [
      ratioRow({
        metric: `DynamoDB Local CPU a message, minute ${last.minute}`,
        value: last.engineCpuMsPerMessage,
        unit: 'ms',
        baselineLabel: versus,
        baseline: first.engineCpuMsPerMessage,
        goal: { text: `≤ ${GOAL}× (decision 0311)`, max: GOAL },
      }),
      ratioRow({
        metric: `the stack's Node process CPU a message, minute ${last.minute}`,
        value: last.nodeCpuMsPerMessage,
        unit: 'ms',
        baselineLabel: versus,
        baseline: first.nodeCpuMsPerMessage,
        goal: { text: `≤ ${GOAL}× (decision 0311)`, max: GOAL },
      }),
      ratioRow({
        metric: `enqueue p99, minute ${last.minute}`,
        value: last.enqueueP99Ms,
        unit: 'ms',
        baselineLabel: versus,
        baseline: first.enqueueP99Ms,
        note: `${ids.length} messages, every one at the sink`,
      }),
    ],
    details: { ratePerSecond: RATE_PER_SECOND, bodyBytes: BODY_BYTES, minutes, windows },
    seconds: (Date.now() - started) / 1000,
  };
}

/** The process's user and system CPU so far, in clock ticks (/proc/PID/stat's 14th and 15th fields). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}
