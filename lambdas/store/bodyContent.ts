/**
 * How a body's `subject`, `text` and `html` are stored (issue 21: write units follow the item's
 * size). The api stores them brotli-compressed in one binary attribute, `content`, marked
 * `content_encoding: 'br'`, when that saves a write unit; else as they are. The readers take
 * either form, so items written before compression existed, or written uncompressed because it did
 * not save, read as they always did. The compressed value is `[subject, text, html]` as JSON, so
 * `null` (no html part) and `''` stay apart and the decoded strings are byte for byte the request's.
 *
 * The subject goes in too so that a sender older than this code, which does not know `content`,
 * finds no `subject`, takes the item for no body and fails the message (`failed`: the body is held
 * and `postdate messages retry` sends it once upgraded) — instead of sending a mail with an empty
 * text, which it would do if only text and html were missing (a deployment that updates the api
 * before the sender).
 */
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { ERROR_CLASS, PostdateError } from '../core/postdateError.js';
import type { MessageBodyRecord } from './messageRecord.js';

/** The marker attribute's value for brotli; an item without the marker has plain `text`/`html`. */
export const BODY_CONTENT_ENCODING = { brotli: 'br' } as const;

/** A body as the table holds it: the record, with `text`/`html` maybe replaced by `content`. */
export type StoredBodyItem = Omit<MessageBodyRecord, 'subject' | 'text' | 'html'> & {
  readonly subject?: string;
  readonly text?: string | null;
  readonly html?: string | null;
  readonly content_encoding?: typeof BODY_CONTENT_ENCODING.brotli;
  readonly content?: Uint8Array;
};

/**
 * Quality 6 of 11: measured on prose (bench/fixtures/mailText.txt), 20 KB compresses 2.5× in about
 * 2 ms; quality 11 gains 12 % more for 20× the time, in a function billed by the millisecond.
 */
const BROTLI_QUALITY = 6;

/** DynamoDB bills an attribute's name and its value; the two forms differ in these. */
const attributeBytes = (name: string, value: string | null): number =>
  Buffer.byteLength(name) + (value === null ? 1 : Buffer.byteLength(value));

/** DynamoDB bills a write by the item's size in 1 KB units. */
const WRITE_UNIT_BYTES = 1024;

/**
 * The item to write for `body`: compressed only when that saves a write unit (so a short body, whose
 * item fits in one unit anyway, stays plain and readable in the console). The rest of the item is
 * sized by its JSON, a slight over-estimate of DynamoDB's count that is the same for both forms.
 */
export function storedBodyItem(body: MessageBodyRecord): StoredBodyItem {
  const { subject, text, html, ...rest } = body;
  const restBytes = Buffer.byteLength(JSON.stringify(rest));
  const plainBytes =
    attributeBytes('subject', subject) + attributeBytes('text', text) + attributeBytes('html', html);
  const units = (bytes: number) => Math.ceil((restBytes + bytes) / WRITE_UNIT_BYTES);
  if (units(plainBytes) <= 1) return body;
  const json = JSON.stringify([subject, text, html]);
  const content = brotliCompressSync(json, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(json),
    },
  });
  const compressedBytes =
    Buffer.byteLength('content') + content.byteLength + attributeBytes('content_encoding', 'br');
  if (units(compressedBytes) >= units(plainBytes)) return body;
  return { ...rest, content_encoding: BODY_CONTENT_ENCODING.brotli, content };
}

/**
 * A body item whose content this code cannot read: an encoding it does not know (written by a newer
 * version, then rolled back) or bytes that do not decode. Thrown, not answered as "no body": the
 * sender then gives the claim back and the copy is retried, then dead-lettered, and redriven once
 * fixed; failing the message as bodiless would lose it for good.
 */
export class BodyContentError extends PostdateError {
  override readonly name = 'BodyContentError';
  constructor(
    readonly id: string,
    readonly encoding: unknown,
    cause?: unknown,
  ) {
    super(`the body of ${id} has content Postdate cannot read (encoding ${String(encoding)})`, {
      class: ERROR_CLASS.config,
      cause,
    });
  }
}

/** The body record of an item read from the table, in either form (`id` names it in an error). */
export function bodyOfStoredItem<T extends object>(item: T, id: string): T {
  const fields = item as Record<string, unknown>;
  const encoding = fields.content_encoding;
  if (encoding === undefined) return item;
  const content = fields.content;
  if (encoding !== BODY_CONTENT_ENCODING.brotli || !(content instanceof Uint8Array))
    throw new BodyContentError(id, encoding);
  let parts: unknown;
  try {
    parts = JSON.parse(brotliDecompressSync(content).toString('utf8'));
  } catch (error) {
    throw new BodyContentError(id, encoding, error);
  }
  if (!Array.isArray(parts) || parts.length !== 3 || typeof parts[0] !== 'string' || !parts.every(isTextPart))
    throw new BodyContentError(id, encoding);
  const { content: _content, content_encoding: _encoding, ...rest } = fields;
  return { ...rest, subject: parts[0], text: parts[1], html: parts[2] } as unknown as T;
}

const isTextPart = (value: unknown): value is string | null => value === null || typeof value === 'string';
