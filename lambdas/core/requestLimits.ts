/** The request limits of the HTTP API (docs/api.md, "Limits"); the schemas and the body reader enforce them. */
export const LIMITS = {
  /** Recipients in to + cc + bcc together. */
  maxRecipients: 50,
  /** One address with its display name. */
  maxAddressLength: 320,
  maxDisplayNameLength: 200,
  /** RFC 5322's line limit; the subject is folded by the mailer but never longer than one line's worth. */
  maxSubjectLength: 998,
  maxHeaders: 50,
  maxHeaderNameLength: 100,
  maxHeaderValueLength: 998,
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
} as const;
