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
 * dollars per million the second copy adds, with the copy off and on in alternating rounds (a fresh
 * local stack each, the same machine, the same minute).
 *
 * The relay's copy still reaches the sender. When it arrives while the first copy's send holds the
 * lease it is hidden until the lease ends, then read and dropped: every round shortens the lease
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
  // Each round waits out the lease twice (after the warm-up, after the measured messages).
  const order = [false, true];
  const counter = installAwsRequestCounter();
  const rounds: Round[] = [];
  try {
    for (const copy of order) {
      rounds.push(await oneRound(copy, perRound, counter));
      const last = rounds.at(-1) as Round;
      const s = spread(last.lateness);
      options.log(
        `  api copy ${copy ? 'on ' : 'off'}: lateness p50 ${round(s.p50, 0)} ms  p99 ${round(s.p99, 0)} ms  max ${round(s.max, 0)} ms; $${round(last.aloneUsdPerMillion, 3)}/M alone, $${round(last.busyUsdPerMillion, 3)}/M busy; ${round(last.sqsRequestsPerMessage, 2)} SQS requests and ${round(last.dynamodbCallsPerMessage, 2)} DynamoDB calls a message`,
      );
    }
  } finally {
    counter.uninstall();
  }
  const side = (copy: boolean) => {
    const mine = rounds.filter((r) => r.copy === copy);
    const mean = (pick: (r: Round) => number) => mine.reduce((sum, r) => sum + pick(r), 0) / mine.length;
    return {
      lateness: spread(mine.flatMap((r) => r.lateness)),
      alone: mean((r) => r.aloneUsdPerMillion),
      busy: mean((r) => r.busyUsdPerMillion),
      sqs: mean((r) => r.sqsRequestsPerMessage),
      dynamodb: mean((r) => r.dynamodbCallsPerMessage),
    };
  };
  const off = side(false);
  const on = side(true);
  const n = perRound * (order.length / 2);
  const rows: BenchRow[] = [
    ratioRow({
      metric: `immediate lateness p99 with the api's copy (p50 ${round(on.lateness.p50, 0)}, ${n} msgs)`,
      value: round(on.lateness.p99, 0),
      unit: 'ms',
      baselineLabel: `without it, p99 (p50 ${round(off.lateness.p50, 0)})`,
      baseline: round(off.lateness.p99, 0),
      note: 'reported: the lever, beside its cost below',
    }),
    ratioRow({
      metric: "immediate 1 KB $ per million with the api's copy, alone",
      value: round(on.alone, 3),
      unit: '$/M',
      baselineLabel: 'without it, $/M',
      baseline: round(off.alone, 3),
    }),
    ratioRow({
      metric: "immediate 1 KB $ per million with the api's copy, busy (full batches)",
      value: round(on.busy, 3),
      unit: '$/M',
      baselineLabel: 'without it, $/M',
      baseline: round(off.busy, 3),
      note: `SQS requests a message ${round(on.sqs, 2)} vs ${round(off.sqs, 2)}; DynamoDB calls ${round(on.dynamodb, 2)} vs ${round(off.dynamodb, 2)}; log bytes not counted here (bench cost counts them)`,
    }),
  ];
  return {
    name: 'immediateCopy',
    title: "the api's own copy of an immediate message, on and off in alternating rounds",
    rows,
    details: { perRound, order, leaseSeconds: SHORT_LEASE_SECONDS, rounds },
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
