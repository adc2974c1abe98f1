import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../lambdas/core/config.js';
import type { PostdateFunctionName } from '../lambdas/core/postdateFunctions.js';
import {
  RELAY_STREAM as DEPLOYED_RELAY_STREAM,
  SENDER_QUEUE as DEPLOYED_SENDER_QUEUE,
} from '../lib/eventSourceLayout.js';
import type { FunctionTimeout } from './runners/functionSandbox.js';

/**
 * The functions behind API Gateway: they run in the stack's process behind the HTTP front end,
 * whose 30 s integration timeout bounds them, each wired from the stack's environment.
 */
export const IN_PROCESS_FUNCTIONS = ['api', 'authorizer'] as const satisfies readonly PostdateFunctionName[];
export type InProcessFunctionName = (typeof IN_PROCESS_FUNCTIONS)[number];

/**
 * The functions behind an event source or a schedule: each runs in worker sandboxes and is killed
 * at its function timeout (local/runners/functionSandbox.ts).
 */
export const SANDBOXED_FUNCTIONS = [
  'relay',
  'sender',
  'sweeper',
] as const satisfies readonly PostdateFunctionName[];
export type SandboxedFunctionName = (typeof SANDBOXED_FUNCTIONS)[number];

/**
 * The functions the stack loads from their `handler.ts`, of the one list (lambdas/core/postdateFunctions.ts);
 * it wires `events` and `webhooks` in its own process (local/webhookEventSources.ts) and runs no `bounces`.
 */
export const FUNCTIONS = [...IN_PROCESS_FUNCTIONS, ...SANDBOXED_FUNCTIONS] as const;
export type FunctionName = (typeof FUNCTIONS)[number];

/** One invocation killed at its function timeout: see `LocalStackOptions.onFunctionTimeout`. */
export type FunctionTimeoutKill = FunctionTimeout<SandboxedFunctionName>;

/** The local runners read like the deployed event sources (lib/eventSourceLayout.ts), plus local-only polling. */
export const RELAY_STREAM = {
  ...DEPLOYED_RELAY_STREAM,
  timeoutMs: DEPLOYED_RELAY_STREAM.timeoutSeconds * 1000,
} as const;
/**
 * The send queue's runner; its pollers are `config.senderMaxConcurrency` (POSTDATE_SENDER_MAX_CONCURRENCY,
 * the event source's MaximumConcurrency in AWS), which is also each sender's share of the rate.
 */
export const SENDER_QUEUE = {
  ...DEPLOYED_SENDER_QUEUE,
  waitTimeSeconds: 1,
} as const;
/**
 * The sweeper's timeout: SWEEPER_TIMEOUT_SECONDS of lib/postdateProps.ts (not imported here, it
 * would load aws-cdk-lib into the local stack; test/local/localStack.test.ts holds them equal).
 */
export const SWEEPER_TIMEOUT_MS = 120_000;

/**
 * The timeout each sandboxed function is killed at: the deployed ones (the sender's from the
 * configuration) unless the caller gives shorter ones (tests).
 */
export function functionTimeoutsMs(
  config: Config,
  overrides: Readonly<Partial<Record<SandboxedFunctionName, number>>> = {},
): Record<SandboxedFunctionName, number> {
  return {
    sender: overrides.sender ?? config.senderTimeoutSeconds * 1000,
    relay: overrides.relay ?? RELAY_STREAM.timeoutMs,
    sweeper: overrides.sweeper ?? SWEEPER_TIMEOUT_MS,
  };
}

/** The one log line of a killed invocation. */
export function describeKill(kill: FunctionTimeoutKill, timeoutMs: number): string {
  const what = kill.functionName === 'sweeper' ? 'a sweep' : `a batch of ${kill.records} record(s)`;
  return (
    `${kill.functionName}: invocation killed at its ${timeoutMs} ms timeout (${what}, started ` +
    `${new Date(kill.startedAt).toISOString()}, killed ${new Date(kill.killedAt).toISOString()}); ` +
    'its effects so far stand, its response is lost'
  );
}

/** Whether a function's handler loaded, and why not when known. */
export interface FunctionLoad {
  readonly built: boolean;
  readonly note?: string | undefined;
}

/** Which functions are built; one line in the log for each that is not, saying why when known. */
export function builtFunctions(
  loads: Readonly<Record<FunctionName, FunctionLoad>>,
  log: (line: string) => void,
): Record<FunctionName, boolean> {
  const built = {} as Record<FunctionName, boolean>;
  for (const name of FUNCTIONS) {
    const { note } = loads[name];
    built[name] = loads[name].built;
    if (!built[name]) log(`${name} handler not built yet${note ? ` (${note})` : ''}`);
  }
  return built;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `lambdas/{name}/handler.ts`. */
export function handlerFile(name: FunctionName): string {
  return join(ROOT, 'lambdas', name, 'handler.ts');
}
