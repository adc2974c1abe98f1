import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createTransport } from 'nodemailer';
import type { ReceivedMailSummary, SmtpSink } from '../local/smtp/smtpSink.js';
import { inParallel, waitForMail } from './benchStack.js';
import type { MailTarget } from './mailTarget.js';
import { parseRedisInfo } from './redisServer.js';

/**
 * The peer a Node user would pick instead of Postdate: BullMQ on Redis with a worker that sends
 * through one pooled nodemailer transport, as its documentation shows it. The job's Message-ID
 * is the key the sink knows it by; its due time is BullMQ's own (`timestamp + delay`).
 */
export interface BullmqPeer extends MailTarget {
  readonly bullmqVersion: string;
  readonly ioredisVersion: string;
  readonly redisVersion: string;
  /** How every row that compares with the peer names it, versions as read in this run. */
  readonly label: string;
  /** The label with the configuration, for the title. */
  readonly description: string;
  /** Jobs that failed (every attempt) and worker errors so far; a run with any is not a measurement. */
  readonly failures: () => readonly string[];
  close(): Promise<void>;
}

export interface BullmqPeerOptions {
  readonly redis: { readonly host: string; readonly port: number };
  readonly sink: Pick<SmtpSink, 'host' | 'port' | 'messages'>;
  /** Jobs one worker runs at once. */
  readonly concurrency: number;
}

interface MailJob {
  readonly messageId: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

const QUEUE = 'mail';
const WARM_JOBS = 20;

/** How the rows name the peer, e.g. "BullMQ 6.7.0 on Redis 7.0.15". */
export function peerLabel(versions: { readonly bullmq: string; readonly redis: string }): string {
  return `BullMQ ${versions.bullmq} on Redis ${versions.redis}`;
}

export async function startBullmqPeer(options: BullmqPeerOptions): Promise<BullmqPeer> {
  // Loaded here, not at the top: the other benchmarks (and a machine without the dev dependencies
  // installed for the peer) never load them.
  const { Queue, Worker } = await import('bullmq');
  const { Redis } = await import('ioredis');
  const require = createRequire(import.meta.url);
  const bullmqVersion = (require('bullmq/package.json') as { version: string }).version;
  const ioredisVersion = (require('ioredis/package.json') as { version: string }).version;

  // BullMQ's workers block on Redis, so they must never give up on a request (its documented setting).
  const connect = () =>
    new Redis({ host: options.redis.host, port: options.redis.port, maxRetriesPerRequest: null });
  const producerConnection = connect();
  const workerConnection = connect();
  const redisVersion =
    parseRedisInfo(await producerConnection.info('server')).get('redis_version') ?? 'unknown';

  const transport = createTransport({
    pool: true,
    host: options.sink.host,
    port: options.sink.port,
    secure: false,
    ignoreTLS: true,
  });
  const failures: string[] = [];
  const queue = new Queue<MailJob>(QUEUE, {
    connection: producerConnection,
    // What a mail queue usually sets: a few attempts with backoff, finished jobs not kept.
    defaultJobOptions: {
      attempts: 3,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    },
  });
  const worker = new Worker<MailJob>(
    QUEUE,
    async function sendMailJob(job) {
      await transport.sendMail({
        from: 'peer@peer.local',
        to: job.data.to,
        subject: job.data.subject,
        text: job.data.text,
        messageId: job.data.messageId,
        headers: { 'X-Bench': 'bullmq' },
      });
    },
    { connection: workerConnection, concurrency: options.concurrency },
  );
  worker.on('failed', (job, error) => {
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) failures.push(`job ${job.id}: ${error.message}`);
  });
  worker.on('error', (error) => failures.push(`worker: ${error.message}`));
  await worker.waitUntilReady();

  const keyOf = (mail: ReceivedMailSummary) => mail.messageId;
  const peer: BullmqPeer = {
    bullmqVersion,
    ioredisVersion,
    redisVersion,
    label: peerLabel({ bullmq: bullmqVersion, redis: redisVersion }),
    description: `${peerLabel({ bullmq: bullmqVersion, redis: redisVersion })} (ioredis ${ioredisVersion}; AOF fsynced every second) with a pooled nodemailer worker, concurrency ${options.concurrency}`,
    failures: () => [...failures],
    async submit({ bodyBytes, delaySeconds }) {
      const messageId = `<${randomUUID()}@peer.bench>`;
      const job = await queue.add(
        'send',
        { messageId, to: 'bench@example.com', subject: `peer ${messageId}`, text: 'x'.repeat(bodyBytes) },
        delaySeconds > 0 ? { delay: delaySeconds * 1000 } : {},
      );
      return { key: messageId, dueAt: job.timestamp + (job.opts.delay ?? 0) };
    },
    received: (keys, timeoutMs) => waitForMail(options.sink, keys, timeoutMs, keyOf),
    async warm() {
      const warm = await inParallel(Array.from({ length: WARM_JOBS }), options.concurrency, () =>
        peer.submit({ bodyBytes: 10, delaySeconds: 0 }),
      );
      await peer.received(
        warm.map((m) => m.key),
        60_000,
      );
    },
    async close() {
      await worker.close();
      await queue.close();
      transport.close();
      await Promise.all([producerConnection.quit(), workerConnection.quit()]);
    },
  };
  return peer;
}
