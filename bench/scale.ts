import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { buildOutboxWrite } from '../lambdas/outbox/outboxItems.js';
import { storedBodyItem } from '../lambdas/store/bodyContent.js';
import type { LocalStack } from '../local/localStack.js';
import { LOCAL_RESOURCES } from '../local/localStack.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import {
  enqueue,
  enqueueBody,
  findDynamoDbLocalPid,
  inParallel,
  procStatusKb,
  startBenchStack,
  waitForDelivery,
} from './benchStack.js';
import { rateBetween, round, sleep, windowRates } from './stats.js';

/**
 * The issue asks for 20,000. On this 2-core machine the local sender drains about 25–30 messages
 * per second, so 20,000 take about 13 minutes of drain alone — more than the whole `npm run bench`
 * may take (15 minutes). The default keeps scale near 4 minutes; `--scale-messages 20000` runs the
 * issue's number, and every row names the number it drained. docs/performance.md has both.
 */
export const ISSUE_MESSAGES = 20_000;
const DEFAULT_MESSAGES = 4_000;
const QUICK_MESSAGES = 1_000;
const BODY_BYTES = 1024;
/** Batch writes in flight while filling. */
const FILL_CONCURRENCY = 4;
/** A message is two items (state and body); BatchWriteItem takes 25. */
const MESSAGES_PER_BATCH = 12;
const WINDOW_SECONDS = 5;
const SAMPLE_MS = 1000;
/** SQS DelaySeconds tops out at 15 minutes: the common due time must stay below it. */
const MAX_DUE_IN_SECONDS = 840;
const MB = 1024 * 1024;
/** The drain gives up when the sink receives nothing for this long after the messages came due. */
const STALL_MS = 90_000;

/** One reading of memory and progress, every second from before the fill to the end of the drain. */
export interface MemorySample {
  /** Seconds since the due time (negative while filling). */
  readonly t: number;
  readonly rssMb: number;
  readonly heapUsedMb: number;
  /** DynamoDB Local's JVM (VmRSS), when its process was found. */
  readonly jvmRssMb?: number;
  readonly delivered: number;
}

/**
 * Scale: drain N queued messages (see DEFAULT_MESSAGES) through the real local stack while memory is
 * sampled every second. The messages are queued first: each one's state and body records are built
 * by the outbox helper (lambdas/outbox/outboxItems.ts, the records an API enqueue writes) and
 * written with BatchWriteItem (the fill is not what is measured, and batches make it several times
 * faster than one transaction per message), so the relay picks them up from the stream exactly as
 * after an enqueue. They all carry the SAME send_at a little in the future: the relay puts every
 * copy on the send queue with a DelaySeconds and they all become due together. From that instant
 * the sender drains them; the SMTP sink counts them.
 *
 * Baselines from the same run: the drain rate over the first 1–20 % of the messages vs over the
 * last 80–99 % (does it slow down?), and RSS before the fill vs the peak (does memory grow with
 * the backlog?).
 */
export async function scale(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const messages = options.scaleMessages ?? (options.quick ? QUICK_MESSAGES : DEFAULT_MESSAGES);
  const stack = await startBenchStack({}, { dynamodbJvm: 'peak' });
  const dynamodb = new DynamoDBClient({
    endpoint: stack.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const documents = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const sqs = new SQSClient({
    endpoint: stack.sqsEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const jvmPid = findDynamoDbLocalPid(stack.ports.dynamodb);
  options.log(
    jvmPid === undefined
      ? '  DynamoDB Local JVM not found in /proc: its memory is not measured'
      : `  DynamoDB Local JVM is pid ${jvmPid}: VmRSS sampled, VmHWM read at the end`,
  );
  const sink = stack.smtpSink;
  if (!sink) throw new Error('the local stack has no SMTP sink');

  // Deliveries are taken out of the sink as they are counted, so that the sink's own copy of every
  // mail (kept for the viewer) does not grow the process's memory with N.
  const wanted = new Set<string>();
  const deliveredAt = new Map<string, number>();
  const collect = () => {
    const mails = sink.messages();
    sink.clear();
    for (const mail of mails) {
      if (mail.postdateId && wanted.has(mail.postdateId) && !deliveredAt.has(mail.postdateId)) {
        deliveredAt.set(mail.postdateId, Date.parse(mail.receivedAt));
      }
    }
  };

  const samples: (Omit<MemorySample, 't'> & { at: number })[] = [];
  let dueAt = Number.NaN;
  const sample = () => {
    collect();
    const memory = process.memoryUsage();
    const jvm = jvmPid === undefined ? undefined : procStatusKb(jvmPid);
    samples.push({
      at: Date.now(),
      rssMb: round(memory.rss / MB, 1),
      heapUsedMb: round(memory.heapUsed / MB, 1),
      ...(jvm?.VmRSS !== undefined ? { jvmRssMb: round(jvm.VmRSS / 1024, 1) } : {}),
      delivered: deliveredAt.size,
    });
  };
  let sampler: NodeJS.Timeout | undefined;

  try {
    // Warm-up (handler imports, clients, DynamoDB Local's JIT), not measured.
    const warm = await inParallel(Array.from({ length: 20 }), 8, () =>
      enqueue(stack, { bodyBytes: BODY_BYTES, key: randomUUID() }),
    );
    await waitForDelivery(
      stack,
      warm.map((m) => m.id),
      60_000,
    );
    await stack.idle();
    sink.clear();

    // The fill, in two passes over the same messages, so that the common due time comes from a
    // measurement rather than a guess. First every message's body item (the relay's stream filter
    // lets no body through, so nothing moves yet), timed; then every state item, which carries the
    // send_at: the due time is the second pass's expected length (state items are smaller than
    // bodies) with a margin for the relay, which reads the stream while that pass goes on. Should
    // the pass overrun it, the drain starts before the last copies are queued; the details say so.
    const before = process.memoryUsage().rss / MB;
    const jvmBefore = jvmPid === undefined ? undefined : procStatusKb(jvmPid)?.VmRSS;
    sample();
    sampler = setInterval(sample, SAMPLE_MS);

    const keys = Array.from({ length: messages }, () => `scale-${randomUUID()}`);
    const chunks = Array.from({ length: Math.ceil(messages / MESSAGES_PER_BATCH) }, (_, i) =>
      keys.slice(i * MESSAGES_PER_BATCH, (i + 1) * MESSAGES_PER_BATCH),
    );
    const outboxWrite = (key: string, sendAt: Date) =>
      buildOutboxWrite({
        tableName: stack.tableName,
        tenant: LOCAL_RESOURCES.tenant,
        idempotencyKey: key,
        now: new Date(),
        body: JSON.parse(enqueueBody({ bodyBytes: BODY_BYTES, key, sendAt })),
        validation: { allowedFrom: ['*'], defaultFrom: 'postdate@postdate.local', maxHorizonDays: 400 },
      });
    const fillStarted = Date.now();
    // The body's only time-dependent field is its TTL (send_at + retention): a provisional send_at
    // 15 minutes ahead changes nothing the benchmark measures.
    const provisional = new Date(Date.now() + 900_000);
    await inParallel(chunks, FILL_CONCURRENCY, (chunk) =>
      batchPut(
        documents,
        stack.tableName,
        // The body item as the api writes it (its text compressed when that saves: bodyContent.ts).
        chunk.map((key) => ({ ...storedBodyItem(outboxWrite(key, provisional).body) })),
      ),
    );
    const bodySeconds = (Date.now() - fillStarted) / 1000;
    const dueInSeconds = Math.min(MAX_DUE_IN_SECONDS, Math.ceil(bodySeconds * 1.2 + 10));
    dueAt = Date.now() + dueInSeconds * 1000;
    const sendAt = new Date(dueAt);
    options.log(
      `  ${messages} bodies written in ${round(bodySeconds, 1)} s (${round(messages / bodySeconds, 0)}/s); every state record due in ${dueInSeconds} s`,
    );
    const statesStarted = Date.now();
    await inParallel(chunks, FILL_CONCURRENCY, (chunk) =>
      batchPut(
        documents,
        stack.tableName,
        chunk.map((key) => {
          const write = outboxWrite(key, sendAt);
          wanted.add(write.messageId);
          // The request's fingerprint covers its explicit send_at, which differs between the two
          // passes: the state carries its body's, as one enqueue's records do (else the sender
          // takes every body for another request's).
          return { ...write.state, fingerprint: outboxWrite(key, provisional).body.fingerprint };
        }),
      ),
    );
    const stateSeconds = (Date.now() - statesStarted) / 1000;
    const fillSeconds = (Date.now() - fillStarted) / 1000;
    options.log(
      `  ${messages} state records written in ${round(stateSeconds, 1)} s; send_at ${sendAt.toISOString()}`,
    );

    // How many copies the relay had put on the queue (delayed) when they came due.
    const queuedAtDue = await waitForQueued(sqs, stack, messages, dueAt);
    options.log(
      `  ${queuedAtDue.delayed} of ${messages} copies were on the send queue, delayed, ${round(queuedAtDue.secondsBeforeDue, 1)} s before they came due`,
    );

    // The drain: wait until the sink has every message. A slow machine only makes it longer; it
    // gives up when nothing arrives for STALL_MS (something is stuck, not slow).
    let lastCount = -1;
    let lastProgress = Math.max(Date.now(), dueAt);
    while (deliveredAt.size < messages && Date.now() - lastProgress < STALL_MS) {
      // Before the due time nothing can arrive: that is not a stall.
      await sleep(250);
      if (deliveredAt.size !== lastCount) {
        lastCount = deliveredAt.size;
        lastProgress = Date.now();
      }
    }
    collect();
    clearInterval(sampler);
    sampler = undefined;
    sample();
    const jvmPeak = jvmPid === undefined ? undefined : procStatusKb(jvmPid)?.VmHWM;

    const delivered = [...deliveredAt.values()].sort((a, b) => a - b);
    const missing = messages - delivered.length;
    if (missing > 0) {
      throw new Error(
        `${missing} of ${messages} messages not delivered: none arrived for ${STALL_MS / 1000} s (${delivered.length} did)`,
      );
    }
    const lastDelivery = delivered[delivered.length - 1] ?? dueAt;
    const drainSeconds = (lastDelivery - dueAt) / 1000;
    const overall = messages / drainSeconds;
    const early = rateBetween(delivered, 0.01, 0.2);
    const late = rateBetween(delivered, 0.8, 0.99);
    const windows = windowRates(delivered, dueAt, WINDOW_SECONDS);
    const peakRss = Math.max(...samples.map((s) => s.rssMb));
    const jvmSamples = samples.flatMap((s) => (s.jvmRssMb === undefined ? [] : [s.jvmRssMb]));
    const jvmPeakMb = jvmPeak === undefined ? undefined : jvmPeak / 1024;
    const jvmBeforeMb = jvmBefore === undefined ? undefined : jvmBefore / 1024;
    options.log(
      `  drained ${messages} in ${round(drainSeconds, 1)} s after they came due: ${round(overall, 1)} msg/s overall; first 1–20 % ${round(early, 1)}/s, last 80–99 % ${round(late, 1)}/s`,
    );
    options.log(
      `  RSS ${round(before, 0)} MB before the fill, peak ${round(peakRss, 0)} MB${jvmPeakMb === undefined ? '' : `; DynamoDB Local JVM ${round(jvmBeforeMb ?? Number.NaN, 0)} MB before, VmHWM ${round(jvmPeakMb, 0)} MB`}`,
    );

    const rows: BenchRow[] = [
      {
        metric: `drain ${messages} queued msgs, overall (${round(drainSeconds, 0)} s after due)`,
        value: round(overall, 1),
        unit: 'msg/s',
        note:
          messages < ISSUE_MESSAGES
            ? `reported, no goal; the issue's ${ISSUE_MESSAGES}: --scale-messages ${ISSUE_MESSAGES}`
            : 'reported, no goal',
      },
      ratioRow({
        metric: 'drain rate, last 80–99 % vs first 1–20 % of msgs',
        value: round(late, 1),
        unit: 'msg/s',
        baselineLabel: 'first 1–20 %',
        baseline: round(early, 1),
        note: 'reported, no goal (1 = no slow-down)',
      }),
      ratioRow({
        metric: 'peak RSS, Node process (all functions, runners, emulators)',
        value: round(peakRss, 0),
        unit: 'MB',
        baselineLabel: 'RSS before the fill',
        baseline: round(before, 0),
        note: 'reported, no goal',
      }),
      ...(jvmPeakMb !== undefined && jvmBeforeMb !== undefined
        ? [
            ratioRow({
              metric: 'peak RSS, DynamoDB Local JVM (VmHWM)',
              value: round(jvmPeakMb, 0),
              unit: 'MB',
              baselineLabel: 'JVM RSS before the fill',
              baseline: round(jvmBeforeMb, 0),
              note: 'reported, no goal',
            }),
          ]
        : []),
    ];
    return {
      name: 'scale',
      title: `Scale: drain ${messages} queued ${BODY_BYTES} B messages through the local stack`,
      rows,
      details: {
        messages,
        bodyBytes: BODY_BYTES,
        fill: {
          how: 'records built by the outbox helper (buildOutboxWrite), written with BatchWriteItem; the relay takes them from the stream',
          concurrency: FILL_CONCURRENCY,
          bodyPassSeconds: bodySeconds,
          statePassSeconds: stateSeconds,
          seconds: fillSeconds,
          perSecond: messages / fillSeconds,
          dueInSeconds,
          queuedAtDue,
        },
        drain: {
          seconds: drainSeconds,
          overallPerSecond: overall,
          first1to20PercentPerSecond: early,
          last80to99PercentPerSecond: late,
          firstDeliveryAfterDueSeconds: ((delivered[0] ?? dueAt) - dueAt) / 1000,
          windowSeconds: WINDOW_SECONDS,
          windows,
        },
        memory: {
          rssBeforeMb: before,
          rssPeakMb: peakRss,
          jvm:
            jvmPid === undefined
              ? { measured: false, why: 'no java process with DynamoDBLocal.jar and this port in /proc' }
              : {
                  measured: true,
                  rssBeforeMb: jvmBeforeMb,
                  vmHwmMb: jvmPeakMb,
                  rssPeakSampledMb: jvmSamples.length > 0 ? Math.max(...jvmSamples) : undefined,
                },
          sampleMs: SAMPLE_MS,
          samples: samples.map(
            ({ at, ...rest }): MemorySample => ({ t: round((at - dueAt) / 1000, 1), ...rest }),
          ),
        },
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    if (sampler) clearInterval(sampler);
    sqs.destroy();
    dynamodb.destroy();
    await stack.stop();
  }
}

/** BatchWriteItem of up to 25 puts, with the unprocessed ones sent again. */
async function batchPut(
  documents: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Record<string, unknown>[],
): Promise<void> {
  let pending = items.map((item) => ({ PutRequest: { Item: item } }));
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 10) throw new Error(`${pending.length} items stayed unprocessed after 10 retries`);
    if (attempt > 0) await sleep(50 * attempt);
    const { UnprocessedItems } = await documents.send(
      new BatchWriteCommand({ RequestItems: { [tableName]: pending } }),
    );
    pending = (UnprocessedItems?.[tableName] ?? []).flatMap((request) =>
      request.PutRequest?.Item ? [{ PutRequest: { Item: request.PutRequest.Item } }] : [],
    );
  }
}

/** Waits until the relay has put every copy on the queue, or until they come due, whichever is first. */
async function waitForQueued(
  sqs: SQSClient,
  stack: LocalStack,
  messages: number,
  dueAt: number,
): Promise<{ delayed: number; secondsBeforeDue: number }> {
  for (;;) {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stack.queueUrls.send,
        AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
      }),
    );
    const delayed = Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0);
    const secondsBeforeDue = (dueAt - Date.now()) / 1000;
    if (delayed >= messages || secondsBeforeDue <= 0.5) return { delayed, secondsBeforeDue };
    await sleep(500);
  }
}
