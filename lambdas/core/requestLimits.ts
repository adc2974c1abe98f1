import { type ProblemDetails, problem } from './problem.js';

/**
 * The request limits of the HTTP API (docs/api.md, "Limits") and the shapes of the identifiers
 * callers give us: plain values, no zod, so that small functions (the authorizer) can check a tenant
 * without bundling a schema. The schemas, the body reader, the routes and the OpenAPI document all
 * read them from here.
 */

/** A tenant: lower-case letters, digits, `_` and `-`, 1–64 characters, starting with a letter or digit. */
export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Idempotency-Key: 1–255 printable ASCII characters (IETF httpapi Idempotency-Key draft). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;

/**
 * The key an `Idempotency-Key` header value names, or null when it names none the API takes. The IETF
 * httpapi draft defines the header as a Structured Field string (`"8e03978e-…"`); a bare value is
 * accepted too, as most clients send one. Either way the key, trimmed and unquoted, is 1–255 printable
 * ASCII characters, and `"abc"` and `abc` are the same key. The API reads the header by this rule,
 * and the typed client judges a key by it before sending.
 */
export function idempotencyKeyOf(value: string): string | null {
  const key = unquote(value.trim());
  return key !== null && IDEMPOTENCY_KEY_PATTERN.test(key) ? key : null;
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

/** The page size of GET /v1/messages (`limit`). */
export const LIST_LIMIT = { default: 20, min: 1, max: 100 } as const;

/** The page size of GET /v1/suppressions (`limit`). */
export const SUPPRESSION_LIST_LIMIT = { default: 50, min: 1, max: 100 } as const;

/** Every other limit of a request. */
export const LIMITS = {
  /** Recipients in to + cc + bcc together. */
  maxRecipients: 50,
  /** One address with its display name. */
  maxAddressLength: 320,
  maxDisplayNameLength: 200,
  /**
   * RFC 5322's line limit (998), less the space the mailer's fold puts before a run it cannot break:
   * a subject without spaces gets a line of its own (decision 0329).
   */
  maxSubjectLength: 997,
  maxHeaders: 50,
  maxHeaderNameLength: 100,
  /** As the subject's (decision 0329). */
  maxHeaderValueLength: 997,
  maxTags: 10,
  maxTagKeyLength: 64,
  maxTagValueLength: 128,
  maxMetadataEntries: 20,
  maxMetadataKeyLength: 64,
  maxMetadataValueLength: 512,
  /** tags + metadata as JSON, UTF-8: they live on the small state record that is written 3+ times. */
  maxTagsAndMetadataBytes: 2048,
  maxGroupKeyLength: 200,
  /** The whole request body (HTTP: 413 above it). */
  maxBodyBytes: 256 * 1024,
  /** Items of one POST /v1/messages/batch (DESIGN §3a). */
  maxBatchMessages: 100,
  /**
   * A batch's whole body (HTTP: 413 above it); each item is still held to maxBodyBytes as a single
   * enqueue is (bytesBeyondInline). Lambda takes at most 6 MB per synchronous invocation, the body escaped inside the event's JSON
   * (at worst twice its size): docs/decisions/0076-batch-body-bound.md.
   */
  maxBatchBodyBytes: 2 * 1024 * 1024,
} as const;

/**
 * An enqueue body's size as `LIMITS.maxBodyBytes` holds it: its JSON in UTF-8 with each inline
 * attachment's base64 `content` left out (counted as `""`), since POSTDATE_INLINE_ATTACHMENT_MAX_KB
 * bounds those bytes instead (DESIGN §3, §13). A single enqueue and each batch item are measured by
 * this one rule, so an item answers the 413 a single enqueue of it would, and no other (§3a).
 */
export function bytesBeyondInline(value: unknown): number {
  let bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  const attachments = (value as { attachments?: unknown } | null)?.attachments;
  if (!Array.isArray(attachments)) return bytes;
  for (const attachment of attachments) {
    const content = (attachment as { content?: unknown } | null)?.content;
    // The quotes stay: the body is measured as if the content were empty.
    if (typeof content === 'string') bytes -= Buffer.byteLength(JSON.stringify(content)) - 2;
  }
  return bytes;
}

/**
 * The 413 of a parsed enqueue body over `maxBytes` beside its inline attachments' content
 * (bytesBeyondInline), or null: a single enqueue's body, each batch item and the outbox helper's
 * parseEnqueueRequest are judged by it.
 */
export function bodySizeProblem(value: unknown, maxBytes: number): ProblemDetails | null {
  return bytesBeyondInline(value) > maxBytes ? bodyTooLarge(maxBytes) : null;
}

/** The 413 of a body over `maxBytes`. */
export function bodyTooLarge(maxBytes: number): ProblemDetails {
  return problem('payloadTooLarge', `The body is larger than ${maxBytes} bytes.`, {
    errors: [{ field: 'body', message: `must be at most ${maxBytes} bytes` }],
  });
}
