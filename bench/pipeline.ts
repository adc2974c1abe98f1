import { createTransport } from 'nodemailer';
import { inParallel } from './benchStack.js';
import type { MailTarget } from './mailTarget.js';

/**
 * The end-to-end runs the throughput and peer benchmarks share: a mail target's pipeline (Postdate
 * on the local stack, or a peer), and raw pooled nodemailer to an SMTP sink. Both count at the sink.
 */
export interface PipelineSettings {
  readonly messages: number;
  readonly bodyBytes: number;
  /** Requests in flight at once (enqueue calls, or sendMail calls for raw nodemailer). */
  readonly concurrency: number;
}

export interface PipelineRun {
  readonly messages: number;
  /** Messages per second from the first enqueue to the last message accepted by the sink. */
  readonly perSecond: number;
  /** Messages per second the target took them (enqueue alone). */
  readonly enqueuePerSecond: number;
  readonly wallSeconds: number;
  /** The share of one core this Node process (front end, functions or workers) used during the run. */
  readonly nodeCpuShare: number;
}

/** Messages per second between `startedAt` and the latest receive time (epoch ms). */
export function ratePerSecond(count: number, startedAt: number, receiveTimes: Iterable<Date>): number {
  let last = Number.NEGATIVE_INFINITY;
  for (const time of receiveTimes) last = Math.max(last, time.getTime());
  const seconds = (last - startedAt) / 1000;
  return seconds > 0 ? count / seconds : Number.NaN;
}

/** The rate of several runs taken together: all their messages over all their time. */
export function combinedRate(
  runs: readonly { readonly messages: number; readonly perSecond: number }[],
): number {
  let messages = 0;
  let seconds = 0;
  for (const run of runs) {
    messages += run.messages;
    seconds += run.messages / run.perSecond;
  }
  return seconds > 0 ? messages / seconds : Number.NaN;
}

/**
 * Immediate messages submitted as fast as `target` takes them, `settings.concurrency` at a time;
 * the clock stops at the last one the SMTP sink accepted.
 */
export async function runPipeline(target: MailTarget, settings: PipelineSettings): Promise<PipelineRun> {
  const { messages } = settings;
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  const submitted = await inParallel(Array.from({ length: messages }), settings.concurrency, () =>
    target.submit({ bodyBytes: settings.bodyBytes, delaySeconds: 0 }),
  );
  const enqueueSeconds = (Date.now() - t0) / 1000;
  const received = await target.received(
    submitted.map((m) => m.key),
    300_000,
  );
  const wallSeconds = (Date.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    messages,
    perSecond: ratePerSecond(messages, t0, received.values()),
    enqueuePerSecond: messages / enqueueSeconds,
    wallSeconds,
    nodeCpuShare: (cpu.user + cpu.system) / 1e6 / wallSeconds,
  };
}

/**
 * Raw nodemailer: one pooled transport (nodemailer's default pool) straight to `sink`, the same
 * message size, `settings.concurrency` sendMail calls in flight. Messages per second.
 */
export async function pooledNodemailerPerSecond(
  sink: { readonly host: string; readonly port: number },
  settings: PipelineSettings,
): Promise<number> {
  const transport = createTransport({
    pool: true,
    host: sink.host,
    port: sink.port,
    secure: false,
    ignoreTLS: true,
  });
  const text = 'x'.repeat(settings.bodyBytes);
  try {
    await transport.sendMail({ from: 'bench@example.com', to: 'bench@example.com', subject: 'warm', text });
    const t0 = performance.now();
    await inParallel(Array.from({ length: settings.messages }), settings.concurrency, (_, i) =>
      transport.sendMail({
        from: 'postdate@postdate.local',
        to: 'bench@example.com',
        subject: `raw ${i}`,
        text,
        headers: { 'X-Bench': 'postdate' },
      }),
    );
    return settings.messages / ((performance.now() - t0) / 1000);
  } finally {
    transport.close();
  }
}
