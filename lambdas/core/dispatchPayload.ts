/**
 * The only thing SQS and the scheduler ever carry: `{ "v": 1, "id": "…", "rev": 3 }` (DESIGN §2).
 * A copy the sender moves to the dead-letter queue carries `"dlq": true` as well, so that when an
 * operator redrives it the sender can tell it from a stray copy of a `dead` message (DESIGN §5,
 * "Dead means dead"), and `"death"`: which of the message's deaths it stands for, so that a
 * leftover copy of an earlier death never redrives a later one (decision 0149). The body is the one
 * thing every redrive (console, CLI, SDK) keeps.
 */
import { isMessageId } from './ids.js';

export interface DispatchPayload {
  readonly v: 1;
  readonly id: string;
  readonly rev: number;
  /** Present (true) only on a copy the sender put in the DLQ. */
  readonly dlq?: true;
  /**
   * Only with `dlq`: which death of the message it stands for, named by the message's `attempts`
   * when it became `dead` (core/sendDecision.ts `redrivesDeath`). Absent on a copy put in the DLQ
   * before decision 0149.
   */
  readonly death?: number;
}

export type ParsedDispatchPayload =
  | { readonly ok: true; readonly payload: DispatchPayload }
  | { readonly ok: false; readonly reason: string };

/** Encodes a payload; refuses (RangeError) one its own parser would reject, so no bad copy is ever sent. */
export function encodeDispatchPayload(payload: {
  id: string;
  rev: number;
  dlq?: boolean;
  death?: number | undefined;
}): string {
  const body = JSON.stringify({
    v: 1,
    id: payload.id,
    rev: payload.rev,
    ...(payload.dlq === true ? { dlq: true } : {}),
    ...(payload.death === undefined ? {} : { death: payload.death }),
  });
  const parsed = parseDispatchPayload(body);
  if (!parsed.ok) throw new RangeError(`cannot encode dispatch payload: ${parsed.reason}`);
  return body;
}

/** The copy that stands for a `dead` message in the DLQ: marked, and naming its death. */
export interface DeadLetterPayload {
  readonly id: string;
  readonly rev: number;
  readonly dlq: true;
  readonly death: number;
}

/**
 * The copy that stands for a `dead` message in the DLQ, made from its record as the death left it:
 * what the sender moves there, and what the sweeper makes when one is missing or renews (decision
 * 0148). It names the death by the attempts the message died with (core/sendDecision.ts
 * `redrivesDeath`, decision 0149).
 */
export function deadLetterPayload(record: {
  readonly id: string;
  readonly rev: number;
  readonly attempts?: number | undefined;
}): DeadLetterPayload {
  return { id: record.id, rev: record.rev, dlq: true, death: record.attempts ?? 0 };
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
  const { v, id, rev, dlq, death } = value as Record<string, unknown>;
  if (v !== 1)
    return {
      ok: false,
      reason: `unsupported payload version ${JSON.stringify(v) ?? 'undefined'} (expected 1)`,
    };
  if (typeof id !== 'string' || !isMessageId(id))
    return { ok: false, reason: 'id must be a URL-safe string of 1–32 characters' };
  if (typeof rev !== 'number' || !Number.isSafeInteger(rev) || rev < 1) {
    return { ok: false, reason: 'rev must be a positive integer' };
  }
  if (dlq !== undefined && dlq !== true) return { ok: false, reason: 'dlq must be true when present' };
  if (death !== undefined) {
    if (typeof death !== 'number' || !Number.isSafeInteger(death) || death < 0)
      return { ok: false, reason: 'death must be a whole number of attempts' };
    if (dlq !== true) return { ok: false, reason: 'death comes only with dlq' };
  }
  const extra = Object.keys(value).filter((key) => !['v', 'id', 'rev', 'dlq', 'death'].includes(key));
  if (extra.length > 0) return { ok: false, reason: `unexpected field(s): ${extra.join(', ')}` };
  if (dlq !== true) return { ok: true, payload: { v: 1, id, rev } };
  return { ok: true, payload: death === undefined ? { v: 1, id, rev, dlq } : { v: 1, id, rev, dlq, death } };
}
