import { startSmtpSink } from '../local/smtp/smtpSink.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import { startBenchStack } from './benchStack.js';
import { startBullmqPeer } from './bullmqPeer.js';
import { type LatenessRun, measureLateness, precisionSetup } from './lateness.js';
import { type MailTarget, postdateTarget } from './mailTarget.js';
import { combinedRate, type PipelineRun, pooledNodemailerPerSecond, runPipeline } from './pipeline.js';
import { findExecutable, REDIS_INSTALL_HINT, startRedisServer } from './redisServer.js';
import { round, spread } from './stats.js';

const BODY_BYTES = 1024;
/** Enqueue calls in flight, and jobs the peer's worker runs at once. */
const CONCURRENCY = 16;
/** The peer's delayed jobs: "a few seconds", the same as Postdate's shortest delayed path. */
const PEER_DELAY_SECONDS = 5;
/** The peer's and raw nodemailer's end-to-end runs alternate in this many rounds. */
const ROUNDS = 3;
/** Issue 21: Postdate's lateness p99 on every path over the peer's delayed-job p99. */
const LATENESS_GOAL = 1;

/**
 * Postdate beside the peer a Node user would pick instead (BullMQ on Redis, AOF fsynced every
 * second, with a pooled nodemailer worker), measured in the same run on the same machine:
 *
 * - end to end: immediate 1 KB messages per second from enqueue to accepted by the SMTP sink
 *   (counted at the sink), for Postdate on the local stack (pipeline.ts, as bench/throughput.ts
 *   runs it), for the peer, and for raw pooled nodemailer to the peer's sink (the last two in
 *   alternating rounds);
 * - lateness (accepted at the sink − due time): Postdate on each dispatch path (lateness.ts, as
 *   bench/precision.ts runs it) against the peer's jobs delayed PEER_DELAY_SECONDS, in as many
 *   streams as Postdate has paths.
 *
 * Postdate runs first with only its local stack up, then the peer with only its Redis and its
 * own sink (the same smtp-server based sink the stack starts), so neither shares the two cores
 * with the other's idle pollers. Skipped, with one line saying how to install it, when
 * redis-server is not on the PATH.
 */
export async function peer(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const redisBinary = findExecutable('redis-server');
  if (!redisBinary) {
    const line = `skipped: redis-server is not on the PATH; ${REDIS_INSTALL_HINT}`;
    options.log(`  ${line}`);
    return {
      name: 'peer',
      title: 'Peer: BullMQ on Redis (skipped)',
      rows: [],
      details: { skipped: line },
      seconds: 0,
    };
  }
  const setup = precisionSetup(options.quick);
  const postdateMessages = options.quick ? 150 : 400;
  // The peer (and raw nodemailer) run an order of magnitude faster: more messages, so that the run
  // lasts seconds and not a fraction of one.
  const peerMessages = options.quick ? 600 : 3000;
  const roundMessages = peerMessages / ROUNDS;
  const delays = setup.cases.map((c) => c.delaySeconds);

  // Postdate: the pipeline, then every dispatch path, on one local stack.
  const stack = await startBenchStack(setup.env, { dynamodbJvm: 'peak' });
  let postdateRun: PipelineRun;
  let postdateLateness: LatenessRun;
  try {
    const postdate = postdateTarget(stack);
    postdateRun = await endToEnd('Postdate', postdate, postdateMessages, options.log);
    await stack.idle();
    postdateLateness = await measureLateness(postdate, {
      delaysSeconds: delays,
      perCase: setup.perCase,
      bodyBytes: BODY_BYTES,
    });
  } finally {
    await stack.stop();
  }

  // The peer: its own Redis and a sink of the same kind.
  const redis = await startRedisServer(redisBinary);
  const sink = await startSmtpSink({ port: 0 }).catch(async (error: unknown) => {
    await redis.stop();
    throw error;
  });
  let label: string;
  let description: string;
  let rounds: { raw: number[]; peer: number[] };
  let versions: Record<string, string>;
  let rawPerSecond: number;
  let peerPerSecond: number;
  let peerLateness: LatenessRun;
  const rawRound = async () => {
    const perSecond = await pooledNodemailerPerSecond(sink, {
      messages: roundMessages,
      bodyBytes: BODY_BYTES,
      concurrency: CONCURRENCY,
    });
    return { messages: roundMessages, perSecond };
  };
  try {
    const bullmq = await startBullmqPeer({ redis, sink, concurrency: CONCURRENCY });
    label = bullmq.label;
    description = bullmq.description;
    versions = { bullmq: bullmq.bullmqVersion, ioredis: bullmq.ioredisVersion, redis: bullmq.redisVersion };
    try {
      await bullmq.warm();
      // The peer and raw nodemailer alternate in rounds (raw first, then the peer first, …), so a
      // drift of the machine's load falls on both alike; each rate is over all of its rounds.
      const rawRuns: { messages: number; perSecond: number }[] = [];
      const peerRuns: PipelineRun[] = [];
      const peerRound = async () => {
        // Each wait scans the sink's list of messages: keep it to this round's.
        sink.clear();
        peerRuns.push(
          await runPipeline(bullmq, {
            messages: roundMessages,
            bodyBytes: BODY_BYTES,
            concurrency: CONCURRENCY,
          }),
        );
      };
      for (let i = 0; i < ROUNDS; i++) {
        if (i % 2 === 0) {
          rawRuns.push(await rawRound());
          await peerRound();
        } else {
          await peerRound();
          rawRuns.push(await rawRound());
        }
      }
      rawPerSecond = combinedRate(rawRuns);
      peerPerSecond = combinedRate(peerRuns);
      rounds = { raw: rawRuns.map((r) => r.perSecond), peer: peerRuns.map((r) => r.perSecond) };
      options.log(
        `  ${label} end to end: ${peerMessages} messages in ${ROUNDS} rounds, ${round(peerPerSecond, 1)}/s (rounds ${rounds.peer.map((r) => round(r, 0)).join(', ')}; enqueue alone ${peerRuns.map((r) => round(r.enqueuePerSecond, 0)).join(', ')}/s)`,
      );
      options.log(
        `  raw nodemailer pooled: ${round(rawPerSecond, 1)}/s (rounds ${rounds.raw.map((r) => round(r, 0)).join(', ')})`,
      );
      sink.clear();
      // As many streams as Postdate has paths, all delayed PEER_DELAY_SECONDS: the peer gets the
      // same message rate, and its p99 comes from as many samples as all of Postdate's paths.
      peerLateness = await measureLateness(bullmq, {
        delaysSeconds: delays.map(() => PEER_DELAY_SECONDS),
        perCase: setup.perCase,
        bodyBytes: BODY_BYTES,
      });
      const failures = bullmq.failures();
      if (failures.length > 0) throw new Error(`the peer failed jobs: ${failures.slice(0, 3).join('; ')}`);
    } finally {
      await bullmq.close();
    }
  } finally {
    await sink.stop();
    await redis.stop();
  }

  const peerSpread = spread(peerLateness.perCase.flat());
  const peerTimer = spread(peerLateness.timer);
  const postdateTimer = spread(postdateLateness.timer);
  options.log(
    `  ${label} delayed ${PEER_DELAY_SECONDS} s: lateness p50 ${round(peerSpread.p50, 0)} ms  p99 ${round(peerSpread.p99, 0)} ms  max ${round(peerSpread.max, 0)} ms (setTimeout p99 ${round(peerTimer.p99, 1)} ms)`,
  );
  const rows: BenchRow[] = [
    ratioRow({
      metric: `end to end: Postdate over ${label}`,
      value: round(postdateRun.perSecond, 1),
      unit: 'msg/s',
      baselineLabel: label,
      baseline: round(peerPerSecond, 1),
      note: 'reported, no goal',
    }),
    ratioRow({
      metric: `end to end: ${label} over raw nodemailer`,
      value: round(peerPerSecond, 1),
      unit: 'msg/s',
      baselineLabel: 'nodemailer pooled → same sink, alternating rounds',
      baseline: round(rawPerSecond, 1),
      note: 'reported, no goal',
    }),
    ratioRow({
      metric: 'end to end: Postdate over raw nodemailer',
      value: round(postdateRun.perSecond, 1),
      unit: 'msg/s',
      baselineLabel: 'nodemailer pooled → same kind of sink',
      baseline: round(rawPerSecond, 1),
      note: 'reported, no goal',
    }),
    {
      metric: `lateness ${label} delayed ${PEER_DELAY_SECONDS} s p99 (p50 ${round(peerSpread.p50, 0)}, max ${round(peerSpread.max, 0)})`,
      value: round(peerSpread.p99, 0),
      unit: 'ms',
      baseline: { label: 'setTimeout p99', value: round(peerTimer.p99, 1) },
      comparison: { kind: 'ratio', value: round(peerSpread.p99 / Math.max(peerTimer.p99, 1), 1) },
      note: "the peer's, the baseline of the rows below",
    },
  ];
  const postdatePaths: Record<string, unknown> = {};
  setup.cases.forEach((pathCase, caseIndex) => {
    const s = spread(postdateLateness.perCase[caseIndex] ?? []);
    postdatePaths[pathCase.name] = { ...s, path: pathCase.path };
    options.log(
      `  Postdate ${pathCase.name.padEnd(28)} p50 ${round(s.p50, 0)} ms  p99 ${round(s.p99, 0)} ms  max ${round(s.max, 0)} ms  (${pathCase.path})`,
    );
    rows.push(
      ratioRow({
        metric: `lateness ${pathCase.name} p99 (p50 ${round(s.p50, 0)}) over BullMQ's delayed-job p99`,
        value: round(s.p99, 0),
        unit: 'ms',
        baselineLabel: `${label}, delayed ${PEER_DELAY_SECONDS} s, p99`,
        baseline: round(peerSpread.p99, 0),
        goal: { text: `≤ ${LATENESS_GOAL}×`, max: LATENESS_GOAL },
      }),
    );
  });

  // The two systems run minutes apart on a shared machine: each phase's bare timer says how loaded it was.
  options.log(
    `  setTimeout p99 during Postdate's lateness run ${round(postdateTimer.p99, 1)} ms, during the peer's ${round(peerTimer.p99, 1)} ms`,
  );
  return {
    name: 'peer',
    title: `Peer: Postdate beside ${description}, same run (end to end ${postdateMessages} Postdate / ${peerMessages} peer messages of ${BODY_BYTES} B; lateness ${setup.perCase} messages per Postdate path, ${setup.perCase * delays.length} peer jobs delayed ${PEER_DELAY_SECONDS} s)`,
    rows,
    details: {
      versions,
      redis: { args: redis.args },
      bodyBytes: BODY_BYTES,
      concurrency: CONCURRENCY,
      endToEnd: {
        postdate: postdateRun,
        peer: { messages: peerMessages, perSecond: peerPerSecond, roundsPerSecond: rounds.peer },
        rawNodemailer: { messages: peerMessages, perSecond: rawPerSecond, roundsPerSecond: rounds.raw },
      },
      lateness: {
        compression: setup.env,
        postdate: { paths: postdatePaths, baselineSetTimeout: postdateTimer },
        peer: {
          delaySeconds: PEER_DELAY_SECONDS,
          streams: delays.length,
          ...peerSpread,
          baselineSetTimeout: peerTimer,
        },
      },
    },
    seconds: (Date.now() - started) / 1000,
  };
}

/** Warms `target`, then runs its end to end with the settings every system here gets. */
async function endToEnd(
  name: string,
  target: MailTarget,
  messages: number,
  log: (line: string) => void,
): Promise<PipelineRun> {
  await target.warm();
  const run = await runPipeline(target, { messages, bodyBytes: BODY_BYTES, concurrency: CONCURRENCY });
  log(
    `  ${name} end to end: ${messages} messages, ${round(run.perSecond, 1)}/s (enqueue alone ${round(run.enqueuePerSecond, 1)}/s)`,
  );
  return run;
}
