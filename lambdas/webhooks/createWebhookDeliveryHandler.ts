import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { errorForLog } from '../core/errorForLog.js';
import { receiveCountOf } from '../core/queueLimits.js';
import { keptCopyVisibilitySeconds } from '../core/webhooks.js';
import type { CopyVisibility } from '../ports/CopyVisibility.js';
import {
  type CopyOutcome,
  type DeliveryDeps,
  deliverCopy,
  endpointBreakers,
  recentEndpoints,
} from './deliverCopy.js';

/**
 * The delivery function's batch: every copy at once (each attempt has its own timeout, so one slow
 * endpoint does not hold the others' attempts back; the batch, and its slot, lasts as long as its
 * slowest copy, so an endpoint that stalled is not POSTed again for a while: its copies are deferred
 * by the function's endpoint breakers, core/webhookEndpointBreaker.ts), the ones that must come back reported as batch
 * item failures, and so is a body that cannot be decoded (the queue's redrive policy dead-letters
 * it). It never throws for one copy. The endpoints it reads are kept briefly for the function's
 * life (recentEndpoints: a removed one stops receiving within WEBHOOK_ENDPOINT_MAX_AGE_MS). A copy
 * kept after a failure of its own comes back after a short backoff (keptCopyVisibilitySeconds), not
 * after the queue's six-minute visibility timeout.
 */
export function createWebhookDeliveryHandler(
  deps: DeliveryDeps & { readonly visibility?: CopyVisibility },
): (event: SQSEvent) => Promise<SQSBatchResponse> {
  const warm: DeliveryDeps = {
    ...deps,
    endpoint: deps.endpoint ?? recentEndpoints(deps.store, deps.now),
    breakers: deps.breakers ?? endpointBreakers(deps.random),
  };
  return async function deliverBatch(event: SQSEvent): Promise<SQSBatchResponse> {
    const outcomes = await Promise.all(
      event.Records.map(async (record): Promise<CopyOutcome | 'kept'> => {
        try {
          const outcome = await deliverCopy(record.body, warm);
          if (outcome !== 'malformed') return outcome;
          // Not ours to read, and not ours to drop: after the queue's receive limit the redrive
          // policy moves it to the DLQ, whose alarm brings it to a person.
          deps.log?.warn('webhook copy cannot be decoded; failed for the dead-letter queue', {
            messageId: record.messageId,
          });
          return 'kept';
        } catch (error) {
          const seconds = keptCopyVisibilitySeconds(receiveCountOf(record.attributes), deps.random);
          deps.log?.warn('webhook copy kept for a retry', {
            messageId: record.messageId,
            retryInSeconds: seconds,
            error: errorForLog(error),
          });
          // Refused (an expired receipt handle, say): the queue's own timeout brings it back.
          await deps.visibility?.change(record.receiptHandle, seconds);
          return 'kept';
        }
      }),
    );
    const counts: Record<string, number> = {};
    for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
    deps.log?.debug?.('webhook batch done', { records: event.Records.length, ...counts });
    return {
      batchItemFailures: event.Records.flatMap((record, index) =>
        outcomes[index] === 'kept' ? [{ itemIdentifier: record.messageId }] : [],
      ),
    };
  };
}
