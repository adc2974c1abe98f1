import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
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

  it("hands the function the invocation's context: the time left is Lambda's, not a guess (DESIGN §5, never out of time mid-send)", async () => {
    const seen: number[] = [];
    const entry = lambdaEntry<unknown, void>({
      name: 'sweeper',
      wire: () => async (_event, context) => {
        seen.push(context?.getRemainingTimeInMillis() ?? -1);
      },
    })({ POWERTOOLS_LOG_LEVEL: 'ERROR' });
    await entry({}, contextWithRemaining(60_000));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeGreaterThan(0);
    expect(seen[0]).toBeLessThanOrEqual(60_000);
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

  it('writes each log line with what an operator searches by, not what the log group already names (issue 32: log bytes)', async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const entry = lambdaEntry<unknown, void>({
        name: 'sender',
        wire:
          (_env, { logger }) =>
          async () =>
            logger.info('sender recorded an outcome', { id: 'm1', status: 'sent' }),
      })({ POWERTOOLS_LOG_LEVEL: 'INFO' });
      await entry({}, {
        ...contextWithRemaining(1000),
        functionName: 'Postdate-prod-SendingSenderFunction-aBcDeFgHiJkL',
        invokedFunctionArn:
          'arn:aws:lambda:us-east-1:123456789012:function:Postdate-prod-SendingSenderFunction-aBcDeFgHiJkL',
        memoryLimitInMB: '512',
      } as Context);
    } finally {
      spy.mockRestore();
    }
    const line = lines
      .map((text) => JSON.parse(text) as Record<string, unknown>)
      .find((parsed) => parsed.id === 'm1');
    // Every function has its own log group (lib/constructs/postdateFunction.ts): its name, ARN and
    // memory are the group's; the request id ties a line to the invocation's platform lines.
    expect(Object.keys(line ?? {}).sort()).toEqual(
      ['function_request_id', 'id', 'level', 'message', 'service', 'status', 'timestamp'].sort(),
    );
    expect(line).toMatchObject({
      level: 'INFO',
      message: 'sender recorded an outcome',
      service: 'postdate-sender',
      function_request_id: 'request-1',
    });
  });

  it("publishes an invocation's metrics in one EMF document per dimension set, a relay's datapoints together (issue 32: log bytes)", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(
        ...String(chunk)
          .split('\n')
          .filter((line) => line.includes('CloudWatchMetrics')),
      );
      return true;
    });
    try {
      const entry = lambdaEntry<unknown, void>({
        name: 'sender',
        metrics: true,
        wire:
          (_env, { count, milliseconds }) =>
          async () => {
            for (const ms of [120, 80]) {
              count('Sent', 1, 'primary');
              milliseconds('SmtpDuration', ms, 'primary');
              milliseconds('Lateness', ms * 2);
            }
          },
      })({ POWERTOOLS_LOG_LEVEL: 'ERROR', POSTDATE_STACK: 'Postdate-prod' });
      await entry({}, contextWithRemaining(1000));
    } finally {
      spy.mockRestore();
    }
    const documents = lines.map((line) => {
      const parsed = JSON.parse(line) as Record<string, unknown> & {
        _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
      };
      const [directive] = parsed._aws.CloudWatchMetrics;
      return {
        dimensions: directive?.Dimensions.map((set) => [...set].sort()),
        metrics: Object.fromEntries((directive?.Metrics ?? []).map(({ Name }) => [Name, parsed[Name]])),
        relay: parsed.relay,
      };
    });
    // DESIGN §15: a per-relay metric is written with the stack's dimensions and with the relay's, so the
    // alarms count it once and the dashboard draws each relay; the others with the stack's alone.
    expect(documents).toHaveLength(2);
    expect(documents).toContainEqual({
      dimensions: [
        ['relay', 'service', 'stack'],
        ['service', 'stack'],
      ],
      metrics: { Sent: [1, 1], SmtpDuration: [120, 80] },
      relay: 'primary',
    });
    expect(documents).toContainEqual({
      dimensions: [['service', 'stack']],
      metrics: { Lateness: [240, 160] },
      relay: undefined,
    });
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
