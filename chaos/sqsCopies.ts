import { setTimeout as sleep } from 'node:timers/promises';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { TrackedMessage } from './client.js';
import type { CurrentStack } from './currentStack.js';

/** The extra SQS copies sent, for the report. */
export interface CopyFigures {
  duplicateCopies: number;
  staleCopies: number;
}

/**
 * Duplicate (and stale: the revision before the current one) SQS copies of accepted messages,
 * straight into the send queue while the run goes on: `rate` copies per accepted message in all,
 * most of them of messages accepted lately (likely still in flight, where a copy races the real
 * one), some of any message.
 */
export async function sendExtraCopies(
  stacks: CurrentStack,
  tracked: readonly TrackedMessage[],
  rate: number,
  random: () => number,
  finished: () => boolean,
  figures: CopyFigures,
): Promise<void> {
  let copiesTried = 0;
  let sqs: { client: SQSClient; endpoint: string } | undefined;
  while (!finished()) {
    await sleep(200);
    const current = await stacks.get();
    if (!sqs || sqs.endpoint !== current.endpoints.sqsEndpoint) {
      sqs?.client.destroy();
      sqs = {
        endpoint: current.endpoints.sqsEndpoint,
        client: new SQSClient({
          region: 'us-east-1',
          endpoint: current.endpoints.sqsEndpoint,
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
          maxAttempts: 1,
        }),
      };
    }
    const wanted = Math.min(50, Math.floor(tracked.length * rate) - copiesTried);
    for (let index = 0; index < wanted && tracked.length > 0; index += 1) {
      copiesTried += 1;
      const recent = random() < 0.7;
      const from = recent ? Math.max(0, tracked.length - 200) : 0;
      const message = tracked[from + Math.floor(random() * (tracked.length - from))];
      if (!message) continue;
      const stale = message.rev > 1 && random() < 0.5;
      const rev = stale ? message.rev - 1 : message.rev;
      try {
        await sqs.client.send(
          new SendMessageCommand({
            QueueUrl: current.endpoints.sendQueueUrl,
            MessageBody: JSON.stringify({ v: 1, id: message.id, rev }),
            DelaySeconds: Math.floor(random() * 5),
          }),
        );
        if (stale) figures.staleCopies += 1;
        else figures.duplicateCopies += 1;
      } catch {
        // The stack is being killed; the next round uses the new one.
      }
    }
  }
  sqs?.client.destroy();
}
