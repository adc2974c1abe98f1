import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { BenchOptions, BenchResult } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import { enqueue, enqueueBody, inParallel, startBenchStack } from './benchStack.js';
import { round, spread } from './stats.js';

const CONCURRENCY = 8;
const BODY_BYTES = 1024;
const GOAL = 2;
/**
 * The messages are due in ten minutes: the relay dispatches each one (as it would on AWS, in its
 * own function), but no sender or SMTP work shares the local stack's single Node process with the
 * api handler while the rounds are timed. On AWS the api function has a process to itself.
 */
const DELAY_SECONDS = 600;

/**
 * Latency of `POST /v1/messages` through the local HTTP front end (authorizer, api handler, two
 * conditional puts on DynamoDB Local) against one bare `PutItem` of an item as large as the request body,
 * to the same DynamoDB Local, at the same concurrency. Rounds alternate between the two so that
 * both see the same machine.
 */
export async function enqueueLatency(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const rounds = options.quick ? 3 : 8;
  const perRound = options.quick ? 40 : 60;
  const stack = await startBenchStack({}, { dynamodbJvm: 'peak' });
  const dynamodb = new DynamoDBClient({
    endpoint: stack.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const api: number[] = [];
  const put: number[] = [];
  try {
    const requestBytes = Buffer.byteLength(
      enqueueBody({ bodyBytes: BODY_BYTES, key: randomUUID(), delaySeconds: DELAY_SECONDS }),
    );
    const filler = 'x'.repeat(requestBytes);
    const timed = async (task: () => Promise<unknown>): Promise<number> => {
      const t0 = performance.now();
      await task();
      return performance.now() - t0;
    };
    const runApi = () =>
      inParallel(Array.from({ length: perRound }), CONCURRENCY, () =>
        timed(() =>
          enqueue(stack, { bodyBytes: BODY_BYTES, key: randomUUID(), delaySeconds: DELAY_SECONDS }),
        ),
      );
    const runPut = () =>
      inParallel(Array.from({ length: perRound }), CONCURRENCY, () =>
        timed(() =>
          dynamodb.send(
            new PutItemCommand({
              TableName: stack.tableName,
              Item: { pk: { S: `BENCH#${randomUUID()}` }, sk: { S: 'BENCH' }, body: { S: filler } },
            }),
          ),
        ),
      );
    // A warm-up round of each, not recorded (JIT, connection pools, DynamoDB Local's JVM).
    await runApi();
    await runPut();
    // Nothing counts or times the requests during the rounds: the request counter takes a stack
    // trace per AWS call, which cost the api rounds alone (not the PutItem rounds) about a seventh of
    // the process's time (docs/performance.md, enqueueLatency).
    for (let round_ = 0; round_ < rounds; round_ += 1) {
      if (round_ % 2 === 0) {
        api.push(...(await runApi()));
        put.push(...(await runPut()));
      } else {
        put.push(...(await runPut()));
        api.push(...(await runApi()));
      }
    }
    const meanEnqueue = api.reduce((sum, v) => sum + v, 0) / api.length;
    const apiSpread = spread(api);
    const putSpread = spread(put);
    options.log(
      `  POST /v1/messages p50 ${round(apiSpread.p50, 1)} ms p99 ${round(apiSpread.p99, 1)} ms; PutItem p50 ${round(putSpread.p50, 1)} ms p99 ${round(putSpread.p99, 1)} ms`,
    );
    return {
      name: 'enqueueLatency',
      title: `Enqueue latency: POST /v1/messages vs one bare PutItem (${requestBytes} B, concurrency ${CONCURRENCY})`,
      rows: [
        ratioRow({
          metric: 'enqueue p50',
          value: round(apiSpread.p50, 2),
          unit: 'ms',
          baselineLabel: 'PutItem p50',
          baseline: round(putSpread.p50, 2),
          goal: { text: `≤ ${GOAL}×`, max: GOAL },
        }),
        ratioRow({
          metric: 'enqueue p99',
          value: round(apiSpread.p99, 2),
          unit: 'ms',
          baselineLabel: 'PutItem p99',
          baseline: round(putSpread.p99, 2),
          goal: { text: `≤ ${GOAL}×`, max: GOAL },
        }),
      ],
      details: {
        concurrency: CONCURRENCY,
        delaySeconds: DELAY_SECONDS,
        requestBytes,
        rounds,
        perRound,
        api: apiSpread,
        putItem: putSpread,
        meanEnqueueMs: meanEnqueue,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    dynamodb.destroy();
    await stack.stop();
  }
}
