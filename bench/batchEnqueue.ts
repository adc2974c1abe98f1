import { randomUUID } from 'node:crypto';
import { installAwsRequestCounter } from './awsRequestCounter.js';
import type { BenchOptions, BenchResult } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import { enqueue, enqueueBody, inParallel, startBenchStack } from './benchStack.js';
import { DURATION_MODEL_MS, FUNCTION_MEMORY_MB, PRICES } from './prices.js';
import { round } from './stats.js';

const ITEMS = 100;
const BODY_BYTES = 1024;
/** The single enqueues run as enqueueLatency.ts runs them. */
const CONCURRENCY = 8;
/** Due later: no sender or SMTP work shares the local stack's process while the rounds are timed. */
const DELAY_SECONDS = 600;
/** Issue 32: a batched message costs at most 0.7× a single enqueue, in dollars and in latency. */
const GOAL = 0.7;

interface Side {
  /** Wall time of the whole round, per message. */
  readonly msPerMessage: number[];
  writeUnits: number;
  readUnits: number;
  dynamodbCalls: number;
  messages: number;
}

/**
 * A 100-item `POST /v1/messages/batch` beside 100 single `POST /v1/messages` (DESIGN §3a), side by
 * side in one run on the local stack, rounds alternating: the enqueue latency per message (the
 * round's wall time ÷ 100) and the enqueue side's cost per message — API Gateway requests, Lambda
 * invocations of the api and the authorizer (duration modelled as in cost.ts), and the DynamoDB
 * units the api and the authorizer consumed (counted). The sending side is the same for both and
 * is left out.
 */
export async function batchEnqueue(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const rounds = options.quick ? 1 : 6;
  const counter = installAwsRequestCounter();
  // The authorizer at every request (API Gateway's cache off), as the costs below assume: its key
  // read counted per request, not once per 30 s of the run (decision 0250).
  const stack = await startBenchStack({}, { dynamodbJvm: 'peak', authorizerCacheTtlMs: 0 });
  const single: Side = { msPerMessage: [], writeUnits: 0, readUnits: 0, dynamodbCalls: 0, messages: 0 };
  const batch: Side = { msPerMessage: [], writeUnits: 0, readUnits: 0, dynamodbCalls: 0, messages: 0 };
  const runSingles = (count = ITEMS) =>
    inParallel(Array.from({ length: count }), CONCURRENCY, () =>
      enqueue(stack, { bodyBytes: BODY_BYTES, key: randomUUID(), delaySeconds: DELAY_SECONDS }),
    );
  const runBatch = async (count = ITEMS) => {
    const messages = Array.from({ length: count }, () => {
      const key = randomUUID();
      return {
        idempotency_key: key,
        ...JSON.parse(enqueueBody({ bodyBytes: BODY_BYTES, key, delaySeconds: DELAY_SECONDS })),
      };
    });
    const response = await fetch(`${stack.apiUrl}/v1/messages/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages }),
    });
    const text = await response.text();
    const results = (JSON.parse(text) as { results?: { status: number }[] }).results ?? [];
    if (response.status !== 200 || results.some((result) => result.status !== 202)) {
      throw new Error(`batch answered ${response.status}: ${text.slice(0, 300)}`);
    }
  };
  const measured = async (side: Side, run: () => Promise<unknown>) => {
    counter.take();
    const t0 = performance.now();
    await run();
    side.msPerMessage.push((performance.now() - t0) / ITEMS);
    const calls = counter
      .take()
      .filter((r) => r.service === 'DynamoDB' && (r.origin === 'api' || r.origin === 'authorizer'));
    side.dynamodbCalls += calls.length;
    side.writeUnits += calls.reduce((sum, r) => sum + r.writeUnits, 0);
    side.readUnits += calls.reduce((sum, r) => sum + r.readUnits, 0);
    side.messages += ITEMS;
  };
  try {
    // A warm-up of each, not recorded (JIT, connection pools, DynamoDB Local's JVM).
    await runSingles(options.quick ? 16 : ITEMS);
    await runBatch(options.quick ? 16 : ITEMS);
    for (let round_ = 0; round_ < rounds; round_ += 1) {
      if (round_ % 2 === 0) {
        await measured(single, () => runSingles());
        await measured(batch, () => runBatch());
      } else {
        await measured(batch, () => runBatch());
        await measured(single, () => runSingles());
      }
    }
  } finally {
    counter.uninstall();
    await stack.stop();
  }
  const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const perMillion = (side: Side, requestsPerMessage: number) => {
    const calls = side.dynamodbCalls / side.messages;
    // Each request invokes the authorizer and the api once (no authorizer cache: the worst case).
    const gbSeconds =
      (requestsPerMessage *
        (2 * DURATION_MODEL_MS.handlerOverhead * (FUNCTION_MEMORY_MB.api + FUNCTION_MEMORY_MB.authorizer)) +
        calls * DURATION_MODEL_MS.perDynamodbCall * FUNCTION_MEMORY_MB.api) /
      1000 /
      1024;
    const usd =
      requestsPerMessage * (PRICES.httpApiRequest.usd + 2 * PRICES.lambdaRequest.usd) +
      gbSeconds * PRICES.lambdaArmGbSecond.usd +
      (side.writeUnits / side.messages) * PRICES.dynamodbWriteRequestUnit.usd +
      (side.readUnits / side.messages) * PRICES.dynamodbReadRequestUnit.usd;
    return usd * 1e6;
  };
  const singleUsd = perMillion(single, 1);
  const batchUsd = perMillion(batch, 1 / ITEMS);
  const singleMs = mean(single.msPerMessage);
  const batchMs = mean(batch.msPerMessage);
  options.log(
    `  per message: single ${round(singleMs, 2)} ms, $${round(singleUsd, 3)}/M; batch of ${ITEMS} ${round(batchMs, 2)} ms, $${round(batchUsd, 3)}/M`,
  );
  return {
    name: 'batchEnqueue',
    title: `Batch enqueue: one POST /v1/messages/batch of ${ITEMS} beside ${ITEMS} single enqueues (concurrency ${CONCURRENCY}), per message`,
    rows: [
      ratioRow({
        metric: 'enqueue latency per message',
        value: round(batchMs, 3),
        unit: 'ms',
        baselineLabel: 'single enqueue',
        baseline: round(singleMs, 3),
        goal: { text: `≤ ${GOAL}×`, max: GOAL },
      }),
      ratioRow({
        metric: 'enqueue cost per million messages',
        value: round(batchUsd, 3),
        unit: 'USD',
        baselineLabel: 'single enqueue',
        baseline: round(singleUsd, 3),
        goal: { text: `≤ ${GOAL}×`, max: GOAL },
        note: 'API Gateway, api + authorizer invocations (duration modelled), DynamoDB units counted',
      }),
    ],
    details: {
      rounds,
      items: ITEMS,
      bodyBytes: BODY_BYTES,
      single: { ...single, meanMsPerMessage: singleMs, usdPerMillion: singleUsd },
      batch: { ...batch, meanMsPerMessage: batchMs, usdPerMillion: batchUsd },
    },
    seconds: (Date.now() - started) / 1000,
  };
}
