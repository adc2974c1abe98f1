/**
 * Where attachments' bytes live (DESIGN §13), in our words: the api stores inline bytes, reserves
 * uploads and takes an upload into a message; the sender opens a stream. The S3 adapter is
 * adapters/S3AttachmentStore.ts. Keys are laid out by core/attachments.ts.
 */
import type { AttachmentLifetime, WrittenLifetime } from '../core/attachments.js';
import { PostdateError } from '../core/postdateError.js';

/** What the store knows of an object without reading it. */
export interface StoredObject {
  readonly size: number;
  readonly contentType: string;
  /**
   * S3's ETag: in this bucket (SSE-S3, objects written by PUT or CopyObject, never multipart) the MD5
   * of the bytes, kept by a copy; undefined when the store gives none.
   */
  readonly etag?: string | undefined;
}

/** A pre-signed PUT: the URL and when it stops working. */
export interface PresignedUpload {
  readonly url: string;
  readonly expiresAt: Date;
}

export interface AttachmentStore {
  /**
   * Stores bytes under `key` (an inline attachment, or an upload's declaration); `lifetime` is the
   * tag written with them, in the same request (an enqueue's `pending`).
   */
  put(key: string, bytes: Uint8Array, contentType: string, lifetime?: WrittenLifetime): Promise<void>;
  /** A small object read whole, or undefined when there is none (an upload's declaration). */
  read(key: string): Promise<Uint8Array | undefined>;
  /** The size and type of an object, or undefined when there is none. */
  describe(key: string): Promise<StoredObject | undefined>;
  /**
   * Copies an object within the store (no bytes through the function) and answers the copy's
   * SHA-256, hex; undefined when the source is gone. The copy carries `lifetime` as its only tag.
   */
  copy(
    from: string,
    to: string,
    lifetime?: WrittenLifetime,
  ): Promise<{ readonly sha256: string } | undefined>;
  /** The SHA-256 of an object, hex, read as a stream (never whole in memory); undefined when there is none. */
  hash(key: string): Promise<string | undefined>;
  /**
   * Tags an object with its message's lifetime (`postdate-lifetime`), which the bucket's lifecycle
   * reads; an object that is gone needs no tag (nothing to expire).
   */
  setLifetime(key: string, lifetime: AttachmentLifetime): Promise<void>;
  /**
   * Tags an ended message's object `ended`. The lifecycle counts its days from the object's write, so
   * when `rewrite(writtenAt)` says so the object is copied onto itself instead (no bytes through the
   * function; its type and metadata kept; the tag in the same request) and the count starts now
   * (docs/decisions/0191). Answers what was done; `gone` for an object no longer there.
   */
  endLifetime(key: string, rewrite: (writtenAt: Date) => boolean): Promise<'rewritten' | 'tagged' | 'gone'>;
  /** The bytes as a stream, read as they are sent (the sender never holds a large file whole). */
  open(key: string): Promise<AsyncIterable<Uint8Array>>;
  /**
   * A PUT URL valid `expiresInSeconds` from `now` (less when the credentials signing it end sooner),
   * with the exact size and type in its signature; `expiresAt` is when S3 stops taking it.
   */
  presignPut(
    key: string,
    upload: {
      readonly size: number;
      readonly contentType: string;
      readonly expiresInSeconds: number;
      readonly now: Date;
    },
  ): Promise<PresignedUpload>;
}

/** An object that should be there and is not: the sender's attachment, gone (permanent: no retry brings it back). */
export class AttachmentMissingError extends PostdateError {
  override readonly name = 'AttachmentMissingError';
  constructor(
    readonly key: string,
    cause?: unknown,
  ) {
    super('an attachment of the message is missing from the store', { class: 'permanent', cause });
  }
}
