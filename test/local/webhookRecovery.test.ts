/**
 * local/webhookRecovery.ts: a local stack restarted on its data dir queues a copy again for every
 * pending delivery (the SQS emulator kept none). A delivery a manual retry wrote takes only that
 * retry's copies (isCopyOfItsRetry), so its requeued copy must carry the retry's id, or the
 * delivery waits for good.
 */
import { DeleteMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { WEBHOOK_STALLED_AFTER_MS } from '../../lambdas/core/webhookOperator.js';
import { requeuePendingDeliveries } from '../../local/webhookRecovery.js';
import { documentClient, sqsClient } from '../support/awsLocal.js';
import { startReceiver, subscribe, webhookHarness } from '../webhooks/webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

describe('the pending deliveries queued again at a restart', () => {
  it("include one a manual retry wrote, with that retry's id: it is delivered", async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver(() => 200);
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    const test = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    const deliveryId = test.json.id as string;
    const drop = async () => {
      const [copy] = await harness.receive();
      await sqsClient().send(
        new DeleteMessageCommand({ QueueUrl: harness.queueUrl, ReceiptHandle: copy?.receiptHandle }),
      );
    };
    await drop();
    harness.clock.advance(WEBHOOK_STALLED_AFTER_MS + 60_000);
    const retry = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/deliveries/${deliveryId}/retry`,
    });
    expect(retry.status).toBe(202);
    // The emulator stopped with the retry's copy in it: gone.
    await drop();

    expect(await requeuePendingDeliveries(documentClient(), harness.tableName, harness.queue)).toBe(1);
    await harness.pump();
    expect(hook.received).toHaveLength(1);
    expect(await harness.store.getDelivery(endpoint.id, deliveryId)).toMatchObject({ status: 'delivered' });
  });
});
