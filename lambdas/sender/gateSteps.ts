import { errorForLog } from '../core/errorForLog.js';
import { SENDER_METRIC } from '../core/metricNames.js';
import type { OutcomeDecision } from '../core/sendDecision.js';
import type { SendOutcome } from '../ports/Mailer.js';
import type { MessageStateRecord } from '../store/messageRecord.js';
import { type CopyDependencies, type CopyRun, logContext } from './copyRun.js';
import { ack, type CopyVerdict, keep } from './copyVerdict.js';

/**
 * The sender's three steps at the sending gate (sender/relayGate.ts, core/relayBreaker.ts), kept
 * apart from the copy's main line so that line reads as before: hold a copy while the relay is
 * unavailable or its kind is paused; open the breaker after a relay failure; handle the probe token.
 */

/**
 * Before the rate limit and the claim: the copy goes back unclaimed (no attempt, DESIGN §2) while
 * the breaker is open or its kind is paused, visible again about when the next probe may have closed
 * it. Undefined: it may be sent.
 */
export async function heldByGate(
  run: CopyRun,
  observed: MessageStateRecord,
): Promise<CopyVerdict | undefined> {
  const gate = run.deps.relayGate;
  if (gate === undefined) return undefined;
  const admission = await gate.admit(observed.tags?.kind);
  if (admission.kind === 'send') return undefined;
  run.deps.metrics.count(
    admission.cause === 'paused' ? SENDER_METRIC.sendingPaused : SENDER_METRIC.relayUnavailable,
  );
  run.deps.log.info(
    'sender handed a copy back unclaimed: sending waits',
    logContext(run, { cause: admission.cause, visibilitySeconds: admission.seconds }),
  );
  return keep(
    admission.cause === 'paused' ? 'sending is paused' : 'the relay is unavailable',
    admission.seconds,
  );
}

/**
 * After an attempt, before its outcome is written: a failure that is the relay's opens the breaker
 * for every sender, and this copy waits for the breaker like the others — back at the next probe
 * rather than after its own backoff — and an outage never makes a message `dead` (its attempt still
 * counts when the relay saw it). A gate that cannot be reached changes nothing here: the outcome
 * write must not wait on it.
 */
export async function relayAware(
  run: CopyRun,
  outcome: SendOutcome,
  decision: OutcomeDecision,
): Promise<OutcomeDecision> {
  const gate = run.deps.relayGate;
  if (gate === undefined) return decision;
  let unavailable: boolean;
  try {
    unavailable = await gate.afterAttempt(outcome);
  } catch (error) {
    run.deps.log.warn(
      'sender could not update the relay breaker',
      logContext(run, { error: errorForLog(error) }),
    );
    return decision;
  }
  if (!unavailable || (decision.to !== 'retrying' && decision.to !== 'dead')) return decision;
  return { ...decision, to: 'retrying', visibilitySeconds: gate.waitSeconds() };
}

/** The probe token's copy (`{v, id: PROBE_TOKEN_ID, rev: token}`): probe when due, or re-arm. */
export async function probeToken(
  deps: CopyDependencies,
  token: number,
  sqsMessageId: string,
): Promise<CopyVerdict> {
  const gate = deps.relayGate;
  if (gate === undefined) return ack('probe token without a gate');
  const outcome = await gate.onToken(token);
  deps.log.info('sender handled the probe token', {
    sqsMessageId,
    outcome: outcome.kind === 'done' ? outcome.reason : 'kept',
  });
  return outcome.kind === 'done' ? ack(outcome.reason) : keep('probe token kept', outcome.seconds);
}
