/**
 * docs/runbook.md procedure 4 (`RelayIteratorAge`, `RelayFailures`), walked as the on-call operator
 * walks it, on the local stack with the real entry point (cli/postdate.mjs) and the SMTP sink as the
 * relay.
 *
 * How the relay gives up, for real: the send queue is gone (deleted, as "the queue was replaced" or
 * SQS refusing), so the relay cannot put a message's copy on it, fails the record, and its stream
 * event source retries it 5 times (lib/eventSourceLayout.ts), then puts the batch's shard and
 * sequence range on the relay failure queue. Compressed in one place only: the sweep grace is 1 s
 * (`POSTDATE_SWEEP_GRACE_SECONDS`, deployed 300) so that step 4's reconcile sees the message overdue
 * at once; the periodic sweeper is kept out (an hour apart) so that only the redrive dispatches it.
 *
 * Steps 1 to 3 are CloudWatch, Logs and Lambda: AWS's. Steps 4, 5 and Verify as written. Verify: the
 * message sent once at the relay, none stuck.
 */
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type QueueAttributeName,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import type { LocalStreamDiscard } from '../../local/localStackOptions.js';
import { eventually } from '../support/eventually.js';
import { enqueue, localClientOptions, operatorCli, shownMessage } from './operatorShell.js';

describe('runbook procedure 4: what the relay gave up on', () => {
  let stack: LocalStack;
  let sqs: SQSClient;
  const discards: LocalStreamDiscard[] = [];

  beforeAll(async () => {
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-relay-failures-01',
        POSTDATE_SWEEP_GRACE_SECONDS: '1',
        POSTDATE_API_IMMEDIATE_COPY: 'false',
      },
      'local',
    );
    stack = await startLocalStack({
      config,
      ports: ANY_FREE_PORTS,
      quiet: true,
      sweepIntervalMs: 3_600_000,
      onStreamDiscard: (discard) => discards.push(discard),
    });
    sqs = new SQSClient(localClientOptions(stack.sqsEndpoint));
  }, 90_000);

  afterAll(async () => {
    sqs?.destroy();
    await stack?.stop();
  });

  it('walks steps 4, 5 and Verify: the message the relay gave up on is sent once', async () => {
    const postdate = operatorCli(stack, {
      bin: true,
      env: {
        POSTDATE_SCHEDULER_ROLE_ARN: stack.functionEnvironment.POSTDATE_SCHEDULER_ROLE_ARN as string,
        POSTDATE_SCHEDULE_DLQ_ARN: stack.functionEnvironment.POSTDATE_SCHEDULE_DLQ_ARN as string,
        POSTDATE_SCHEDULE_GROUP: stack.functionEnvironment.POSTDATE_SCHEDULE_GROUP as string,
        AWS_ENDPOINT_URL_SCHEDULER: stack.schedulerEndpoint,
      },
    });
    // The send queue gone: the relay cannot dispatch.
    const sendQueue = stack.queueUrls.send;
    const names: QueueAttributeName[] = ['VisibilityTimeout', 'MessageRetentionPeriod', 'RedrivePolicy'];
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: sendQueue, AttributeNames: names }),
    );
    await sqs.send(new DeleteQueueCommand({ QueueUrl: sendQueue }));
    const id = await enqueue(stack, 'runbook-relay-failures-1');
    await eventually(
      'the relay to give up on the message',
      () => discards.some((d) => d.source === 'relay') || undefined,
      { withinMs: 60_000 },
    );
    expect(discards.map((d) => `${d.source} → ${d.destination}`)).toContain('relay → onFailure');
    expect((await shownMessage(postdate, id)).status).toBe('scheduled');

    // Step 3: the cause removed (the queue back, as a deploy makes it).
    const created = await sqs.send(
      new CreateQueueCommand({ QueueName: sendQueue.slice(sendQueue.lastIndexOf('/') + 1), Attributes }),
    );
    expect(created.QueueUrl).toBe(sendQueue);

    // Step 4: reconcile lists it, overdue beyond the grace.
    const reconcile = await postdate('reconcile', '--since', '2h');
    expect(reconcile.code, reconcile.stdout).toBe(1);
    expect(reconcile.stdout).toContain(id);

    // Step 5: replay what the relay gave up on.
    const redrive = await postdate('relay-failures', 'redrive');
    expect(redrive.code, `${redrive.stdout}${redrive.stderr}`).toBe(0);
    expect(redrive.stdout).toMatch(/failure messages:\s+1\b/);
    expect(redrive.stdout).toMatch(/replayed from the stream:\s+1\b/);
    expect(redrive.stdout).toMatch(/left on the queue:\s+0\b/);

    // Verify.
    await eventually('the message sent', async () => (await shownMessage(postdate, id)).status === 'sent', {
      withinMs: 30_000,
    });
    const again = await postdate('relay-failures', 'redrive');
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/failure messages:\s+0\b/);
    const clean = await postdate('reconcile', '--since', '24h');
    expect(clean.code, clean.stdout).toBe(0);
    await stack.idle();
    expect(stack.smtpSink?.messages().filter((mail) => mail.postdateId === id)).toHaveLength(1);
  }, 150_000);
});
