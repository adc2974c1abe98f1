/**
 * The relays mail may leave through, in order (DESIGN §15): `POSTDATE_RELAYS`, a JSON array, or —
 * without it — the one relay `SMTP_*` describes, named {@link DEFAULT_RELAY}. Each relay has its own
 * breaker (core/relayBreaker.ts); a copy goes to the first relay whose breaker is closed.
 * Pure: reads no environment, the loader (core/config.ts) hands the text in.
 */
import { isHostName } from './addresses.js';
import {
  BREAKER_STATE,
  type BreakerSettings,
  type GateWaitCause,
  gateDecision,
  NOT_PAUSED,
  type SendingGateState,
} from './relayBreaker.js';

/** The name of the one relay `SMTP_*` describes; its breaker keeps the gate item it always had. */
export const DEFAULT_RELAY = 'default';

/** The variable that lists the relays. */
export const RELAYS_VARIABLE = 'POSTDATE_RELAYS';

export interface RelayConfig {
  /** Letters, digits, `-` and `_`; unique in the list. Named in attempts, metrics and the CLI. */
  readonly name: string;
  /** Absent locally means "use the local SMTP sink" (the default relay only). */
  readonly host: string | undefined;
  readonly port: number | undefined;
  readonly secure: boolean;
  readonly requireTls: boolean;
  readonly user: string | undefined;
  readonly pass: string | undefined;
  /** In AWS: the secret with this relay's login (`{ "username", "password" }`). */
  readonly secretArn: string | undefined;
  /** This relay's rate for the whole fleet, recipients per second; undefined is unlimited. */
  readonly maxSendRate: number | undefined;
}

/**
 * The port a relay is reached on: its own, else 465 for implicit TLS (`secure`) and 587 for
 * submission (DESIGN §8 `SMTP_PORT`). The sender and the local stack's relay list both read it.
 */
export function relayPort(relay: Pick<RelayConfig, 'port' | 'secure'>): number {
  return relay.port ?? (relay.secure ? 465 : 587);
}

/**
 * The secret that holds a relay's login in AWS: its own `secret_arn`, or for the one relay `SMTP_*`
 * describes ({@link DEFAULT_RELAY}) POSTDATE_SMTP_SECRET_ARN. Undefined: the relay has none (it logs
 * in with its `user`/`pass`, or not at all). The sender reads it; test/iam/ simulates that read.
 */
export function relaySecretArn(
  relay: Pick<RelayConfig, 'name' | 'secretArn'>,
  smtpSecretArn: string | undefined,
): string | undefined {
  return relay.secretArn ?? (relay.name === DEFAULT_RELAY ? smtpSecretArn : undefined);
}

/** Thrown by {@link parseRelays}; the loader turns it into a ConfigError naming the variable. */
export class RelayListError extends Error {
  override readonly name = 'RelayListError';
}

const NAME = /^[A-Za-z0-9_-]{1,32}$/;
const FIELDS = new Set([
  'name',
  'host',
  'port',
  'secure',
  'require_tls',
  'user',
  'pass',
  'secret_arn',
  'max_send_rate',
]);

/**
 * Reads `POSTDATE_RELAYS`: a non-empty JSON array of `{name, host, port, secure, require_tls, user?,
 * pass?, secret_arn?, max_send_rate?}`. A bad entry throws a {@link RelayListError} that names the
 * entry (by name when it has one, else by position) and the field.
 */
export function parseRelays(text: string): readonly RelayConfig[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new RelayListError('must be a JSON array of relays');
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new RelayListError('must be a non-empty JSON array of relays');
  }
  const relays = parsed.map((entry: unknown, index) => relayOf(entry, index));
  const seen = new Set<string>();
  for (const relay of relays) {
    if (seen.has(relay.name)) throw new RelayListError(`relay "${relay.name}": name is used twice`);
    seen.add(relay.name);
  }
  return relays;
}

function relayOf(entry: unknown, index: number): RelayConfig {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new RelayListError(`relay ${index + 1}: must be an object`);
  }
  const value = entry as Record<string, unknown>;
  const label = typeof value.name === 'string' ? `relay "${value.name}"` : `relay ${index + 1}`;
  const problem = (field: string, reason: string) => new RelayListError(`${label}: ${field} ${reason}`);
  for (const field of Object.keys(value)) {
    if (!FIELDS.has(field)) throw problem(field, 'is not a relay field');
  }
  const text = (field: string, required: boolean): string | undefined => {
    const raw = value[field];
    if (raw === undefined && !required) return undefined;
    if (typeof raw !== 'string' || raw.trim() === '') throw problem(field, 'must be a non-empty string');
    return raw.trim();
  };
  const flag = (field: string): boolean => {
    const raw = value[field];
    if (raw === undefined) throw problem(field, 'is required: true or false');
    if (typeof raw !== 'boolean') throw problem(field, 'must be true or false');
    return raw;
  };
  const name = text('name', true) ?? '';
  const host = text('host', true) ?? '';
  if (!isHostName(host)) throw problem('host', `must be a host name or an IP address, got "${host}"`);
  if (!NAME.test(name)) throw problem('name', 'must be 1 to 32 letters, digits, "-" or "_"');
  const port = value.port;
  if (port === undefined) throw problem('port', 'is required: a whole number between 1 and 65535');
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw problem('port', 'must be a whole number between 1 and 65535');
  }
  const user = text('user', false);
  const pass = text('pass', false);
  if ((user === undefined) !== (pass === undefined)) {
    throw problem(
      user === undefined ? 'user' : 'pass',
      'must be set with the other: user and pass go together',
    );
  }
  const rate = value.max_send_rate;
  if (rate !== undefined && (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0)) {
    throw problem('max_send_rate', 'must be a positive number');
  }
  return {
    name,
    host,
    port,
    secure: flag('secure'),
    requireTls: flag('require_tls'),
    user,
    pass,
    secretArn: text('secret_arn', false),
    maxSendRate: rate,
  };
}

/** One relay's gate answer (sender/relayGate.ts `admit`, decided by core/relayBreaker.ts `gateDecision`). */
export type RelayAdmission =
  | { readonly kind: 'send'; readonly rateFactor: number }
  | { readonly kind: 'wait'; readonly seconds: number; readonly cause: GateWaitCause };

export type FailoverDecision =
  /** Send through the relay at `index` (in the list's order), at `rateFactor` of its rate. */
  | { readonly kind: 'send'; readonly index: number; readonly rateFactor: number }
  /** Hand the copy back unclaimed, visible again after `seconds`; no attempt. */
  | { readonly kind: 'wait'; readonly seconds: number; readonly cause: GateWaitCause };

/**
 * Which relay a copy leaves through (DESIGN §15), from the gate answers of the relays in order, as
 * far as they have been asked: the first relay that lets it. A relay that is unavailable (its breaker
 * open), whose daily quota is spent (its hold after the quota reply, decision 0198) or that the
 * operator disabled (the drain) passes the copy to the next. A pause holds the copy (the operator
 * paused sending, every relay), and so does a rate throttle (the fleet slows down, it does not move
 * — docs/decisions/0085-one-breaker-per-relay.md). When no relay takes it, it waits until the
 * soonest probe of an unavailable relay or end of a quota hold (or, every relay disabled, one
 * interval): with one relay, a quota-held copy waits for the hold. Undefined while the answer of the next relay (`admissions.length < relayCount`) is
 * needed: the sender asks the gates one by one, so a copy that leaves through the first relay never
 * reads the others'.
 */
export function failoverDecision(
  admissions: readonly RelayAdmission[],
  relayCount: number,
): FailoverDecision | undefined {
  let soonest: Extract<RelayAdmission, { kind: 'wait' }> | undefined;
  for (const [index, admission] of admissions.entries()) {
    if (index >= relayCount) break;
    if (admission.kind === 'send') return { kind: 'send', index, rateFactor: admission.rateFactor };
    if (admission.cause === 'paused' || admission.cause === 'throttled') return admission;
    // An unavailable relay's probe or a quota hold's end says when to look again; a disabled relay
    // only when no relay is unavailable or held.
    const timed = (cause: GateWaitCause) => cause !== 'relay-disabled';
    if (
      soonest === undefined ||
      (timed(admission.cause) === timed(soonest.cause) && admission.seconds < soonest.seconds) ||
      (timed(admission.cause) && !timed(soonest.cause))
    ) {
      soonest = admission;
    }
  }
  if (admissions.length < relayCount) return undefined;
  return soonest ?? { kind: 'wait', seconds: 1, cause: 'relay-unavailable' };
}

/**
 * A relay's gate as a reader found it (its breaker, whether it is disabled), or `undefined`: the read
 * failed. A gate that cannot be read holds the mail — the sender hands back a copy whose gate it
 * cannot read (no attempt) — so an unread relay takes none: one rule for the sender and the sweeper.
 */
export type RelayGateRead = Pick<SendingGateState, 'breaker' | 'disabled'> | undefined;

/**
 * The relay mail leaves through now, pauses aside (DESIGN §15): the index of the first relay whose
 * breaker is closed, not disabled nor quota-held, as {@link failoverDecision} chooses it; undefined when
 * no relay takes mail. A probe that is due is not a send, and a relay whose gate could not be read
 * takes no mail ({@link RelayGateRead}). For the operator's `relays status` and the sweeper, which
 * leaves overdue messages to the senders while no relay takes them.
 */
export function relayInUse(
  gates: readonly RelayGateRead[],
  now: Date,
  settings: BreakerSettings,
): number | undefined {
  const admissions = gates.map((gate): RelayAdmission => {
    if (gate === undefined) return { kind: 'wait', seconds: 1, cause: 'relay-unavailable' };
    const decision = gateDecision({ ...gate, pause: NOT_PAUSED }, undefined, now, settings);
    return decision.kind === 'probe' ? { kind: 'wait', seconds: 1, cause: 'relay-unavailable' } : decision;
  });
  const decision = failoverDecision(admissions, admissions.length);
  return decision?.kind === 'send' ? decision.index : undefined;
}

/**
 * What the relay alarms watch (docs/runbook.md §5, §5a), as the sweeper publishes it every run. A
 * gauge the run could not know (a gate it could not read) is undefined: it is not published, and its
 * alarm keeps its state, as after a late run (missing data ignored).
 */
export interface RelayGauges {
  /**
   * Per relay, in order: 1 while its breaker holds the mail that would leave through it (not closed,
   * and the relay enabled). A disabled relay's is 0: the drain is the operator's, and a disabled
   * relay is never probed, so its breaker stays as it was and says nothing about the relay.
   * Undefined for a relay whose gate could not be read.
   */
  readonly unavailable: readonly (0 | 1 | undefined)[];
  /**
   * 1 while mail leaves through a relay other than the first ({@link relayInUse} > 0: the first is
   * unavailable, disabled or its daily quota spent); 0 while it leaves through the first, or through none. Through none,
   * the `unavailable` gauge of each enabled relay is on; but with every relay disabled (`relays
   * disable --force`) no relay gauge is on and mail waits with no relay alarm: the operator's
   * doing, which `relays status` shows. Undefined when an unread gate could change the answer
   * (one before the relay in use, or any while none is).
   */
  readonly failover: 0 | 1 | undefined;
}

/** {@link RelayGauges} from the relays' gates in order, pauses aside. */
export function relayGauges(
  gates: readonly RelayGateRead[],
  now: Date,
  settings: BreakerSettings,
): RelayGauges {
  const inUse = relayInUse(gates, now, settings);
  // The answer rests on the gates up to the one in use (all of them while none is).
  const known = gates
    .slice(0, inUse === undefined ? gates.length : inUse + 1)
    .every((gate) => gate !== undefined);
  return {
    unavailable: gates.map((gate) => {
      if (gate === undefined) return undefined;
      return gate.disabled === undefined && gate.breaker.state !== BREAKER_STATE.closed ? 1 : 0;
    }),
    failover: !known ? undefined : inUse !== undefined && inUse > 0 ? 1 : 0,
  };
}
