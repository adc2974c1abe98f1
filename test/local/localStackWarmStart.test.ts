import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';

const API_KEY = 'pd_warm-start-spec-key';
const MESSAGES = 10;

/**
 * DESIGN §7: "the functions are warm when it says so (the first message is as quick as the
 * hundredth)". No timing is asserted (that is bench/'s): the stack counts the invocations that had
 * to start their sandbox first, and the first messages after start must find every one of the
 * relay's and the sender's sandboxes already started and their modules imported. Several messages,
 * sent one by one, reach several of the sender's pollers (one sandbox each).
 */
describe('the local stack says ready with warm functions', () => {
  let stack: LocalStack | undefined;

  afterAll(async () => {
    await stack?.stop();
  });

  it('serves the first messages after start without a cold start', async () => {
    stack = await startLocalStack({
      config: loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local'),
      ports: ANY_FREE_PORTS,
      quiet: true,
    });
    const running = stack;
    expect(running.coldInvocations()).toEqual({ relay: 0, sender: 0, sweeper: 0, events: 0, webhooks: 0 });
    for (let index = 0; index < MESSAGES; index += 1) {
      const response = await fetch(`${running.apiUrl}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': `warm-start-${index}`,
        },
        body: JSON.stringify({ to: [`warm${index}@example.com`], subject: `Warm ${index}`, text: 'hi' }),
      });
      expect(response.status).toBe(202);
    }
    await eventually(
      `${MESSAGES} mails at the sink`,
      () => (running.smtpSink?.messages().length ?? 0) >= MESSAGES,
      {
        withinMs: 120_000,
        everyMs: 100,
      },
    );
    await running.idle();
    expect(running.coldInvocations()).toEqual({ relay: 0, sender: 0, sweeper: 0, events: 0, webhooks: 0 });
  }, 240_000);
});
