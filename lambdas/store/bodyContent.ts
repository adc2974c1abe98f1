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
import type { InlineBody, MessageBodyRecord, MessageStateRecord } from './messageRecord.js';
import { ITEM_SORT_KEY } from './tableLayout.js';

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
 * The item to write for `body` as an item of its own: compressed only when that saves a write unit (so a short body, whose
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
  const compressed = compressedContentOf(body);
  const compressedBytes =
    Buffer.byteLength('content') + compressed.content.byteLength + attributeBytes('content_encoding', 'br');
  if (units(compressedBytes) >= units(plainBytes)) return body;
  return { ...rest, ...compressed };
}

/** A body's `subject`, `text` and `html` as one brotli-compressed attribute. */
interface CompressedContent {
  readonly content_encoding: typeof BODY_CONTENT_ENCODING.brotli;
  readonly content: Uint8Array;
}

/**
 * Each body record's compressed content, computed on the first ask (about 1.6 ms for a 1 KB mail on
 * a loaded machine): the api's enqueue weighs the body inside the state record and as an item of its
 * own (placeBody), then its adapter writes the item (storedBodyItem), each asking for the same bytes.
 * Records are immutable, so the first answer stays true; a record no one holds takes its entry along.
 */
const compressedBodies = new WeakMap<MessageBodyRecord, CompressedContent>();

function compressedContentOf(body: MessageBodyRecord): CompressedContent {
  let compressed = compressedBodies.get(body);
  if (compressed === undefined) {
    compressed = compressedContent(body.subject, body.text, body.html);
    compressedBodies.set(body, compressed);
  }
  return compressed;
}

function compressedContent(subject: string, text: string | null, html: string | null): CompressedContent {
  const json = JSON.stringify([subject, text, html]);
  const content = brotliCompressSync(json, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(json),
    },
  });
  return { content_encoding: BODY_CONTENT_ENCODING.brotli, content };
}

/**
 * DynamoDB's size of a value as it bills it ("Item sizes and formats" in its developer guide): a
 * string or binary its bytes, a number about one byte per two significant digits plus one, null and
 * booleans one byte, a list or map 3 bytes plus one per element plus its elements (a map's names
 * counted as bytes). An item is a map whose own overhead is not billed.
 */
function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') {
    const digits = String(Math.abs(value))
      .replace(/e.*$/, '')
      .replace('.', '')
      .replace(/^0+|0+$/g, '');
    return Math.ceil(Math.max(1, digits.length) / 2) + 1;
  }
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value))
    return 3 + value.reduce((sum: number, element) => sum + 1 + valueBytes(element), 0);
  if (typeof value === 'object' && value !== null) return 3 + attributesBytes(value, 1);
  return 1;
}

function attributesBytes(attributes: object, perAttribute: number): number {
  let sum = 0;
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined) sum += perAttribute + Buffer.byteLength(name) + valueBytes(value);
  }
  return sum;
}

/** An item's billed size in bytes (its attributes' names and values). */
export function itemBytes(item: object): number {
  return attributesBytes(item, 0);
}

const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));

/**
 * How much a send grows the state record after its enqueue: the claim's lease (owner, until: about
 * 85 bytes), then the outcome's history entry, `sent_at`, the relay's id and name and the recipients'
 * positions, less the lease and the `due` keys. Measured 210 bytes in all with a local relay's short
 * reply (test/store/smallBodiesInline.test.ts); SES's reply and message id add about 110.
 */
export const SEND_GROWTH_BYTES = { claim: 100, outcome: 250 } as const;

/**
 * The write units a body of `inlineBytes` adds to the state record's writes of one send: its
 * enqueue, its claim and its outcome, each billed on the state's size at that moment (the larger of
 * before and after, so the claim's size for the claim and the outcome's for the outcome).
 */
function unitsAddedToSend(stateBytes: number, inlineBytes: number): number {
  const sizes = [
    stateBytes,
    stateBytes + SEND_GROWTH_BYTES.claim,
    stateBytes + SEND_GROWTH_BYTES.claim + SEND_GROWTH_BYTES.outcome,
  ];
  return sizes.reduce((sum, size) => sum + writeUnits(size + inlineBytes) - writeUnits(size), 0);
}

/**
 * The write units a body may add to a send beyond what an item of its own would cost, for what the
 * one item saves: a round trip in turn at the enqueue (the caller waits for it), the sender's read
 * of the body and its TTL update (docs/decisions/0158-a-kilobyte-body-goes-inside.md).
 */
const INLINE_UNIT_ALLOWANCE = 1;

/**
 * Whether a body goes inside the state record (docs/decisions/0105-small-bodies-in-the-state-record.md).
 * Inside, every write of the state is billed on the body too: the enqueue, the claim and the outcome
 * of a send. As an item of its own it costs its put and its TTL's update at the end, each billed on
 * its size, and a second put in turn at the enqueue, a read and an update in the sender: worth
 * `INLINE_UNIT_ALLOWANCE` unit.
 */
export function bodyGoesInline(stateBytes: number, inlineBytes: number, separateBytes: number): boolean {
  return unitsAddedToSend(stateBytes, inlineBytes) <= 2 * writeUnits(separateBytes) + INLINE_UNIT_ALLOWANCE;
}

/** The state record's attribute that holds a small body (docs/data-model.md). */
const INLINE_BODY_ATTRIBUTE = 'body';

/**
 * The records to write for a new message, as the api writes them: the state record with its body
 * inside when that costs no more (bodyGoesInline; the subject, text and html compressed when that
 * adds fewer units to the send), else the state record and the body item, compressed as
 * `storedBodyItem` decides. The body item is absent exactly when the state record carries `body`.
 */
export function placeBody(
  state: MessageStateRecord,
  body: MessageBodyRecord,
): { readonly state: MessageStateRecord; readonly body?: StoredBodyItem } {
  const separate = storedBodyItem(body);
  const {
    pk: _pk,
    sk: _sk,
    fingerprint: _fp,
    created_at: _at,
    template: _pin,
    expires_at: _ttl,
    ...fields
  } = body;
  const stateBytes = itemBytes(state);
  const inlineBytes = (inline: InlineBody) => Buffer.byteLength(INLINE_BODY_ATTRIBUTE) + valueBytes(inline);
  const added = (inline: InlineBody) => unitsAddedToSend(stateBytes, inlineBytes(inline));
  const { subject: _subject, text: _text, html: _html, ...envelope } = fields;
  const compressed: InlineBody = { ...envelope, ...compressedContentOf(body) };
  const inline = added(compressed) < added(fields) ? compressed : fields;
  if (!bodyGoesInline(stateBytes, inlineBytes(inline), itemBytes(separate))) return { state, body: separate };
  return { state: { ...state, [INLINE_BODY_ATTRIBUTE]: inline } };
}

/**
 * The body a state record carries inside (`body`), as the body record the sender and the export
 * read: the envelope and content of the attribute, the rest (keys, fingerprint, creation time, the
 * template's pin) from the state record. Undefined when the body is an item of its own; throws
 * BodyContentError as `bodyOfStoredItem` does.
 */
export function inlineBodyOf(state: MessageStateRecord): MessageBodyRecord | undefined {
  const inline = state.body;
  if (inline === undefined) return undefined;
  const decoded = bodyOfStoredItem(inline, state.id) as Omit<
    MessageBodyRecord,
    'pk' | 'sk' | 'fingerprint' | 'created_at'
  >;
  return {
    ...decoded,
    pk: state.pk,
    sk: ITEM_SORT_KEY.messageBody,
    fingerprint: state.fingerprint ?? '',
    created_at: state.created_at,
    ...(state.template === undefined ? {} : { template: state.template }),
  };
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
