/**
 * Attachments (DESIGN §13), the rules that need no storage: the request shapes (inline base64 or a
 * reference to an upload), what a filename and a content type may be, which types are refused as
 * executable, the sizes (inline in all, the whole message), where the bytes live in the bucket and
 * what a message keeps of each. Pure: no S3, no clock; the api stores the bytes (ports/AttachmentStore.ts)
 * and the sender streams them.
 * The request shapes' zod schemas are in requestSchemas.ts: only the api loads zod (decision 0131).
 */
import { createHash } from 'node:crypto';
import { controlCharacterProblem } from './headerSafety.js';
import { newMessageId } from './ids.js';
import { type FieldError, type ProblemDetails, problem } from './problem.js';

export const ATTACHMENT_LIMITS = {
  /** Attachments on one message. */
  // Each is kept on the small state record (about 150 bytes), written three times or more.
  maxAttachments: 10,
  /** A filename's length in characters (what most file systems keep). */
  maxFilenameLength: 255,
  /** RFC 6838 §4.2: 127 characters each side of the slash. */
  maxContentTypeLength: 255,
  /** How long a pre-signed upload URL is valid (DESIGN §13: 1 h). */
  uploadUrlSeconds: 3600,
  /** An upload never referenced by a message is deleted after this many days (the bucket's lifecycle). */
  unreferencedUploadDays: 1,
} as const;

/**
 * Extensions refused as executable: the union of the types SES refuses ("Unsupported attachment
 * types", SES Developer Guide) and those Gmail blocks ("File types blocked in Gmail": its current
 * list adds .mjs and spells .diagpkg, older copies .diagpack). Compared lower-case, on the last extension.
 */
// biome-ignore format: one list, read as a list
export const EXECUTABLE_EXTENSIONS: ReadonlySet<string> = new Set([
  'ade', 'adp', 'apk', 'app', 'appx', 'appxbundle', 'asp', 'bas', 'bat', 'cab', 'cer', 'chm', 'cmd',
  'com', 'cpl', 'crt', 'csh', 'der', 'diagcab', 'diagcfg', 'diagpack', 'diagpkg', 'dll', 'dmg', 'ex',
  'ex_', 'exe', 'fxp', 'gadget', 'grp', 'hlp', 'hpj', 'hta', 'img', 'inf', 'ins', 'iso', 'isp', 'its',
  'jar', 'jnlp', 'js', 'jse', 'ksh', 'lib', 'lnk', 'mad', 'maf', 'mag', 'mam', 'maq', 'mar', 'mas',
  'mat', 'mau', 'mav', 'maw', 'mda', 'mdb', 'mde', 'mdt', 'mdw', 'mdz', 'mjs', 'msc', 'msh', 'msh1',
  'msh1xml', 'msh2', 'msh2xml', 'mshxml', 'msi', 'msix', 'msixbundle', 'msp', 'mst', 'nsh', 'ops',
  'pcd', 'pif', 'plg', 'prf', 'prg', 'ps1', 'ps1xml', 'ps2', 'ps2xml', 'psc1', 'psc2', 'pst', 'reg',
  'scf', 'scr', 'sct', 'shb', 'shs', 'sys', 'tmp', 'url', 'vb', 'vbe', 'vbs', 'vhd', 'vps',
  'vsmacros', 'vss', 'vst', 'vsw', 'vxd', 'ws', 'wsc', 'wsf', 'wsh', 'xll', 'xnk',
]);

/** Content types that are executables whatever the filename says. */
export const EXECUTABLE_CONTENT_TYPES: ReadonlySet<string> = new Set([
  'application/x-msdownload',
  'application/x-msdos-program',
  'application/x-ms-installer',
  'application/x-msi',
  'application/x-dosexec',
  'application/x-executable',
  'application/vnd.microsoft.portable-executable',
  'application/java-archive',
  'application/x-java-archive',
  'application/x-sh',
  'application/x-csh',
  'application/javascript',
  'text/javascript',
  'application/x-javascript',
  'text/vbscript',
  'application/hta',
]);

/** The type of a file whose request gave none, by its extension; anything else is octet-stream. */
const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  pdf: 'application/pdf',
  txt: 'text/plain',
  csv: 'text/csv',
  htm: 'text/html',
  html: 'text/html',
  ics: 'text/calendar',
  vcf: 'text/vcard',
  json: 'application/json',
  xml: 'application/xml',
  eml: 'message/rfc822',
  zip: 'application/zip',
  gz: 'application/gzip',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  heic: 'image/heic',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  mp4: 'video/mp4',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
};

export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** RFC 6838 §4.2 restricted names: `type/subtype`, no parameters. */
const CONTENT_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
/** An RFC 2047 encoded-word: `=?charset?B|Q?text?=` (a language tag, RFC 2231 §5, allowed). */
const ENCODED_WORD = /=\?[^?\s]+\?[bq]\?[^?\s]*\?=/i;
/** RFC 4648 §4 base64, padded, no whitespace. */
export const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** What `POST /v1/attachments` hands out: `att_` and a lower-case ULID-like token. */
export const ATTACHMENT_ID_PATTERN = /^att_[0-9a-z]{26}$/;

/**
 * The last extension of a filename, lower-case, or '' when it has none. Trailing dots and whitespace
 * are not part of the name: Windows drops them on saving, so `invoice.exe. ` is an `.exe`.
 */
export function extensionOf(filename: string): string {
  let end = filename.length;
  // A loop, not /[.\s]+$/: that regex is quadratic on a long run of dots followed by a letter.
  while (end > 0 && /[.\s]/u.test(filename.charAt(end - 1))) end -= 1;
  const name = filename.slice(0, end);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}

/** The content type a file is sent with: the one given (lower-cased), else derived from its extension. */
export function contentTypeFor(filename: string, given: string | null | undefined): string {
  if (given) return given.toLowerCase();
  return TYPES_BY_EXTENSION[extensionOf(filename)] ?? DEFAULT_CONTENT_TYPE;
}

/**
 * Why a filename may not go into a Content-Disposition header, or null when it may. CR/LF is named
 * (header injection); other control characters, path separators and `.`/`..` are refused; every
 * other character is allowed, and the mailer writes a non-ASCII name with RFC 2231 encoding.
 */
export function filenameProblem(filename: string): string | null {
  if (filename.trim() === '') return 'must not be empty';
  const control = controlCharacterProblem(filename, false);
  if (control) return control;
  if (filename.length > ATTACHMENT_LIMITS.maxFilenameLength)
    return `must be at most ${ATTACHMENT_LIMITS.maxFilenameLength} characters`;
  if (/[/\\]/.test(filename)) return 'must be a file name, without / or \\';
  if (filename === '.' || filename === '..') return 'must be a file name';
  // A mail reader decodes an encoded-word in a part's `name`, which the mailer writes as given: the
  // extension checked here would not be the one the recipient sees.
  if (ENCODED_WORD.test(filename))
    return 'must be the name itself, not an RFC 2047 encoded-word (=?charset?Q?…?=): it is encoded when sent';
  const executable = executableExtension(filename);
  if (executable) return `.${executable} files are refused as executable (SES and Gmail refuse them)`;
  return null;
}

/** Compressions of one file, which Gmail looks through: it blocks `setup.exe.gz` as it blocks `setup.exe`. */
const SINGLE_FILE_COMPRESSIONS: ReadonlySet<string> = new Set(['gz', 'bz2']);

/** The executable extension a filename has, looking through one compression (`.exe.gz`), or null. */
function executableExtension(filename: string): string | null {
  let extension = extensionOf(filename);
  if (SINGLE_FILE_COMPRESSIONS.has(extension))
    extension = extensionOf(filename.slice(0, filename.toLowerCase().lastIndexOf(`.${extension}`)));
  return EXECUTABLE_EXTENSIONS.has(extension) ? extension : null;
}

/**
 * A multipart type makes a part a container of parts between boundaries (RFC 2046 §5.1): a file
 * sent with one has its bytes in the preamble, which no mail reader shows (decision 0190).
 */
function isMultipart(contentType: string): boolean {
  return contentType.toLowerCase().startsWith('multipart/');
}

/** The type a stored file is sent with: its own, or octet-stream for a multipart type an older enqueue took. */
export function sentContentType(contentType: string): string {
  return isMultipart(contentType) ? DEFAULT_CONTENT_TYPE : contentType;
}

/** Why a given content type may not be used, or null when it may. */
export function contentTypeProblem(contentType: string): string | null {
  if (!CONTENT_TYPE.test(contentType)) return 'must be a media type such as application/pdf (no parameters)';
  if (isMultipart(contentType))
    return 'must be the type of a file, not multipart/* (a container of parts, RFC 2046)';
  if (EXECUTABLE_CONTENT_TYPES.has(contentType.toLowerCase()))
    return 'is an executable type, refused (SES and Gmail refuse them)';
  return null;
}

/** The decoded length of valid padded base64, without decoding it. */
export function base64DecodedLength(content: string): number {
  const padding = content.endsWith('==') ? 2 : content.endsWith('=') ? 1 : 0;
  return (content.length / 4) * 3 - padding;
}

/**
 * The bytes an attachment of `size` bytes adds to the MIME message: base64 in lines of 76 plus CRLF,
 * and about 300 bytes of part headers. What `POSTDATE_MAX_MESSAGE_MB` is held against, as SES counts
 * the message it receives.
 */
export function encodedAttachmentBytes(size: number): number {
  const base64 = Math.ceil(size / 3) * 4;
  return base64 + Math.ceil(base64 / 76) * 2 + 300;
}

/** SHA-256 hex of bytes. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** What `POST /v1/attachments` reserved: kept beside the upload (`declarationKey`), read by the enqueue. */
export interface UploadDeclaration {
  readonly filename: string;
  /** As the client declared it, its case kept: the upload URL signs exactly this. */
  readonly content_type: string;
  readonly size: number;
}

/** A new upload id: `att_` and a lower-case ULID (time-ordered, 80 random bits). */
export function newAttachmentId(now: Date, random: () => number): string {
  return `att_${newMessageId(now.getTime(), random).toLowerCase()}`;
}

/** The declaration as stored: JSON, read back by `readDeclaration`. */
export function declarationBytes(declaration: UploadDeclaration): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(declaration));
}

/** A stored declaration, or undefined when it is not one (never throws). */
export function readDeclaration(bytes: Uint8Array): UploadDeclaration | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<UploadDeclaration> | null;
    if (
      typeof value?.filename === 'string' &&
      typeof value.content_type === 'string' &&
      typeof value.size === 'number'
    )
      return { filename: value.filename, content_type: value.content_type, size: value.size };
  } catch {
    // Not JSON: not a declaration of ours.
  }
  return undefined;
}

/**
 * Why an upload may not be attached as declared, or null when it may: S3 enforces the signed size
 * and type on the PUT, and this says the same again for a store that does not (local/EMULATORS.md).
 */
export function uploadMismatch(
  declared: UploadDeclaration,
  found: { readonly size: number; readonly contentType: string } | undefined,
): string | null {
  if (found === undefined) return 'nothing was uploaded to its upload_url yet';
  if (found.size !== declared.size)
    return `the uploaded file is ${found.size} bytes, ${declared.size} were declared`;
  if (found.contentType.toLowerCase() !== declared.content_type.toLowerCase())
    return `the uploaded file's Content-Type is not the ${declared.content_type} declared`;
  return null;
}

/** One inline attachment as the enqueue's schema accepted it (requestSchemas.ts). */
export interface InlineAttachmentInput {
  readonly filename: string;
  readonly content_type?: string | null | undefined;
  /** Valid padded base64. */
  readonly content: string;
}

/** One reference to an upload as the enqueue's schema accepted it. */
export interface AttachmentReferenceInput {
  readonly attachment_id: string;
}

export type AttachmentInput = InlineAttachmentInput | AttachmentReferenceInput;

/** What a message keeps of one attachment; the bytes are in the bucket under `key`, never in DynamoDB. */
export interface StoredAttachment {
  readonly filename: string;
  readonly content_type: string;
  readonly size: number;
  /** SHA-256 hex of the bytes: in the view and in the idempotency fingerprint. */
  readonly sha256: string;
  readonly key: string;
}

/** An attachment as the API shows it (DESIGN §3a, the message view). */
export type AttachmentView = Omit<StoredAttachment, 'key'>;

export function attachmentView({ key: _key, ...view }: StoredAttachment): AttachmentView {
  return view;
}

/** An inline attachment, checked and decoded: ready to be stored. */
export interface DecodedAttachment {
  readonly kind: 'inline';
  readonly filename: string;
  readonly content_type: string;
  readonly bytes: Uint8Array;
  readonly sha256: string;
}

/** A reference to an upload, to be checked against the bucket at enqueue. */
export interface UploadReference {
  readonly kind: 'upload';
  readonly attachment_id: string;
}

export type PlannedAttachment = DecodedAttachment | UploadReference;

export interface AttachmentSizeLimits {
  /** POSTDATE_INLINE_ATTACHMENT_MAX_KB in bytes: inline attachments of one message, decoded, in all. */
  readonly inlineMaxBytes: number;
  /** POSTDATE_MAX_MESSAGE_MB in bytes: the whole MIME message. */
  readonly maxMessageBytes: number;
}

/** A check's answer: the value, or the fields at fault with the status they make (400, or 413 when too large). */
export type AttachmentCheck<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly status: 400 | 413; readonly errors: readonly FieldError[] };

/**
 * Decodes the inline attachments of a request the schema accepted and checks their total against
 * `POSTDATE_INLINE_ATTACHMENT_MAX_KB` (413, before anything is decoded). References pass through,
 * to be checked against the bucket.
 */
export function planAttachments(
  attachments: readonly AttachmentInput[],
  limits: AttachmentSizeLimits,
): AttachmentCheck<PlannedAttachment[]> {
  let inlineBytes = 0;
  for (const attachment of attachments)
    if ('content' in attachment) inlineBytes += base64DecodedLength(attachment.content);
  if (inlineBytes > limits.inlineMaxBytes) {
    return {
      ok: false,
      status: 413,
      errors: [
        {
          field: '/attachments',
          message: `inline attachments must be at most ${Math.floor(limits.inlineMaxBytes / 1024)} KiB decoded in all (POSTDATE_INLINE_ATTACHMENT_MAX_KB); upload larger files through POST /v1/attachments`,
        },
      ],
    };
  }
  const planned = attachments.map((attachment): PlannedAttachment => {
    if (!('content' in attachment)) return { kind: 'upload', attachment_id: attachment.attachment_id };
    const bytes = new Uint8Array(Buffer.from(attachment.content, 'base64'));
    return {
      kind: 'inline',
      filename: attachment.filename,
      content_type: contentTypeFor(attachment.filename, attachment.content_type),
      bytes,
      sha256: sha256Hex(bytes),
    };
  });
  return { ok: true, value: planned };
}

/** What a message carries besides its files, as it is sent (a template message's as rendered). */
export interface MessageText {
  readonly from: string;
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly reply_to: string | null;
  readonly subject: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string | null;
  readonly html: string | null;
}

/** What Postdate writes around it: Message-ID, Date, MIME-Version, X-Postdate-ID, the multipart frames. */
export const MESSAGE_FRAME_BYTES = 1024;

/** Characters of text as quoted-printable writes it: a byte that is not printable ASCII, or `=`, is `=XX`. */
function quotedCharacters(text: string): number {
  let characters = 0;
  for (const byte of Buffer.from(text, 'utf8'))
    characters += byte >= 0x20 && byte <= 0x7e && byte !== 0x3d ? 1 : 3;
  return characters;
}

/**
 * The most bytes a text or html part takes in the MIME message: the mailer writes it quoted-printable
 * (soft line breaks `=` CRLF at 76) or base64, whichever its own rule picks, so this is the larger.
 */
function encodedTextBytes(text: string): number {
  const quoted = quotedCharacters(text);
  return Math.max(quoted + Math.ceil(quoted / 73) * 3 + 300, encodedAttachmentBytes(Buffer.byteLength(text)));
}

/** The most bytes a header value takes: non-ASCII as RFC 2047 words of 60 characters (15 bytes of frame each). */
function encodedHeaderBytes(value: string): number {
  const quoted = quotedCharacters(value);
  return quoted + Math.ceil(quoted / 60) * 16 + 16;
}

/**
 * The most bytes a message takes without its files, as the mailer writes it (DESIGN §13, "the whole
 * message"): its addresses, subject and headers (RFC 2047-encoded when not ASCII), its text and html
 * as encoded (quoted-printable writes `é` as `=C3=A9`), and Postdate's own headers and frames.
 */
export function encodedMessageBytes(message: MessageText): number {
  const { from, to, cc, bcc, reply_to, subject, headers, text, html } = message;
  const headerValues = [
    from,
    ...to,
    ...cc,
    ...bcc,
    reply_to ?? '',
    subject,
    ...Object.entries(headers).flat(),
  ];
  return (
    MESSAGE_FRAME_BYTES +
    headerValues.reduce((sum, value) => sum + encodedHeaderBytes(value), 0) +
    (text ? encodedTextBytes(text) : 0) +
    (html ? encodedTextBytes(html) : 0)
  );
}

/**
 * Whether the whole message — `messageBytes` (encodedMessageBytes) and every attachment as base64 —
 * fits `POSTDATE_MAX_MESSAGE_MB` (413 naming `/attachments` when not).
 */
export function messageSizeCheck(
  messageBytes: number,
  attachmentSizes: readonly number[],
  limits: AttachmentSizeLimits,
): AttachmentCheck<number> {
  const total = attachmentSizes.reduce((sum, size) => sum + encodedAttachmentBytes(size), messageBytes);
  if (total <= limits.maxMessageBytes) return { ok: true, value: total };
  return {
    ok: false,
    status: 413,
    errors: [
      {
        field: '/attachments',
        message: `the message with its attachments must be at most ${limits.maxMessageBytes / (1024 * 1024)} MB encoded (POSTDATE_MAX_MESSAGE_MB)`,
      },
    ],
  };
}

/** The largest single file that fits a message by itself, in Postdate's frame (what `POST /v1/attachments` accepts). */
export function maxUploadBytes(limits: AttachmentSizeLimits): number {
  const room = limits.maxMessageBytes - MESSAGE_FRAME_BYTES;
  // encodedAttachmentBytes is monotonic; 0.74 of the room is just under base64's 4/3 with line breaks.
  let size = Math.floor(room * 0.74);
  while (encodedAttachmentBytes(size + 1) <= room) size += 1;
  while (encodedAttachmentBytes(size) > room) size -= 1;
  return size;
}

/**
 * Where the bytes live: every key starts with the area and then the tenant, so the IAM grants name
 * the areas and a key never crosses tenants.
 * - `uploads/{tenant}/{id}`: a reserved upload; the bucket deletes it after a day whatever happens.
 * - `messages/{tenant}/{message}/{position}-{content}-{write}`: an attachment a message holds. The
 *   last part is new for each enqueue request (`attachmentWriteToken`), so no request ever writes an
 *   object another request's record names (docs/decisions/0144).
 */
export const ATTACHMENT_AREAS = { uploads: 'uploads/', messages: 'messages/' } as const;

/**
 * The tag the bucket's lifecycle reads on `messages/` objects (lib/constructs/Attachments.ts):
 * `pending` (how an enqueue writes them) expires a day after the write, `ended` a retention after
 * it (an ended message's object is written again when that would be too soon: endedObjectWrite);
 * `live` expires never.
 */
export const ATTACHMENT_LIFETIME_TAG = {
  key: 'postdate-lifetime',
  ended: 'ended',
  pending: 'pending',
} as const;

/** What a message's attachments are tagged once its record is written: `ended` expires them, `live` keeps them. */
export type AttachmentLifetime = 'ended' | 'live';

/** How an enqueue writes an object into `messages/`: expiring a day later unless its message's record tags it. */
export type WrittenLifetime = typeof ATTACHMENT_LIFETIME_TAG.pending;

/** The part of a key that is new for each enqueue request: 8 base-36 characters (41 bits). */
export function attachmentWriteToken(random: () => number): string {
  return Array.from({ length: 8 }, () => Math.floor(random() * 36).toString(36)).join('');
}

/**
 * Whether one write of a message's state record may change its attachments' lifetime: its first
 * write (its objects were written `pending`), and a write that sets or removes the TTL
 * (core/messageLifetime.ts sets it exactly when the message ends, and removes it when a manual
 * retry or a redrive takes a discarded message back).
 */
export function changesAttachmentLifetime(write: {
  readonly inserted: boolean;
  readonly expiresAtBefore: number | undefined;
  readonly expiresAtAfter: number | undefined;
}): boolean {
  return write.inserted || (write.expiresAtBefore === undefined) !== (write.expiresAtAfter === undefined);
}

/**
 * What an attachment's object is tagged, decided from the message's state record as it is now (read
 * strongly consistent), never from the stream image that prompted it: a replayed old image (`postdate
 * event-failures redrive`) then tags what a newer write would, and cannot undo it. `live` while the
 * record names the key and has no TTL; `ended` when the record has a TTL, is gone (its TTL ran), or
 * names other keys (another message under the same id, after the first one's records expired).
 */
export function attachmentLifetime(
  key: string,
  current: {
    readonly expires_at?: number | undefined;
    readonly attachments?: readonly { readonly key: string }[] | undefined;
  } | null,
): AttachmentLifetime {
  const named = current?.attachments?.some((attachment) => attachment.key === key) === true;
  return named && current?.expires_at === undefined ? 'live' : 'ended';
}

/**
 * When the bucket's `EndedMessages` rule expires an object written at `writtenAt`: S3 adds the rule's
 * days to the object's creation and rounds up to the next midnight UTC. An object written at midnight
 * exactly is taken to expire then (the earlier reading); `LastModified` is to the second, never later
 * than the write.
 */
export function endedObjectExpiry(writtenAt: Date, retentionDays: number): Date {
  return new Date(Math.ceil(writtenAt.getTime() / DAY_MS) * DAY_MS + retentionDays * DAY_MS);
}

const DAY_MS = 86_400_000;

/**
 * How an ended message's object gets its `ended` tag (DESIGN §13: kept a retention after the message
 * ends; docs/decisions/0191). The lifecycle counts from the object's write, so an object whose expiry
 * counted from it falls before `endedAt` + the retention (written on an earlier UTC day than the end)
 * is `copy`: written again onto itself, after the end, so the count starts then. Any other is only
 * tagged (`tag`): most messages end the day they were enqueued, and a copy is a billed request.
 */
export function endedObjectWrite(writtenAt: Date, endedAt: Date, retentionDays: number): 'copy' | 'tag' {
  const kept = endedAt.getTime() + retentionDays * DAY_MS;
  return endedObjectExpiry(writtenAt, retentionDays).getTime() < kept ? 'copy' : 'tag';
}

/**
 * The answer to a retry of a message some of whose attachments (`gone`, their positions in the
 * message view) are no longer in the bucket: a 409 that names each, says why and what to do, for a
 * retry that could only fail the message again (the sender's AttachmentMissingError is permanent).
 * An ended message's files expire a retention after its end (decision 0191; before it, a retention
 * after they were written, 0083), or were deleted by hand, so a retry can find them gone (0130).
 */
export function attachmentsGoneProblem(currentStatus: string, gone: readonly number[]): ProblemDetails {
  const which = gone.length === 1 ? `attachment ${gone[0]} is` : `attachments ${gone.join(', ')} are`;
  return problem(
    'attachmentsGone',
    `The message's ${which} no longer stored, so a retry could only fail it again; nothing was changed. Enqueue a new message with the files (a new Idempotency-Key).`,
    {
      errors: gone.map((position) => ({
        field: `/attachments/${position}`,
        message: 'is no longer stored (expired or deleted from the bucket); attach the file to a new message',
      })),
      extensions: { current_status: currentStatus },
    },
  );
}

export function uploadKey(tenant: string, attachmentId: string): string {
  return `${ATTACHMENT_AREAS.uploads}${encodeURIComponent(tenant)}/${attachmentId}`;
}

/** Where `POST /v1/attachments` keeps what it reserved, beside the upload (and expired with it). */
export function declarationKey(tenant: string, attachmentId: string): string {
  return `${uploadKey(tenant, attachmentId)}.json`;
}

export function messageAttachmentKey(tenant: string, messageId: string, token: string): string {
  return `${ATTACHMENT_AREAS.messages}${encodeURIComponent(tenant)}/${messageId}/${token}`;
}

/**
 * The copy a stored message keeps of the upload it names at `position` (0082: one key per upload and
 * place): its key is that place's slot, followed since decision 0144 by the write's own part.
 */
export function keptUploadCopy(
  message: {
    readonly tenant: string;
    readonly id: string;
    readonly attachments?: readonly StoredAttachment[];
  },
  position: number,
  attachmentId: string,
): StoredAttachment | undefined {
  const slot = messageAttachmentKey(message.tenant, message.id, `${position}-${attachmentId}`);
  return message.attachments?.find((held) => held.key === slot || held.key.startsWith(`${slot}-`));
}

/** An attachment as the enqueue request keeps it: what the fingerprint covers, no bytes. */
export type RequestedAttachment =
  | {
      readonly filename: string;
      readonly content_type: string;
      readonly size: number;
      readonly sha256: string;
    }
  | { readonly attachment_id: string };

/** The request form of attachments the schema accepted (inline ones decoded once to hash them). */
export function requestedAttachments(attachments: readonly AttachmentInput[]): RequestedAttachment[] {
  return attachments.map((attachment) => {
    if (!('content' in attachment)) return { attachment_id: attachment.attachment_id };
    const bytes = Buffer.from(attachment.content, 'base64');
    return {
      filename: attachment.filename,
      content_type: contentTypeFor(attachment.filename, attachment.content_type),
      size: bytes.length,
      sha256: sha256Hex(bytes),
    };
  });
}

/**
 * A request's attachments as its stored message's fingerprint covers them: each upload it names is
 * the copy the message keeps of that upload at that place (its name, type, size and SHA-256), so a
 * replay is told without the upload, which lives only a day (DESIGN §3, §13). An upload the message
 * keeps no copy of stays a reference, which no stored fingerprint covers: not a replay.
 */
export function requestedAsStored(
  requested: readonly RequestedAttachment[],
  message: {
    readonly tenant: string;
    readonly id: string;
    readonly attachments?: readonly StoredAttachment[];
  },
): RequestedAttachment[] {
  return requested.map((attachment, position) => {
    if (!('attachment_id' in attachment)) return attachment;
    const copy = keptUploadCopy(message, position, attachment.attachment_id);
    if (copy === undefined) return attachment;
    const { filename, content_type, size, sha256 } = copy;
    return { filename, content_type, size, sha256 };
  });
}
