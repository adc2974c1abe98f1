/**
 * The only thing SQS and the scheduler ever carry: `{ "v": 1, "id": "…", "rev": 3 }` (DESIGN §2).
 * A copy the sender moves to the dead-letter queue carries `"dlq": true` as well, so that when an
 * operator redrives it the sender can tell it from a stray copy of a `dead` message (DESIGN §5,
 * "Dead means dead"): the body is the one thing every redrive (console, CLI, SDK) keeps.
 */
export interface DispatchPayload {
  readonly v: 1;
  readonly id: string;
  readonly rev: number;
  /** Present (true) only on a copy the sender put in the DLQ. */
  readonly dlq?: true;
}

export type ParsedDispatchPayload =
  | { readonly ok: true; readonly payload: DispatchPayload }
  | { readonly ok: false; readonly reason: string };

const ID_PATTERN = /^[0-9A-Za-z_-]{1,32}$/;

/** Encodes a payload; refuses (RangeError) one its own parser would reject, so no bad copy is ever sent. */
export function encodeDispatchPayload(payload: { id: string; rev: number; dlq?: boolean }): string {
  const body = JSON.stringify({
    v: 1,
    id: payload.id,
    rev: payload.rev,
    ...(payload.dlq === true ? { dlq: true } : {}),
  });
  const parsed = parseDispatchPayload(body);
  if (!parsed.ok) throw new RangeError(`cannot encode dispatch payload: ${parsed.reason}`);
  return body;
}

/** Parses a queue or schedule body; never throws. Any version but 1 is rejected by name. */
export function parseDispatchPayload(body: string): ParsedDispatchPayload {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'body is not a JSON object' };
  }
  const { v, id, rev, dlq } = value as Record<string, unknown>;
  if (v !== 1)
    return {
      ok: false,
      reason: `unsupported payload version ${JSON.stringify(v) ?? 'undefined'} (expected 1)`,
    };
  if (typeof id !== 'string' || !ID_PATTERN.test(id))
    return { ok: false, reason: 'id must be a URL-safe string of 1–32 characters' };
  if (typeof rev !== 'number' || !Number.isSafeInteger(rev) || rev < 1) {
    return { ok: false, reason: 'rev must be a positive integer' };
  }
  if (dlq !== undefined && dlq !== true) return { ok: false, reason: 'dlq must be true when present' };
  const extra = Object.keys(value).filter((key) => !['v', 'id', 'rev', 'dlq'].includes(key));
  if (extra.length > 0) return { ok: false, reason: `unexpected field(s): ${extra.join(', ')}` };
  return { ok: true, payload: dlq === true ? { v: 1, id, rev, dlq } : { v: 1, id, rev } };
}
