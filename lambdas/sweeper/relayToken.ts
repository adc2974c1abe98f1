import { randomInt } from 'node:crypto';
import {
  type BreakerSettings,
  type BreakerState,
  type BreakerStateName,
  PROBE_TOKEN_ID,
  tokenLost,
  tokenReplaced,
} from '../core/relayBreaker.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { SendingGateStore } from '../ports/SendingGate.js';

/** What the sweeper needs to watch the relay breaker (core/relayBreaker.ts). */
export interface SweeperGate {
  readonly store: SendingGateStore;
  readonly settings: BreakerSettings;
}

export interface BreakerCheck {
  readonly state: BreakerStateName;
  /** A new probe token was put on the queue because the breaker's was lost. */
  readonly tokenRearmed: boolean;
}

/**
 * The sweeper's part in an outage (DESIGN §5): the safety net under the probe token. An open breaker
 * whose probe has been due for two intervals with nobody probing lost its token (its copy was lost,
 * or the sender holding it died): the sweeper writes a new token (conditional on the breaker it read)
 * and puts its copy on the queue, so the relay is probed again even when no message copy arrives.
 */
export async function checkBreaker(
  gate: SweeperGate,
  breaker: BreakerState,
  queue: DispatchQueue,
  now: Date,
  log: Log | undefined,
): Promise<BreakerCheck> {
  if (!tokenLost(breaker, now, gate.settings)) return { state: breaker.state, tokenRearmed: false };
  const next = tokenReplaced(breaker, String(randomInt(1, 2 ** 31)), now);
  if (next === undefined || (await gate.store.writeBreaker(breaker, next)) === 'conflict') {
    return { state: breaker.state, tokenRearmed: false };
  }
  const { failed } = await queue.enqueue([
    { payload: { id: PROBE_TOKEN_ID, rev: Number(next.token) }, delaySeconds: 0 },
  ]);
  log?.warn('sweeper re-armed the relay probe token', { queued: failed.length === 0 });
  return { state: breaker.state, tokenRearmed: failed.length === 0 };
}
