import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { QUEUE, sendQueueMaxReceiveCount, sendQueueVisibilitySeconds } from '../queueLayout.js';

export { MIN_VISIBILITY_FACTOR } from '../queueLayout.js';

/** Every queue of Postdate: encrypted at rest (SQS-managed keys) and reachable over TLS only. */
function secureQueue(scope: Construct, id: string, props: sqs.QueueProps): sqs.Queue {
  return new sqs.Queue(scope, id, {
    ...props,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
}

export interface SendQueues {
  readonly send: sqs.Queue;
  readonly sendDeadLetter: sqs.Queue;
}

/**
 * The send queue and its DLQ, from lib/queueLayout.ts (the local stack reads the same layout).
 * The sender moves copies of `dead` messages to the DLQ itself; `maxReceiveCount` is a backstop.
 */
export function createSendQueues(
  scope: Construct,
  options: { readonly maxAttempts: number; readonly senderTimeoutSeconds: number },
): SendQueues {
  // A DLQ of a standard queue keeps a message's original enqueue time, so it must retain longer.
  const sendDeadLetter = secureQueue(scope, 'SendDeadLetterQueue', {
    retentionPeriod: Duration.days(QUEUE.sendDeadLetter.retentionDays),
  });
  const send = secureQueue(scope, 'SendQueue', {
    visibilityTimeout: Duration.seconds(sendQueueVisibilitySeconds(options.senderTimeoutSeconds)),
    retentionPeriod: Duration.days(QUEUE.send.retentionDays),
    deadLetterQueue: {
      queue: sendDeadLetter,
      maxReceiveCount: sendQueueMaxReceiveCount(options.maxAttempts),
    },
  });
  return { send, sendDeadLetter };
}

/** A queue that is itself a last stop (the relay's on-failure destination, the schedule DLQ). */
export function createFailureQueue(
  scope: Construct,
  id: string,
  layout: { readonly retentionDays: number },
): sqs.Queue {
  return secureQueue(scope, id, { retentionPeriod: Duration.days(layout.retentionDays) });
}
