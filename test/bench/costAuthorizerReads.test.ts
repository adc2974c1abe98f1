/**
 * The cost benchmark bills a lone message with API Gateway's authorizer cache off: the authorizer
 * invoked at every request, and (it caches no allowance, decision 0249) reading the key at every
 * request. Its stack must then run the front end that way, or the key read it counts is one per 30 s
 * of the run, not one per enqueue (decision 0250). Real local stack, DynamoDB Local, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsRequestCounter, installAwsRequestCounter } from '../../bench/awsRequestCounter.js';
import { startBenchStack } from '../../bench/benchStack.js';
import type { LocalStack } from '../../local/localStack.js';

let counter: AwsRequestCounter;
let stack: LocalStack;

beforeAll(async () => {
  counter = installAwsRequestCounter();
  stack = await startBenchStack({ POSTDATE_API_KEY: 'pd_cost-authorizer-0250' }, { authorizerCacheTtlMs: 0 });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  counter?.uninstall();
});

describe("the cost benchmark's stack: the authorizer as a lone message meets it", () => {
  it('reads the key once per request, however close the requests come', async () => {
    counter.take();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${stack.apiUrl}/v1/messages/msg_0000000000000000000000000${i}`, {
        headers: { authorization: `Bearer ${stack.apiKey}` },
      });
      await response.text();
      statuses.push(response.status);
    }
    // Past the authorizer each time (a 404 is the api's answer, not API Gateway's 401/403).
    expect(statuses).toEqual([404, 404, 404]);
    const keyReads = counter
      .take()
      .filter((r) => r.origin === 'authorizer' && r.service === 'DynamoDB' && r.command === 'GetItem');
    expect(keyReads).toHaveLength(3);
  });
});
