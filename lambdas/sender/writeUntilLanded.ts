import type { MessageStatus } from '../core/messageStatus.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import { leaseWaitSeconds } from '../core/sendDecision.js';
import { isOwnEarlierWrite, nextWriteTry } from '../core/writeRetry.js';
import type { SenderWriteResult } from '../ports/SenderStore.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import { type CopyRun, errorName, logContext } from './copyRun.js';
import { ack, type CopyVerdict, keep } from './copyVerdict.js';

export type Landed =
  | { readonly kind: 'applied' }
  | { readonly kind: 'not-applied'; readonly verdict: CopyVerdict };

/**
 * A write after the claim, tried until it lands (DESIGN §5): it is conditional on our lease, so a
 * retry can never overwrite someone else's move, and a message the relay accepted is never sent
 * again because our own write failed. A conflict after a failed try may be our own earlier try
 * that landed with its answer lost: the record tells (lambdas/core/writeRetry.ts).
 */
export async function writeUntilLanded(
  run: CopyRun,
  write: () => Promise<SenderWriteResult>,
  ours: { readonly status: MessageStatus; readonly now: Date },
  claimed: MessageStateRecord,
): Promise<Landed> {
  const { deps } = run;
  for (let attempt = 0; ; attempt += 1) {
    try {
      const result = await write();
      if (result.outcome === 'applied') return { kind: 'applied' };
      if (
        attempt > 0 &&
        isOwnEarlierWrite(await deps.store.readState(run.id), { status: ours.status, at: ours.now })
      ) {
        return { kind: 'applied' };
      }
      // Our lease was taken over (the send outlived it); the new holder has its own copy and
      // treats our attempt as ambiguous. Nothing more is ours to write.
      deps.log.error('sender lost its lease before its write', logContext(run, {}));
      return { kind: 'not-applied', verdict: ack('lease lost before the write') };
    } catch (error) {
      const step = nextWriteTry(attempt, run.time.remainingMs(), deps.random);
      if (step.kind === 'give-up') {
        deps.metrics.count(SENDER_METRIC.outcomeWriteFailures);
        deps.log.error(
          'sender gave up writing after its attempt: the invocation is out of time',
          logContext(run, { tries: attempt + 1, error: errorName(error) }),
        );
        // The copy returns when our lease has run out; whoever takes it then finds it ambiguous.
        return {
          kind: 'not-applied',
          verdict: keep(
            'the write after the attempt never landed',
            leaseWaitSeconds(claimed.lease_until, deps.now()),
          ),
        };
      }
      deps.metrics.count(SENDER_METRIC.outcomeWriteRetries);
      await deps.sleep(step.pauseMs);
    }
  }
}
