import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { installAwsRequestCounter } from './awsRequestCounter.js';
import type { BenchOptions, BenchResult } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import { inParallel, startBenchStack } from './benchStack.js';
import { postdateTarget } from './mailTarget.js';
import { pooledNodemailerPerSecond, runPipeline } from './pipeline.js';
import { round } from './stats.js';

const BODY_BYTES = 1024;
const CONCURRENCY = 16;
const GOAL = 0.7;

/** DynamoDB calls that write, and how many item writes each one is. */
function itemWrites(command: string, inputBytes: number, items: number): number {
  if (command === 'TransactWriteItems') return items;
  if (command === 'BatchWriteItem') return items;
  if (command === 'PutItem' || command === 'UpdateItem' || command === 'DeleteItem') return 1;
  void inputBytes;
  return 0;
}

/**
 * Immediate messages per second end to end (enqueue → accepted by the SMTP sink, counted at the
 * sink) against two limits measured in the same run: the storage-bound limit (DynamoDB Local
 * conditional writes per second ÷ the item writes one message costs, counted during the pipeline
 * run) and raw nodemailer pooled sending to the same sink. The storage limit is measured before and
 * after the pipeline run and averaged.
 */
export async function throughput(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const messages = options.quick ? 150 : 400;
  const stack = await startBenchStack({}, { dynamodbJvm: 'peak', countSandboxRequests: true });
  const dynamodb = new DynamoDBClient({
    endpoint: stack.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const filler = 'x'.repeat(BODY_BYTES);
    const conditionalWritesPerSecond = async (count: number): Promise<number> => {
      const t0 = performance.now();
      await inParallel(Array.from({ length: count }), CONCURRENCY, () =>
        dynamodb.send(
          new PutItemCommand({
            TableName: stack.tableName,
            Item: { pk: { S: `BENCH#${randomUUID()}` }, sk: { S: 'BENCH' }, body: { S: filler } },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
      );
      return count / ((performance.now() - t0) / 1000);
    };

    // For the diagnosis only: three-item conditional transactions per second (the shape of enqueue;
    // sort keys that the relay's stream filter does not match).
    const transactionsPerSecond = async (count: number): Promise<number> => {
      const t0 = performance.now();
      await inParallel(Array.from({ length: count }), CONCURRENCY, () => {
        const id = randomUUID();
        return dynamodb.send(
          new TransactWriteItemsCommand({
            TransactItems: ['BENCH-A', 'BENCH-B', 'BENCH-C'].map((sk) => ({
              Put: {
                TableName: stack.tableName,
                Item: { pk: { S: `BENCH#${id}` }, sk: { S: sk }, body: { S: filler } },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            })),
          }),
        );
      });
      return count / ((performance.now() - t0) / 1000);
    };

    // Warm-up of both paths (DynamoDB Local's JIT needs a few thousand writes, pools), not recorded.
    await conditionalWritesPerSecond(messages * 2);
    const postdate = postdateTarget(stack);
    await postdate.warm();

    const writesBefore = await conditionalWritesPerSecond(messages * 2);

    // The pipeline: enqueue as fast as the front end takes them, time until the sink has them all.
    const counter = installAwsRequestCounter();
    let pipelinePerSecond: number;
    let writesPerMessage: number;
    let nodeCpuShare: number;
    try {
      const run = await runPipeline(postdate, { messages, bodyBytes: BODY_BYTES, concurrency: CONCURRENCY });
      pipelinePerSecond = run.perSecond;
      nodeCpuShare = run.nodeCpuShare;
      await stack.idle();
      const writes = counter
        .take()
        .filter((r) => r.service === 'DynamoDB' && r.origin !== 'platform' && r.origin !== 'other')
        .reduce((sum, r) => sum + itemWrites(r.command, r.inputBytes, r.items), 0);
      writesPerMessage = writes / messages;
      options.log(
        `  pipeline: ${messages} messages, ${round(pipelinePerSecond, 1)}/s end to end (enqueue alone ${round(run.enqueuePerSecond, 1)}/s), ${round(writesPerMessage, 2)} item writes per message; the Node process used ${round(nodeCpuShare * 100, 0)} % of a core`,
      );
    } finally {
      counter.uninstall();
    }

    const writesAfter = await conditionalWritesPerSecond(messages * 2);
    const writesPerSecond = (writesBefore + writesAfter) / 2;
    const transactions = await transactionsPerSecond(messages);
    // What storage allows when enqueue's three items are one transaction and the sender's two
    // updates are single writes: 1 / (1/T + 2/W).
    const transactionAwareBound = 1 / (1 / transactions + 2 / writesPerSecond);
    options.log(
      `  DynamoDB Local 3-item transactions: ${round(transactions, 0)}/s → with them the storage bound is ${round(transactionAwareBound, 1)} messages/s (ratio ${round(pipelinePerSecond / transactionAwareBound, 2)})`,
    );
    const storageBound = writesPerSecond / writesPerMessage;
    options.log(
      `  DynamoDB Local conditional writes: ${round(writesBefore, 0)}/s before, ${round(writesAfter, 0)}/s after → storage-bound ${round(storageBound, 1)} messages/s`,
    );

    // Raw nodemailer: a pooled transport straight to the same sink, same message size.
    const sink = stack.smtpSink;
    if (!sink) throw new Error('the local stack has no SMTP sink');
    const rawPerSecond = await pooledNodemailerPerSecond(sink, {
      messages,
      bodyBytes: BODY_BYTES,
      concurrency: CONCURRENCY,
    });
    options.log(`  raw nodemailer pooled: ${round(rawPerSecond, 1)} messages/s`);

    return {
      name: 'throughput',
      title: `Throughput: immediate ${BODY_BYTES} B messages end to end (${messages} messages)`,
      rows: [
        ratioRow({
          metric: 'end to end vs storage-bound',
          value: round(pipelinePerSecond, 1),
          unit: 'msg/s',
          baselineLabel: `DynamoDB Local ${round(writesPerSecond, 0)} cond. writes/s ÷ ${round(writesPerMessage, 2)}`,
          baseline: round(storageBound, 1),
          goal: { text: `≥ ${GOAL}×`, min: GOAL },
        }),
        ratioRow({
          metric: 'end to end vs raw nodemailer pool',
          value: round(pipelinePerSecond, 1),
          unit: 'msg/s',
          baselineLabel: 'nodemailer pooled → same sink',
          baseline: round(rawPerSecond, 1),
          note: 'reported, no goal',
        }),
      ],
      details: {
        messages,
        bodyBytes: BODY_BYTES,
        concurrency: CONCURRENCY,
        pipelinePerSecond,
        writesPerMessage,
        conditionalWritesPerSecond: { before: writesBefore, after: writesAfter },
        storageBound,
        transactionsPerSecond: transactions,
        transactionAwareStorageBound: transactionAwareBound,
        rawNodemailerPerSecond: rawPerSecond,
        nodeCpuShareOfOneCore: nodeCpuShare,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    dynamodb.destroy();
    await stack.stop();
  }
}
