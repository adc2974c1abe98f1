import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { lambdaMiddy } from '../../lambdas/adapters/lambdaMiddy.js';

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
describe('the middy handler every function is built on', () => {
  it('never answers before the handler does, even past the deadline', async () => {
    let finished = false;
    const handler = lambdaMiddy<unknown, string>().handler(async () => {
      await sleep(30);
      finished = true;
      return 'done';
    });
    await expect(handler({}, contextWithRemaining(1))).resolves.toBe('done');
    expect(finished).toBe(true);
  });

  it('is the one every handler uses (no handler builds its own middy)', () => {
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
      expect({ file, usesLambdaMiddy: source.includes('lambdaMiddy<') }).toEqual({
        file,
        usesLambdaMiddy: true,
      });
    }
  });
});
