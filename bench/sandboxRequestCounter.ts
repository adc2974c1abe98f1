/**
 * Preloaded into every relay, sender and sweeper sandbox of a benchmark's local stack
 * (`startBenchStack(…, { countSandboxRequests: true })`): counts the AWS requests of that worker
 * thread as awsRequestCounter.ts counts the main thread's, and posts each one to the main thread's
 * counter (SANDBOX_REQUESTS_CHANNEL), attributed to this sandbox's function.
 */
import { BroadcastChannel, workerData } from 'node:worker_threads';
import { installAwsRequestCounter, type Origin, SANDBOX_REQUESTS_CHANNEL } from './awsRequestCounter.js';

const FUNCTIONS: readonly Origin[] = ['relay', 'sender', 'sweeper'];
const name = String((workerData as { functionName?: unknown } | undefined)?.functionName ?? '');
const origin = FUNCTIONS.find((fn) => name.includes(fn)) ?? 'function';
const channel = new BroadcastChannel(SANDBOX_REQUESTS_CHANNEL);
channel.unref();
installAwsRequestCounter({ forward: { channel, origin } });
