/**
 * The relays mail may leave through, in order (DESIGN §15): `POSTDATE_RELAYS`, a JSON array, or —
 * without it — the one relay `SMTP_*` describes, named {@link DEFAULT_RELAY}. Each relay has its own
 * breaker (core/relayBreaker.ts); a copy goes to the first relay whose breaker is closed.
 * Pure: reads no environment, the loader (core/config.ts) hands the text in.
 */

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
    if (typeof raw !== 'boolean') throw problem(field, 'must be true or false');
    return raw;
  };
  const name = text('name', true) ?? '';
  if (!NAME.test(name)) throw problem('name', 'must be 1 to 32 letters, digits, "-" or "_"');
  const port = value.port;
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
    host: text('host', true),
    port,
    secure: flag('secure'),
    requireTls: flag('require_tls'),
    user,
    pass,
    secretArn: text('secret_arn', false),
    maxSendRate: rate,
  };
}

/**
 * What one relay's gate answer means for the copy (DESIGN §15): `send` through this relay; `next`,
 * try the next relay in order — only when this relay is unavailable (its breaker open, or the
 * operator disabled it); `wait`, hand the copy back — the operator paused sending (for every relay)
 * or the relay is throttling us (its breaker is closed: the fleet slows down, it does not move).
 */
export function failoverStep(
  admission: { readonly kind: 'send' } | { readonly kind: 'wait'; readonly cause: string },
): 'send' | 'next' | 'wait' {
  if (admission.kind === 'send') return 'send';
  return admission.cause === 'relay-unavailable' ? 'next' : 'wait';
}
