import { randomInt } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type BreakerSettings,
  type BreakerState,
  type BreakerStateName,
  PROBE_TOKEN_ID,
  type SendingGateState,
  tokenLost,
  tokenReplaced,
} from '../core/relayBreaker.js';
import { DEFAULT_RELAY } from '../core/relays.js';
import type { DispatchQueue } from '../ports/DispatchQueue.js';
import type { Log } from '../ports/Log.js';
import type { SendingGateStore } from '../ports/SendingGate.js';
import { DynamoSendingGate } from '../store/sendingGate.js';

/** What the sweeper needs to watch the relay breakers (core/relayBreaker.ts). */
export interface SweeperGate {
  /** The gate item: the pauses (and the `default` relay's breaker). */
  readonly store: SendingGateStore;
  readonly settings: BreakerSettings;
  /**
   * Every relay in order (DESIGN §15), each with its gate (store/sendingGate.ts, by relay name).
   * @default the one relay `default`, whose gate is `store`
   */
  readonly relays?: readonly { readonly name: string; readonly store: SendingGateStore }[];
}

/**
 * The gate of one outbox table as every sweep reads it — the scheduled function's (handler.ts) and
 * `relay-failures redrive`'s one-off (cli/relayFailuresCommand.ts) — so both hold what the senders
 * hold: the pauses, and every relay's breaker in order (`relayNames`, as the senders have them).
 */
export function sweeperGateOf(
  documents: DynamoDBDocumentClient,
  tableName: string,
  relayNames: readonly string[],
  settings: BreakerSettings,
): SweeperGate {
  return {
    store: new DynamoSendingGate(documents, tableName),
    settings,
    // Every relay's breaker (DESIGN §15): each lost probe token is re-armed.
    relays: relayNames.map((name) => ({ name, store: new DynamoSendingGate(documents, tableName, name) })),
  };
}

export interface BreakerCheck {
  readonly state: BreakerStateName;
  /** A new probe token was put on the queue because the breaker's was lost. */
  readonly tokenRearmed: boolean;
}

/** One relay as the sweeper found it: its breaker's check and whether an operator disabled it. */
export interface RelayCheck extends BreakerCheck {
  readonly relay: string;
  readonly breaker: BreakerState;
  readonly disabled: SendingGateState['disabled'];
  /** The name of the error that stopped the re-arm of its lost token; the next run tries again. */
  readonly error?: string;
}

/** A relay whose gate the sweeper could not read this run, with the error's name. */
export interface UnreadRelay {
  readonly relay: string;
  readonly unread: string;
}

/**
 * {@link checkBreaker} for every relay, in order (DESIGN §15): each relay's lost token is re-armed,
 * whichever relay mail leaves through meanwhile. A relay whose gate cannot be read, or whose token
 * cannot be re-armed, is left to the next run; an unread one takes no mail this run (core/relays.ts
 * `RelayGateRead`). Never throws: one relay's gate does not stop the run.
 */
export async function checkRelays(
  gate: SweeperGate,
  queue: DispatchQueue,
  now: Date,
  log: Log | undefined,
): Promise<readonly (RelayCheck | UnreadRelay)[]> {
  const relays = gate.relays ?? [{ name: DEFAULT_RELAY, store: gate.store }];
  return Promise.all(
    relays.map(async ({ name, store }): Promise<RelayCheck | UnreadRelay> => {
      let read: SendingGateState;
      try {
        read = await store.read();
      } catch (error) {
        const unread = { relay: name, unread: errorName(error) };
        log?.warn("sweeper could not read a relay's gate", unread);
        return unread;
      }
      const found = { relay: name, breaker: read.breaker, disabled: read.disabled };
      try {
        return { ...(await checkBreaker({ ...gate, store }, read.breaker, queue, now, log, name)), ...found };
      } catch (error) {
        log?.warn("sweeper could not re-arm a relay's probe token", { relay: name, error: errorName(error) });
        return { state: read.breaker.state, tokenRearmed: false, ...found, error: errorName(error) };
      }
    }),
  );
}

/** Whether the sweeper read this relay's gate. */
export function wasRead(relay: RelayCheck | UnreadRelay): relay is RelayCheck {
  return !('unread' in relay);
}

const errorName = (error: unknown): string => (error instanceof Error ? error.name : 'non-error');

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
  relay: string = DEFAULT_RELAY,
): Promise<BreakerCheck> {
  if (!tokenLost(breaker, now, gate.settings)) return { state: breaker.state, tokenRearmed: false };
  const next = tokenReplaced(breaker, String(randomInt(1, 2 ** 31)), now);
  if (next === undefined || (await gate.store.writeBreaker(breaker, next)) === 'conflict') {
    return { state: breaker.state, tokenRearmed: false };
  }
  const { failed } = await queue.enqueue([
    { payload: { id: PROBE_TOKEN_ID, rev: Number(next.token) }, delaySeconds: 0 },
  ]);
  log?.warn('sweeper re-armed the relay probe token', { relay, queued: failed.length === 0 });
  return { state: breaker.state, tokenRearmed: failed.length === 0 };
}
