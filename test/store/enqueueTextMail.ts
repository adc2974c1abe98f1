import { type EnqueueDependencies, enqueueMessage } from '../../lambdas/api/routes/enqueue.js';
import { parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import type { MessageStateRecord } from '../../lambdas/store/messageRecord.js';
import { validBody } from '../api/events.js';

/**
 * One text mail due now, parsed and enqueued by the api's own enqueue (api/routes/enqueue.ts) into a
 * real store, as a request's body would be: the state record it wrote.
 */
export async function enqueueTextMail(
  store: EnqueueDependencies['store'],
  mail: {
    readonly text: string;
    readonly now: Date;
    readonly idempotencyKey: string;
    readonly retentionDays: number;
  },
): Promise<MessageStateRecord> {
  const { now } = mail;
  const parsed = parseEnqueueRequest(validBody({ text: mail.text, html: null, send_at: now.toISOString() }), {
    allowedFrom: ['*@example.com'],
    defaultFrom: 'ops@example.com',
    maxHorizonDays: 400,
    now,
  });
  if (!parsed.ok) throw new Error(parsed.problem.title);
  const outcome = await enqueueMessage(
    { store, sleep: async () => {} },
    {
      tenant: 'acme',
      idempotencyKey: mail.idempotencyKey,
      request: parsed.value,
      now,
      random: () => 0.5,
      retentionDays: mail.retentionDays,
    },
  );
  if (outcome.kind !== 'created') throw new Error(`not created: ${outcome.kind}`);
  return outcome.state;
}
