import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { lambdaEntry } from '../../lambdas/adapters/lambdaEntry.js';

const LAMBDAS = join(import.meta.dirname, '../../lambdas');

/** A context with `remainingMs` left, as Lambda gives one a moment before its deadline. */
function contextWithRemaining(remainingMs: number): Context {
  const deadline = Date.now() + remainingMs;
  return {
    functionName: 'test',
    awsRequestId: 'request-1',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  } as unknown as Context;
}

/**
 * A timed-out invocation is killed by Lambda, which resets its sandbox: nothing of it goes on. The
 * lease and claim rules (DESIGN §5) rest on that. middy's default "timeout early" instead answers
 * an error 5 ms before the deadline while the handler's work goes on in the frozen sandbox and
 * resumes at the next invocation, after its lease: a send nobody holds any more.
 */
describe('the Lambda entry every function is built on', () => {
  it('never answers before the handler does, even past the deadline', async () => {
    let finished = false;
    const handler = lambdaEntry<unknown, string>({
      name: 'sweeper',
      wire: () => async () => {
        await sleep(30);
        finished = true;
        return 'done';
      },
    })({ POWERTOOLS_LOG_LEVEL: 'ERROR' });
    await expect(handler({}, contextWithRemaining(1))).resolves.toBe('done');
    expect(finished).toBe(true);
  });

  it('wires once per cold start from its own environment, and wires again after close', async () => {
    const wirings: string[] = [];
    const closed: number[] = [];
    const entry = lambdaEntry<number, string>({
      name: 'sender',
      wire: (env) => {
        wirings.push(env.MARK ?? '');
        const wired = wirings.length;
        return Object.assign(async (event: number) => `${env.MARK}:${event}`, {
          close: async () => {
            closed.push(wired);
          },
        });
      },
    })({ MARK: 'own', POWERTOOLS_LOG_LEVEL: 'ERROR' });
    expect(wirings).toEqual([]);
    expect(await entry(1, contextWithRemaining(1000))).toBe('own:1');
    expect(await entry(2, contextWithRemaining(1000))).toBe('own:2');
    expect(wirings).toEqual(['own']);
    await entry.close();
    expect(closed).toEqual([1]);
    expect(await entry(3, contextWithRemaining(1000))).toBe('own:3');
    expect(wirings).toEqual(['own', 'own']);
  });

  it('refuses a metric from a function whose entry does not publish any (it would never be flushed)', async () => {
    const entry = lambdaEntry<unknown, void>({
      name: 'relay',
      wire:
        (_env, { count }) =>
        async () =>
          count('Anything'),
    })({ POWERTOOLS_LOG_LEVEL: 'ERROR' });
    await expect(entry({}, contextWithRemaining(1000))).rejects.toThrow(
      /postdate-relay publishes no metrics/,
    );
  });

  it('is the one every handler uses (no handler builds its own middy, logger or metrics)', () => {
    const handlers = readdirSync(LAMBDAS, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(LAMBDAS, entry.name, 'handler.ts'))
      .filter((file) => existsSync(file));
    expect(handlers.length).toBeGreaterThanOrEqual(8);
    for (const file of handlers) {
      const source = readFileSync(file, 'utf8');
      expect({ file, importsMiddy: source.includes("from '@middy/core'") }).toEqual({
        file,
        importsMiddy: false,
      });
      expect({ file, usesLambdaEntry: source.includes('lambdaEntry') }).toEqual({
        file,
        usesLambdaEntry: true,
      });
      expect({ file, buildsItsOwn: /new (Logger|Metrics)\(|functionMetrics\(/.test(source) }).toEqual({
        file,
        buildsItsOwn: false,
      });
    }
  });
});
