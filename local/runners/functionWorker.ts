import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { lambdaContextUntil } from '../http/lambdaContext.js';
import type { FromSandbox, SandboxData, ToSandbox } from './functionSandbox.js';

/**
 * Runs inside one worker sandbox, as the entry of its bundle (functionBundle.ts, started by
 * functionSandbox.ts): imports the preloads and the function's module once (its cold start, with
 * the environment the Worker was given), then runs one invocation per `invoke` message, with a
 * context rebuilt from the deadline at which the parent kills it.
 */

type Handler = (event: unknown, context: ReturnType<typeof lambdaContextUntil>) => unknown;

function describeError(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) {
    return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  }
  return { name: 'Error', message: String(error) };
}

/** One `import()` of a module inside the bundle: the preloads in order, the function's module last. */
type ModuleLoad = () => Promise<unknown>;

async function serve(
  port: NonNullable<typeof parentPort>,
  data: SandboxData,
  loads: readonly ModuleLoad[],
): Promise<void> {
  const send = (message: FromSandbox) => port.postMessage(message);
  let handler: Handler;
  try {
    let module: Record<string, unknown> = {};
    for (const load of loads) module = (await load()) as Record<string, unknown>;
    const exported = module[data.exportName];
    if (typeof exported !== 'function') {
      send({ type: 'load-failed', note: `it exports no ${data.exportName} function` });
      return;
    }
    handler = exported as Handler;
  } catch (error) {
    const reason = error instanceof Error ? (error.message.split('\n')[0] ?? error.name) : String(error);
    send({ type: 'load-failed', note: `it failed to load: ${reason}` });
    return;
  }
  port.on('message', (message: ToSandbox) => {
    const context = lambdaContextUntil(data.functionName, message.deadlineMs, {
      awsRequestId: message.awsRequestId,
    });
    void (async () => {
      try {
        const value = await handler(message.event, context);
        send({ type: 'returned', id: message.id, value });
      } catch (error) {
        send({ type: 'threw', id: message.id, error: describeError(error) });
      }
    })().catch((error: unknown) => {
      // The answer could not be posted (a value that cannot be cloned): an error of the invocation.
      send({ type: 'threw', id: message.id, error: describeError(error) });
    });
  });
  send({ type: 'loaded' });
}

/** The bundle's entry: serves the function in this worker (in a main thread, nothing). */
export async function serveSandbox(loads: readonly ModuleLoad[]): Promise<void> {
  if (!isMainThread && parentPort) await serve(parentPort, workerData as SandboxData, loads);
}
