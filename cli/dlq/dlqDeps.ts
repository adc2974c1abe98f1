/** What the `dlq` commands are given: clients and names, never built on import. */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { pacer } from '../deadLetters/pacer.js';
import { SqsDeadLetterQueue } from '../deadLetters/SqsDeadLetterQueue.js';

export interface DlqDeps {
  readonly sqs: SQSClient;
  readonly dlqUrl: string;
  readonly now: () => Date;
  /** To show each sampled message's status; optional (the DLQ alone still answers). */
  readonly table?: { readonly documents: DynamoDBDocumentClient; readonly tableName: string };
  /** Long-poll seconds for each receive while scanning; 0 in tests. @default 1 */
  readonly waitSeconds?: number;
  readonly sleep?: (milliseconds: number) => Promise<void>;
}

export interface RedriveDeps extends DlqDeps {
  readonly sendQueueUrl: string;
  /** `--ids`: each copy's record, to move only a copy that redrives its message (core/staleDeadLetter.ts). */
  readonly table: NonNullable<DlqDeps['table']>;
  /** How often a running move task is polled. @default 1000 */
  readonly pollMilliseconds?: number;
}

/** The send queue's DLQ, through the one dead-letter adapter. */
export function sendDeadLetterQueue(deps: DlqDeps): SqsDeadLetterQueue {
  return new SqsDeadLetterQueue(deps.sqs, deps.dlqUrl, {
    ...(deps.waitSeconds !== undefined ? { waitSeconds: deps.waitSeconds } : {}),
    name: 'the DLQ',
  });
}

/** What a redrive moves copies with: from the DLQ, to the send queue, at most `rate` per second. */
export function redriveParts(deps: RedriveDeps, rate: number | undefined) {
  return {
    dlq: sendDeadLetterQueue(deps),
    sendQueue: new SqsDispatchQueue(deps.sqs, deps.sendQueueUrl),
    pace: pacer(rate, deps.sleep),
  };
}
