import { setTimeout as sleep } from 'node:timers/promises';
import type { CurrentStack } from './currentStack.js';

/** What the client's calls met on the way: retries through kills and restarts, and 5xx answers. */
export interface ApiCounters {
  retries: number;
  serverErrors: number;
}

export interface ApiAnswer {
  readonly pid: number;
  readonly tries: number;
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/**
 * One API call, retried through kills and restarts (a connection error, a 5xx such as a throttle the
 * SDK gave up on): safe because every call the run makes is idempotent (enqueue by its key).
 */
export async function callApi(
  stacks: CurrentStack,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  counters?: ApiCounters,
): Promise<ApiAnswer> {
  for (let attempt = 0; ; attempt += 1) {
    const stack = await stacks.get();
    try {
      const response = await fetch(`${stack.endpoints.apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${stack.endpoints.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      if (response.status >= 500) {
        if (counters) counters.serverErrors += 1;
        throw new Error(`${response.status} ${text.slice(0, 200)}`);
      }
      return {
        pid: stack.endpoints.pid,
        tries: attempt + 1,
        status: response.status,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        headers: response.headers,
      };
    } catch (error) {
      if (counters) counters.retries += 1;
      if (attempt > 200) throw error;
      await sleep(250);
    }
  }
}
