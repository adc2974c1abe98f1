import { IDEMPOTENCY_KEY_PATTERN } from '../core/identifiers.js';
import { type ProblemDetails, problem } from '../core/problem.js';

export type KeyRead =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly problem: ProblemDetails };

/**
 * Reads the `Idempotency-Key` header. The IETF httpapi draft defines it as a Structured Field string
 * (`"8e03978e-…"`); a bare value is accepted too, as most clients send one. Either way the key is
 * 1–255 printable ASCII characters, and `"abc"` and `abc` are the same key.
 */
export function readIdempotencyKey(raw: string | undefined): KeyRead {
  const field = 'Idempotency-Key';
  if (raw === undefined || raw === '') {
    return {
      ok: false,
      problem: problem('missingIdempotencyKey', 'POST /v1/messages needs an Idempotency-Key header.', {
        errors: [{ field, message: 'is required' }],
      }),
    };
  }
  const key = unquote(raw.trim());
  if (key === null || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
    return {
      ok: false,
      problem: problem(
        'invalidIdempotencyKey',
        'The Idempotency-Key must be 1–255 printable ASCII characters.',
        {
          errors: [{ field, message: 'must be 1–255 printable ASCII characters' }],
        },
      ),
    };
  }
  return { ok: true, key };
}

/** An sf-string (`"…"` with `\"` and `\\` escapes) → its content; anything else as is; null if malformed. */
function unquote(value: string): string | null {
  if (!value.startsWith('"')) return value;
  if (value.length < 2 || !value.endsWith('"')) return null;
  let out = '';
  const inner = value.slice(1, -1);
  for (let i = 0; i < inner.length; i++) {
    const char = inner[i];
    if (char === '\\') {
      const next = inner[i + 1];
      if (next !== '"' && next !== '\\') return null;
      out += next;
      i++;
    } else if (char === '"') {
      return null;
    } else {
      out += char;
    }
  }
  return out;
}
