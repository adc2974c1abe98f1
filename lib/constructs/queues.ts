import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { QUEUE, SENDER_TIMEOUT_SECONDS } from '../queueLayout.js';

/** AWS guidance for an SQS event source: visibility at least six times the function timeout. */
export const MIN_VISIBILITY_FACTOR = 6;

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
 * `maxReceiveCount` is POSTDATE_MAX_ATTEMPTS: the queue's redrive is the attempt limit.
 */
export function createSendQueues(scope: Construct, maxAttempts: number): SendQueues {
  if (QUEUE.send.visibilityTimeoutSeconds < MIN_VISIBILITY_FACTOR * SENDER_TIMEOUT_SECONDS) {
    throw new Error(
      `queueLayout: the send queue's visibility (${QUEUE.send.visibilityTimeoutSeconds} s) must be at least ${MIN_VISIBILITY_FACTOR} × the sender timeout (${SENDER_TIMEOUT_SECONDS} s)`,
    );
  }
  // A DLQ of a standard queue keeps a message's original enqueue time, so it must retain longer.
  const sendDeadLetter = secureQueue(scope, 'SendDeadLetterQueue', {
    retentionPeriod: Duration.days(QUEUE.sendDeadLetter.retentionDays),
  });
  const send = secureQueue(scope, 'SendQueue', {
    visibilityTimeout: Duration.seconds(QUEUE.send.visibilityTimeoutSeconds),
    retentionPeriod: Duration.days(QUEUE.send.retentionDays),
    deadLetterQueue: { queue: sendDeadLetter, maxReceiveCount: maxAttempts },
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
