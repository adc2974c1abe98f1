/**
 * What core validation reports: the fields that are wrong and why, never a transport's answer. The
 * api turns them into a 400 problem (lambdas/api/problem.ts); the outbox helper and applications get
 * the same problem document from the parsers in messageSchema.ts.
 *
 * `field` names what was wrong (docs/api.md, "Errors"):
 * - a JSON Pointer (RFC 6901) into the request body, e.g. `/to/2`, `/headers/X-Campaign`, `/group/version`;
 * - `body` for the body as a whole (not JSON, too large, not an object);
 * - the request header's name, e.g. `Idempotency-Key`, `Content-Type`;
 * - the query parameter or path parameter's name, e.g. `status`, `limit`, `cursor`, `id`, `key`.
 *
 * A `message` never echoes the value it judged (values may be addresses).
 */

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/** A validation's answer: the canonical value, or every field that is wrong. */
export type Validated<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errors: readonly FieldError[] };

/** Keeps the first error of each field, in order. */
export function uniqueByField(errors: readonly FieldError[]): FieldError[] {
  const seen = new Set<string>();
  const unique: FieldError[] = [];
  for (const error of errors) {
    if (seen.has(error.field)) continue;
    seen.add(error.field);
    unique.push(error);
  }
  return unique;
}

/** One sentence naming the fields (at most five, then a count), e.g. `2 fields are invalid: /to/0, /subject.` */
export function describeFieldErrors(errors: readonly FieldError[]): string {
  if (errors.length === 0) return 'The request is invalid.';
  const fields = errors.map((error) => error.field);
  const shown = fields.slice(0, 5).join(', ');
  const more = fields.length > 5 ? ` and ${fields.length - 5} more` : '';
  return `${errors.length === 1 ? 'One field is' : `${errors.length} fields are`} invalid: ${shown}${more}.`;
}

/** Escapes one JSON Pointer reference token (RFC 6901 §3: `~` → `~0`, `/` → `~1`). */
export function pointerToken(token: string | number): string {
  return String(token).replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Builds a JSON Pointer from path segments: `['to', 2]` → `/to/2`; `[]` → `body`. */
export function jsonPointer(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'body';
  return path.map((segment) => `/${pointerToken(segment)}`).join('');
}

/** Runs a validation that must never throw; a hostile value (a getter, a proxy) that does is a bad body. */
export function guarded<T>(validate: () => Validated<T>): Validated<T> {
  try {
    return validate();
  } catch {
    // Defensive: zod does not throw on data, but a hostile value could.
    return { ok: false, errors: [{ field: 'body', message: 'could not be read' }] };
  }
}
