import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { SandboxBundleError, sandboxBundle } from './functionBundle.js';

/**
 * A local Lambda function run as Lambda runs it: each concurrent invocation slot is a sandbox of its
 * own (a `worker_threads` Worker with its own module state, clients and connection pools), an
 * invocation past its timeout is killed (the Worker is terminated: what it did so far stands,
 * nothing after happens, its sockets die with it, its response is lost), and the next invocation
 * in that slot starts cold in a fresh Worker. See local/EMULATORS.md.
 */
export interface LocalFunction {
  /** The function's short name (`sender`): in kill reports, and the context's name unless given. */
  readonly name: string;
  /** The absolute path of the module that exports the handler (bundled with esbuild: functionBundle.ts). */
  readonly file: string;
  /** @default 'handler' */
  readonly exportName?: string;
  /**
   * The function's environment variables, given to each Worker as its `process.env` on top of this
   * process's (nothing is written to this process's environment).
   */
  readonly environment: Readonly<Record<string, string>>;
  /** The function timeout: an invocation still running this long after its start is killed. */
  readonly timeoutMs: number;
  /** `context.functionName`. @default `name` */
  readonly contextFunctionName?: string;
  /**
   * Modules (absolute paths) each sandbox imports before the handler's module, as a layer's
   * `NODE_OPTIONS=--import` would: e.g. a fault-injecting SDK middleware in a chaos run.
   */
  readonly preload?: readonly string[];
}

/** One invocation killed at its timeout (times in epoch ms). */
export interface FunctionTimeout<Name extends string = string> {
  readonly functionName: Name;
  /** When the invocation started (its deadline is this plus the timeout). */
  readonly startedAt: number;
  /** When its sandbox had stopped: nothing of the invocation ran after this. */
  readonly killedAt: number;
  /** Records in the invocation's event (0 for an event without `Records`, e.g. a scheduled one). */
  readonly records: number;
}

/**
 * Reports one killed invocation once: to `onFunctionTimeout`, or in the runner's log when nobody
 * listens, with what becomes of its records (`aftermath`).
 */
export function reportTimeout<E, R>(
  handler: LocalHandler<E, R>,
  outcome: { readonly startedAt: number; readonly killedAt: number },
  records: number,
  options: {
    readonly onFunctionTimeout?: ((kill: FunctionTimeout) => void) | undefined;
    readonly log: (message: string) => void;
    readonly aftermath: string;
  },
): void {
  const kill: FunctionTimeout = {
    functionName: handler instanceof FunctionSandboxes ? handler.name : 'handler',
    startedAt: outcome.startedAt,
    killedAt: outcome.killedAt,
    records,
  };
  if (options.onFunctionTimeout) options.onFunctionTimeout(kill);
  else
    options.log(
      `invocation of ${records} record(s) killed at its timeout after ${kill.killedAt - kill.startedAt} ms; ${options.aftermath}`,
    );
}

/** How one invocation ended. */
export type InvocationOutcome<R> =
  | { readonly kind: 'returned'; readonly value: R | undefined }
  | { readonly kind: 'threw'; readonly error: Error }
  | { readonly kind: 'timedOut'; readonly startedAt: number; readonly killedAt: number };

export type LoadResult = { readonly loaded: true } | { readonly loaded: false; readonly note: string };

/** A handler the runners call in this process (tests): it is never killed, it has no timeout. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler may return nothing, like Lambda's handler types
export type InProcessHandler<E, R> = (event: E) => Promise<R | undefined | void>;

/** What a runner is given to invoke: a handler in this process, or a function in sandboxes. */
export type LocalHandler<E, R> = InProcessHandler<E, R> | FunctionSandboxes;

/**
 * @internal The Worker's `workerData` (the handler's module and the preloads are in its bundle; a
 * preload may read `preload` and `functionName` to know where it runs).
 */
export interface SandboxData {
  readonly exportName: string;
  readonly functionName: string;
  readonly preload: readonly string[];
}

/** @internal Parent → sandbox. */
export interface ToSandbox {
  readonly type: 'invoke';
  readonly id: number;
  readonly event: unknown;
  readonly deadlineMs: number;
  readonly awsRequestId: string;
}

/** @internal Sandbox → parent. */
export type FromSandbox =
  | { readonly type: 'loaded' }
  | { readonly type: 'load-failed'; readonly note: string }
  | { readonly type: 'returned'; readonly id: number; readonly value: unknown }
  | {
      readonly type: 'threw';
      readonly id: number;
      readonly error: { readonly name: string; readonly message: string; readonly stack?: string };
    };

/**
 * How long a sandbox's init may take, from the Worker's start (its bundle built before). Lambda's own
 * limit is 10 s; on a loaded 2-core machine a sandbox's init here passed it when each compiled its
 * TypeScript (local/EMULATORS.md). A longer timeout extends it, as in Lambda.
 */
const INIT_LIMIT_MS = 30_000;

function errorFrom(described: { name: string; message: string; stack?: string }): Error {
  const error = new Error(described.message);
  error.name = described.name;
  if (described.stack) error.stack = described.stack;
  return error;
}

/**
 * Invokes a runner's handler once: in this process, or in slot `slot` of the function's sandboxes.
 * Never throws: a thrown error is an outcome, like a timeout.
 */
export async function invokeLocal<E, R>(
  handler: LocalHandler<E, R>,
  slot: number,
  event: E,
): Promise<InvocationOutcome<R>> {
  if (handler instanceof FunctionSandboxes) return handler.invoke<R>(slot, event);
  try {
    return { kind: 'returned', value: (await handler(event)) ?? undefined };
  } catch (error) {
    return { kind: 'threw', error: error instanceof Error ? error : new Error(String(error)) };
  }
}

/** One execution environment: a Worker, started at the first invocation and after every kill. */
class Sandbox {
  #worker: Worker | undefined;
  #loading: Promise<LoadResult> | undefined;
  #invocations = 0;
  /** Settles the invocation in flight when the Worker dies under it. */
  #onExit: ((error: Error) => void) | undefined;

  constructor(
    private readonly fn: LocalFunction,
    private readonly bundle: () => Promise<string>,
  ) {}

  /** Starts the Worker and imports the function (its cold start), once per Worker. */
  load(): Promise<LoadResult> {
    if (this.#loading !== undefined) return this.#loading;
    const loading: Promise<LoadResult> = this.bundle().then(
      // A sandbox stopped while its bundle was built starts no Worker.
      (file) => (this.#loading === loading ? this.#start(file) : { loaded: false, note: 'it was stopped' }),
      (error: unknown) => ({
        loaded: false,
        note: error instanceof SandboxBundleError ? error.message : `it failed to build: ${String(error)}`,
      }),
    );
    this.#loading = loading;
    return loading;
  }

  #start(bundle: string): Promise<LoadResult> {
    const data: SandboxData = {
      exportName: this.fn.exportName ?? 'handler',
      functionName: this.fn.contextFunctionName ?? this.fn.name,
      preload: this.fn.preload ?? [],
    };
    const worker = new Worker(bundle, {
      workerData: data,
      env: { ...process.env, ...this.fn.environment },
      // None of the parent's flags (tsx, vitest's): the bundle is plain JavaScript.
      execArgv: ['--enable-source-maps'],
      name: `postdate-${this.fn.name}`,
    });
    // The invocation's deadline timer keeps the process up while it runs; an idle sandbox does not.
    worker.unref();
    this.#worker = worker;
    worker.on('error', (error) => this.#onExit?.(error));
    worker.on('exit', (code) => {
      if (this.#worker === worker) this.#reset();
      this.#onExit?.(new Error(`the ${this.fn.name} sandbox exited (code ${code})`));
    });
    return new Promise<LoadResult>((resolve) => {
      const limit = setTimeout(
        () => {
          finish({
            loaded: false,
            note: `its init took longer than ${Math.max(INIT_LIMIT_MS, this.fn.timeoutMs)} ms`,
          });
          void worker.terminate();
        },
        Math.max(INIT_LIMIT_MS, this.fn.timeoutMs),
      );
      const onMessage = (message: FromSandbox) => {
        if (message.type === 'loaded') finish({ loaded: true });
        else if (message.type === 'load-failed') finish({ loaded: false, note: message.note });
      };
      const onGone = (error: unknown) =>
        finish({
          loaded: false,
          note: `it failed to load: ${error instanceof Error ? error.message : String(error)}`,
        });
      const finish = (result: LoadResult) => {
        clearTimeout(limit);
        worker.off('message', onMessage);
        worker.off('error', onGone);
        worker.off('exit', onGone);
        resolve(result);
      };
      worker.on('message', onMessage);
      worker.once('error', onGone);
      worker.once('exit', onGone);
    });
  }

  #reset(): void {
    this.#worker = undefined;
    this.#loading = undefined;
  }

  /** Whether this sandbox was started (or is starting) before now: an invocation now is warm. */
  get started(): boolean {
    return this.#loading !== undefined;
  }

  /** Runs one invocation; kills the Worker at the deadline. */
  async invoke<R>(event: unknown): Promise<InvocationOutcome<R>> {
    const loaded = await this.load();
    const worker = this.#worker;
    if (!loaded.loaded || !worker) {
      await this.stop();
      return {
        kind: 'threw',
        error: new Error(
          `the ${this.fn.name} function could not start: ${loaded.loaded ? 'its sandbox exited' : loaded.note}`,
        ),
      };
    }
    this.#invocations += 1;
    const id = this.#invocations;
    const startedAt = Date.now();
    const deadlineMs = startedAt + this.fn.timeoutMs;
    return new Promise<InvocationOutcome<R>>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (outcome: InvocationOutcome<R>) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        this.#onExit = undefined;
        resolve(outcome);
      };
      const onMessage = (message: FromSandbox) => {
        if (message.type === 'returned' && message.id === id) {
          settle({ kind: 'returned', value: message.value as R | undefined });
        } else if (message.type === 'threw' && message.id === id) {
          settle({ kind: 'threw', error: errorFrom(message.error) });
        }
      };
      const kill = () => {
        // A timer may run a millisecond early; the kill never comes before the deadline.
        if (Date.now() < deadlineMs) {
          timer = setTimeout(kill, deadlineMs - Date.now());
          return;
        }
        worker.off('message', onMessage);
        this.#onExit = undefined;
        if (this.#worker === worker) this.#reset();
        void worker.terminate().then(
          () => resolve({ kind: 'timedOut', startedAt, killedAt: Date.now() }),
          () => resolve({ kind: 'timedOut', startedAt, killedAt: Date.now() }),
        );
      };
      // A sandbox that dies under its invocation (an uncaught error) fails it; the next one is cold.
      this.#onExit = (error) => settle({ kind: 'threw', error });
      worker.on('message', onMessage);
      timer = setTimeout(kill, this.fn.timeoutMs);
      const message: ToSandbox = { type: 'invoke', id, event, deadlineMs, awsRequestId: randomUUID() };
      try {
        worker.postMessage(message);
      } catch (error) {
        settle({ kind: 'threw', error: error instanceof Error ? error : new Error(String(error)) });
      }
    });
  }

  async stop(): Promise<void> {
    const worker = this.#worker;
    this.#reset();
    await worker?.terminate();
  }
}

/**
 * A function's sandboxes, one per concurrent invocation slot (a runner's poller), each started at
 * its slot's first invocation. Give it to a runner as its `handler`; the runner stops it with itself.
 */
export class FunctionSandboxes {
  readonly #slots = new Map<number, Sandbox>();
  #coldInvocations = 0;
  #bundled: Promise<string> | undefined;

  constructor(readonly fn: LocalFunction) {
    if (!Number.isFinite(fn.timeoutMs) || fn.timeoutMs <= 0) {
      throw new RangeError(`the ${fn.name} function's timeout must be a positive number of ms`);
    }
  }

  get name(): string {
    return this.fn.name;
  }

  /** The function's bundle, found or built once for all its slots and their restarts. */
  #bundle(): Promise<string> {
    this.#bundled ??= sandboxBundle({ file: this.fn.file, preload: this.fn.preload ?? [] });
    return this.#bundled;
  }

  #slot(index: number): Sandbox {
    let sandbox = this.#slots.get(index);
    if (!sandbox) {
      sandbox = new Sandbox(this.fn, () => this.#bundle());
      this.#slots.set(index, sandbox);
    }
    return sandbox;
  }

  /**
   * Starts slot `slot`'s sandbox and imports the function there (so that the slot's next invocation
   * is warm), or finds it started: whether the function loads, or why not.
   */
  load(slot = 0): Promise<LoadResult> {
    return this.#slot(slot).load();
  }

  /** One invocation in slot `slot`'s sandbox (killed at the function's timeout). Never throws. */
  invoke<R>(slot: number, event: unknown): Promise<InvocationOutcome<R>> {
    const sandbox = this.#slot(slot);
    if (!sandbox.started) this.#coldInvocations += 1;
    return sandbox.invoke<R>(event);
  }

  /**
   * Invocations so far that found their sandbox not started and paid its cold start (a slot's first
   * use without `load`, or the first after a kill). A stack that says ready with warm functions
   * (DESIGN §7) keeps this at 0 until a timeout kills a sandbox.
   */
  get coldInvocations(): number {
    return this.#coldInvocations;
  }

  /** Terminates every sandbox (the runners call it once no invocation runs). */
  async close(): Promise<void> {
    const sandboxes = [...this.#slots.values()];
    this.#slots.clear();
    await Promise.all(sandboxes.map((sandbox) => sandbox.stop()));
  }
}
