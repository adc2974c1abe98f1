import { existsSync } from 'node:fs';
import {
  type FunctionLoad,
  type FunctionName,
  handlerFile,
  SANDBOXED_FUNCTIONS,
  type SandboxedFunctionName,
} from './localFunctions.js';
import { FunctionSandboxes, type LoadResult } from './runners/functionSandbox.js';

/**
 * The relay, the sender and the sweeper as the stack runs them: in worker sandboxes, one per
 * concurrent invocation, each given the functions' environment as its worker's `env` and killed at
 * its function timeout (local/runners/functionSandbox.ts).
 */

/** A sandboxed function of the stack, as its CDK construct deploys it (`postdate-{name}`). */
export function localFunctionSandboxes(
  name: SandboxedFunctionName,
  options: {
    readonly environment: Readonly<Record<string, string>>;
    readonly timeoutMs: number;
    readonly preload?: readonly string[];
  },
): FunctionSandboxes {
  return new FunctionSandboxes({
    name,
    file: handlerFile(name),
    contextFunctionName: `postdate-${name}`,
    // Each sandbox would repeat the SDK's warning that this Node (20) is old; Lambda runs 22.
    environment: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...options.environment },
    timeoutMs: options.timeoutMs,
    ...(options.preload ? { preload: options.preload } : {}),
  });
}

export type StackSandboxes = Readonly<Record<SandboxedFunctionName, FunctionSandboxes | undefined>>;

/**
 * The sandboxes of each sandboxed function whose `handler.ts` exists, each starting its first
 * sandbox now, so that the stack says ready with every function warm (DESIGN §7: the first message
 * is as quick as the hundredth); `loading` says which loaded. A runner with more than one slot
 * (the sender's queue) warms its other sandboxes itself before it polls with them.
 */
export function startSandboxedFunctions(options: {
  readonly environment: Readonly<Record<string, string>>;
  readonly timeoutsMs: Readonly<Record<SandboxedFunctionName, number>>;
  readonly preload?: readonly string[] | undefined;
}): {
  readonly sandboxes: StackSandboxes;
  readonly loading: Promise<Record<SandboxedFunctionName, LoadResult | undefined>>;
} {
  const sandboxes = Object.fromEntries(
    SANDBOXED_FUNCTIONS.map((name) => [
      name,
      existsSync(handlerFile(name))
        ? localFunctionSandboxes(name, {
            environment: options.environment,
            timeoutMs: options.timeoutsMs[name],
            ...(options.preload ? { preload: options.preload } : {}),
          })
        : undefined,
    ]),
  ) as Record<SandboxedFunctionName, FunctionSandboxes | undefined>;
  const loading = Promise.all(
    SANDBOXED_FUNCTIONS.map(
      async (name): Promise<[SandboxedFunctionName, LoadResult | undefined]> => [
        name,
        await sandboxes[name]?.load(),
      ],
    ),
  ).then((entries) => Object.fromEntries(entries) as Record<SandboxedFunctionName, LoadResult | undefined>);
  return { sandboxes, loading };
}

/** Whether each sandboxed function loaded (a missing `handler.ts` is not built, without a note). */
export function sandboxedLoads(
  loads: Readonly<Record<SandboxedFunctionName, LoadResult | undefined>>,
): Record<SandboxedFunctionName, FunctionLoad> {
  const loadOf = (load: LoadResult | undefined): FunctionLoad =>
    load?.loaded === false ? { built: false, note: load.note } : { built: load?.loaded === true };
  return { relay: loadOf(loads.relay), sender: loadOf(loads.sender), sweeper: loadOf(loads.sweeper) };
}

/** The progress line of the functions: which are warm, which are not built. */
export function describeWarmFunctions(
  sandboxes: StackSandboxes,
  built: Readonly<Record<FunctionName, boolean>>,
): string {
  const warm = SANDBOXED_FUNCTIONS.filter((name) => built[name] && sandboxes[name]);
  const inProcess = (['api', 'authorizer'] as const).filter((name) => built[name]);
  const missing = (Object.keys(built) as FunctionName[]).filter((name) => !built[name]);
  return [
    `warm: ${[...inProcess, ...warm].join(', ')}`,
    ...(missing.length > 0 ? [`not built: ${missing.join(', ')}`] : []),
  ].join('; ');
}
