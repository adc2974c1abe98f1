import { installAwsRequestCounter } from './awsRequestCounter.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import { SHORT_LEASE_ENV, SHORT_LEASE_SECONDS, startBenchStack, waitOutShortLease } from './benchStack.js';
import { billOf, settle } from './cost.js';
import { postdateTarget } from './mailTarget.js';
import { round, sleep, spread } from './stats.js';

/**
 * The api's own copy of an immediate message (`POSTDATE_API_IMMEDIATE_COPY`, issue 21's lever),
 * weighed on both sides in one run: the immediate path's lateness at the SMTP sink, and the
 * dollars per million the second copy adds, with the copy off and then on (a fresh local stack
 * each, the same machine, the same few minutes).
 *
 * The relay's copy still reaches the sender, 5 s after the api's. One that meets a send still
 * running is hidden until the lease ends, then read and dropped: each stack shortens the lease
 * (benchStack.ts, SHORT_LEASE_ENV) and waits it out, so that those late requests are counted too.
 */
const BODY_BYTES = 1024;
const SPACING_MS = 500;

interface Round {
  readonly copy: boolean;
  readonly lateness: number[];
  readonly aloneUsdPerMillion: number;
  readonly busyUsdPerMillion: number;
  readonly sqsRequestsPerMessage: number;
  readonly dynamodbCallsPerMessage: number;
}

export async function immediateCopy(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const perRound = options.quick ? 8 : 30;
  // One stack a side, off first: each waits out the lease twice (after its warm-up and its messages).
  const counter = installAwsRequestCounter();
  const rounds: Round[] = [];
  try {
    for (const copy of [false, true]) {
      const side = await oneRound(copy, perRound, counter);
      rounds.push(side);
      const s = spread(side.lateness);
      options.log(
        `  api copy ${copy ? 'on ' : 'off'}: lateness p50 ${round(s.p50, 0)} ms  p99 ${round(s.p99, 0)} ms  max ${round(s.max, 0)} ms; $${round(side.aloneUsdPerMillion, 3)}/M alone, $${round(side.busyUsdPerMillion, 3)}/M busy; ${round(side.sqsRequestsPerMessage, 2)} SQS requests and ${round(side.dynamodbCallsPerMessage, 2)} DynamoDB calls a message`,
      );
    }
  } finally {
    counter.uninstall();
  }
  const [off, on] = rounds as [Round, Round];
  const [offLateness, onLateness] = [spread(off.lateness), spread(on.lateness)];
  const rows: BenchRow[] = [
    ratioRow({
      metric: `immediate lateness p99 with the api's copy (p50 ${round(onLateness.p50, 0)}, ${perRound} msgs)`,
      value: round(onLateness.p99, 0),
      unit: 'ms',
      baselineLabel: `without it, p99 (p50 ${round(offLateness.p50, 0)})`,
      baseline: round(offLateness.p99, 0),
      note: 'reported: the lever, beside its cost below',
    }),
    ratioRow({
      metric: "immediate 1 KB $ per million with the api's copy, alone",
      value: round(on.aloneUsdPerMillion, 3),
      unit: '$/M',
      baselineLabel: 'without it, $/M',
      baseline: round(off.aloneUsdPerMillion, 3),
    }),
    ratioRow({
      metric: "immediate 1 KB $ per million with the api's copy, busy (full batches)",
      value: round(on.busyUsdPerMillion, 3),
      unit: '$/M',
      baselineLabel: 'without it, $/M',
      baseline: round(off.busyUsdPerMillion, 3),
      note: `SQS requests a message ${round(on.sqsRequestsPerMessage, 2)} vs ${round(off.sqsRequestsPerMessage, 2)}; DynamoDB calls ${round(on.dynamodbCallsPerMessage, 2)} vs ${round(off.dynamodbCallsPerMessage, 2)}; log bytes not counted here (bench cost counts them)`,
    }),
  ];
  return {
    name: 'immediateCopy',
    title: "the api's own copy of an immediate message, off and on in one run",
    rows,
    details: { perRound, leaseSeconds: SHORT_LEASE_SECONDS, rounds },
    seconds: (Date.now() - started) / 1000,
  };
}

async function oneRound(
  copy: boolean,
  perRound: number,
  counter: ReturnType<typeof installAwsRequestCounter>,
): Promise<Round> {
  const stack = await startBenchStack(
    { ...SHORT_LEASE_ENV, POSTDATE_API_IMMEDIATE_COPY: String(copy) },
    { countSandboxRequests: true },
  );
  try {
    const target = postdateTarget(stack);
    await target.warm();
    // The warm-up's second copies come back after the lease: wait them out before counting.
    await waitOutShortLease();
    await settle(stack);
    counter.take();
    const submitted = [];
    for (let i = 0; i < perRound; i += 1) {
      if (i > 0) await sleep(SPACING_MS);
      submitted.push(await target.submit({ bodyBytes: BODY_BYTES, delaySeconds: 0 }));
    }
    const received = await target.received(
      submitted.map((m) => m.key),
      60_000,
    );
    await waitOutShortLease();
    await settle(stack);
    const requests = counter.take();
    const total = (lines: ReturnType<typeof billOf>) =>
      lines.reduce((sum, line) => sum + line.usdPerMillion, 0);
    const fromFunctions = requests.filter((r) => r.origin !== 'platform');
    return {
      copy,
      lateness: submitted.map((m) => (received.get(m.key)?.getTime() ?? Number.NaN) - m.dueAt),
      aloneUsdPerMillion: total(billOf(requests, 0, perRound)),
      busyUsdPerMillion: total(billOf(requests, 0, perRound, 'busy')),
      sqsRequestsPerMessage: fromFunctions.filter((r) => r.service === 'SQS').length / perRound,
      dynamodbCallsPerMessage: fromFunctions.filter((r) => r.service === 'DynamoDB').length / perRound,
    };
  } finally {
    await stack.stop();
  }
}
