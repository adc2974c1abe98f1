/**
 * DESIGN §8: the same names configure the Lambdas and the local stack. §5 Rate: the rate is the
 * relay's, for the whole fleet, and each sender takes 1/`POSTDATE_SENDER_MAX_CONCURRENCY` of it (the
 * construct sets the variable to the send queue's event source `MaximumConcurrency`). So the local
 * stack runs `POSTDATE_SENDER_MAX_CONCURRENCY` senders at once, no more: one poller each, each with a
 * sandbox of its own (local/EMULATORS.md), counted here as they start.
 */
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack, startSenderEventSource } from '../../local/localStack.js';
import type { SqsRunner } from '../../local/runners/sqsRunner.js';
import { SANDBOX_STARTS_CHANNEL, type SandboxStart } from './fixtures/sandboxStarts.js';

const SANDBOX_STARTS = fileURLToPath(new URL('./fixtures/sandboxStarts.ts', import.meta.url));

/** The sender sandboxes started for one send queue, each thread once. */
function senderStarts(): { count(sendQueueUrl: string): number; close(): void } {
  const channel = new BroadcastChannel(SANDBOX_STARTS_CHANNEL);
  const threads = new Map<string, Set<number>>();
  channel.onmessage = (event) => {
    const start = (event as { data: SandboxStart }).data;
    if (!start.functionName.includes('sender')) return;
    const seen = threads.get(start.sendQueueUrl) ?? new Set<number>();
    seen.add(start.threadId);
    threads.set(start.sendQueueUrl, seen);
  };
  return { count: (url) => threads.get(url)?.size ?? 0, close: () => channel.close() };
}

/**
 * One stack for both tests: its own senders counted as the stack starts, then an external sender's
 * beside them on the same queue, counted from its start on (a counter of its own): each test reads
 * only the sandboxes it started.
 */
describe('the senders of the local stack', () => {
  let stack: LocalStack | undefined;
  let external: SqsRunner | undefined;
  const counters: ReturnType<typeof senderStarts>[] = [];
  const startsFromNow = () => {
    const counter = senderStarts();
    counters.push(counter);
    return counter;
  };
  let ownStarts: ReturnType<typeof senderStarts>;

  beforeAll(async () => {
    ownStarts = startsFromNow();
    stack = await startLocalStack({
      config: loadConfig({ POSTDATE_SENDER_MAX_CONCURRENCY: '2' }, 'local'),
      ports: ANY_FREE_PORTS,
      quiet: true,
      functionPreload: [SANDBOX_STARTS],
    });
  }, 180_000);

  afterAll(async () => {
    await external?.stop();
    await stack?.stop();
    for (const counter of counters) counter.close();
  });

  const running = () => {
    if (stack === undefined) throw new Error('the stack did not start');
    return stack;
  };

  it('are POSTDATE_SENDER_MAX_CONCURRENCY pollers, each a sandbox of its own', async () => {
    const own = running();
    // Every poller has come back empty from a receive, and a poller receives only once its own
    // sandbox is warm: every sender sandbox there will be has started.
    await own.idle();
    expect(ownStarts.count(own.queueUrls.send)).toBe(2);
  }, 180_000);

  it('follow the variable of the environment an external sender is given (startSenderEventSource)', async () => {
    const own = running();
    const starts = startsFromNow();
    external = startSenderEventSource({
      sqsEndpoint: own.sqsEndpoint,
      queueUrl: own.queueUrls.send,
      queueArn: own.queueArns.send,
      environment: { ...own.functionEnvironment, POSTDATE_SENDER_MAX_CONCURRENCY: '3' },
      preload: [SANDBOX_STARTS],
      log: () => undefined,
    });
    await external.idle();
    expect(starts.count(own.queueUrls.send)).toBe(3);
  }, 180_000);
});
