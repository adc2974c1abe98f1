/**
 * The shapes of the identifiers callers give us. Kept apart from the message schema so that small
 * functions (the authorizer) can check a tenant without bundling zod.
 */

/** A tenant: lower-case letters, digits, `_` and `-`, 1–64 characters, starting with a letter or digit. */
export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Idempotency-Key: 1–255 printable ASCII characters (IETF httpapi Idempotency-Key draft). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;
