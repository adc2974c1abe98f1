import type { MessageStateRecord } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { OutboxWriter, stateRecord } from '../relay/records.js';
import { seconds } from '../relay/relayParts.js';
import { documentClient } from '../support/awsLocal.js';

/**
 * Messages ended by the sender's own outcome write (lambdas/store/senderTransitions.ts), so a test of
 * what waits for an operator starts from where the product puts such a message, not from a fixture.
 */
export function senderOutcomes(tableName: string, t0: Date) {
  const sender = new DynamoSenderStore(documentClient(), tableName);
  const outbox = new OutboxWriter(tableName);
  return async function endedAs(
    to: 'sent' | 'failed' | 'dead' | 'unknown',
    options: { tenant?: string } = {},
  ): Promise<MessageStateRecord> {
    const claimed = await outbox.put(
      stateRecord({
        status: 'sending',
        sendAt: t0,
        leaseUntil: seconds(t0, 300),
        createdAt: t0,
        ...(options.tenant ? { tenant: options.tenant } : {}),
      }),
    );
    await outbox.putBody(claimed.id);
    const at = seconds(t0, 1);
    const result = await sender.recordOutcome({
      claimed,
      owner: claimed.lease_owner as string,
      to,
      now: at,
      attempt: {
        at: at.toISOString(),
        outcome:
          to === 'sent' ? 'sent' : to === 'unknown' ? 'ambiguous' : to === 'dead' ? 'transient' : 'permanent',
        code: null,
        enhanced_code: null,
        reply: null,
        duration_ms: 5,
      },
      joinsHistory: true,
      lastError: null,
      retentionDays: 30,
      attempts: 1,
      recipients: { accepted: [], rejected: [] },
    });
    if (result.outcome !== 'applied') throw new Error(`the outcome ${to} did not apply`);
    return result.record;
  };
}
