import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  attachmentLifetime,
  attachmentWriteToken,
  base64DecodedLength,
  changesAttachmentLifetime,
  contentTypeFor,
  EXECUTABLE_EXTENSIONS,
  encodedMessageBytes,
  endedObjectWrite,
  filenameProblem,
  MESSAGE_FRAME_BYTES,
  maxUploadBytes,
  messageAttachmentKey,
  messageSizeCheck,
  planAttachments,
  requestedAsStored,
  requestedAttachments,
  uploadKey,
} from '../../lambdas/core/attachments.js';
import { PARSE_CONTEXT, zodErrors } from '../../lambdas/core/problem.js';
import { AttachmentsSchema, AttachmentUploadSchema } from '../../lambdas/core/requestSchemas.js';

const LIMITS = { inlineMaxBytes: 3072 * 1024, maxMessageBytes: 40 * 1024 * 1024 };
const b64 = (text: string) => Buffer.from(text).toString('base64');

function errorsOf(attachments: unknown) {
  const parsed = z.strictObject({ attachments: AttachmentsSchema }).safeParse({ attachments }, PARSE_CONTEXT);
  return parsed.success ? [] : zodErrors(parsed.error);
}

describe('attachment validation (DESIGN §13)', () => {
  it('accepts an inline PDF and a reference to an upload', () => {
    expect(
      errorsOf([
        { filename: 'invoice.pdf', content: b64('%PDF-1.7') },
        { attachment_id: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw' },
      ]),
    ).toEqual([]);
  });

  it.each([
    ['a CR/LF in the filename (header injection)', 'a\r\nBcc: x@example.com.pdf', /CR or LF/],
    ['an executable extension', 'setup.EXE', /executable/],
    ['a script', 'invoice.pdf.js', /executable/],
    ['a batch file', 'run.bat', /executable/],
    ['a jar', 'app.jar', /executable/],
    ['an installer', 'x.msi', /executable/],
    ['a path', '../etc/passwd', /without \//],
    ['an empty name', ' ', /empty/],
    ['a control character', 'a\u0007.pdf', /control/],
  ])('refuses %s, naming the field', (_what, filename, message) => {
    const [error] = errorsOf([{ filename, content: b64('x') }]);
    expect(error?.field).toBe('/attachments/0/filename');
    expect(error?.message).toMatch(message);
  });

  it('refuses an executable name followed by dots or spaces, which Windows strips on saving (invoice.exe. is invoice.exe)', () => {
    const stem = fc.stringMatching(/^[A-Za-z0-9 _()-]{1,40}$/).filter((name) => name.trim() !== '');
    const extension = fc
      .constantFrom(...EXECUTABLE_EXTENSIONS)
      .chain((ext) => fc.constantFrom(ext, ext.toUpperCase()));
    const tail = fc.array(fc.constantFrom('.', ' '), { minLength: 1, maxLength: 6 }).map((c) => c.join(''));
    fc.assert(
      fc.property(stem, extension, tail, (name, ext, trailing) => {
        expect(filenameProblem(`${name}.${ext}${trailing}`)).toMatch(
          new RegExp(`^\\.${ext.toLowerCase()} files are refused as executable`),
        );
      }),
    );
    expect(errorsOf([{ filename: 'invoice.exe. ', content: b64('x') }])).toEqual([
      { field: '/attachments/0/filename', message: expect.stringMatching(/executable/) },
    ]);
  });

  it('still takes a safe name followed by dots or spaces', () => {
    expect(filenameProblem('invoice.pdf.')).toBeNull();
    expect(filenameProblem('invoice.pdf  ')).toBeNull();
    expect(filenameProblem('exe.')).toBeNull();
  });

  it('refuses a name holding an RFC 2047 encoded-word, and takes one that only looks near it', () => {
    for (const name of ['=?utf-8?Q?setup.exe?=', 'a =?UTF-8*en?b?c2V0dXAuZXhl?= b.pdf', '=?x?q??=.pdf'])
      expect(filenameProblem(name), name).toMatch(/encoded-word/);
    for (const name of ['what=?.pdf', 'a=?b?c.pdf', 'q?=x.pdf', '=? ?Q?x?=.pdf'])
      expect(filenameProblem(name), name).toBeNull();
  });

  it('allows non-ASCII filenames (the mailer encodes them, RFC 2231)', () => {
    expect(errorsOf([{ filename: 'Rechnung März – Überblick.pdf', content: b64('x') }])).toEqual([]);
  });

  it('refuses content that is not base64, an executable content type, unknown fields', () => {
    expect(errorsOf([{ filename: 'a.pdf', content: 'not base64!' }])[0]?.field).toBe(
      '/attachments/0/content',
    );
    expect(
      errorsOf([{ filename: 'a.bin', content: b64('x'), content_type: 'application/x-msdownload' }])[0],
    ).toEqual({
      field: '/attachments/0/content_type',
      message: expect.stringMatching(/executable/),
    });
    expect(
      errorsOf([{ filename: 'a.pdf', content: b64('x'), content_type: 'text/plain; charset=utf-8' }])[0]
        ?.field,
    ).toBe('/attachments/0/content_type');
    expect(
      errorsOf([{ filename: 'a.pdf', content: b64('x'), url: 'https://x' }]).map((e) => e.field),
    ).toContain('/attachments/0/url');
  });

  it('refuses more than 10 attachments', () => {
    const many = Array.from({ length: 11 }, () => ({ filename: 'a.txt', content: b64('x') }));
    expect(errorsOf(many)[0]?.field).toBe('/attachments');
  });

  it('derives a content type from the extension, octet-stream when unknown', () => {
    expect(contentTypeFor('Invoice.PDF', undefined)).toBe('application/pdf');
    expect(contentTypeFor('photo.jpeg', null)).toBe('image/jpeg');
    expect(contentTypeFor('data.weird', undefined)).toBe('application/octet-stream');
    expect(contentTypeFor('noextension', undefined)).toBe('application/octet-stream');
    expect(contentTypeFor('a.pdf', 'Application/PDF')).toBe('application/pdf');
  });

  it('checks a declared upload: size at least 1, type given', () => {
    expect(
      AttachmentUploadSchema.safeParse({ filename: 'a.pdf', content_type: 'application/pdf', size: 10 })
        .success,
    ).toBe(true);
    expect(AttachmentUploadSchema.safeParse({ filename: 'a.pdf', size: 10 }).success).toBe(false);
    expect(
      AttachmentUploadSchema.safeParse({ filename: 'a.pdf', content_type: 'application/pdf', size: 0 })
        .success,
    ).toBe(false);
  });
});

describe('attachment sizes', () => {
  it('computes the decoded length of base64 without decoding', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(base64DecodedLength(Buffer.from(bytes).toString('base64'))).toBe(bytes.length);
      }),
    );
  });

  it('refuses inline attachments over POSTDATE_INLINE_ATTACHMENT_MAX_KB in all with a 413 naming /attachments', () => {
    const half = Buffer.alloc(600).toString('base64');
    const result = planAttachments(
      [
        { filename: 'a.bin', content: half },
        { filename: 'b.bin', content: half },
      ],
      { ...LIMITS, inlineMaxBytes: 1024 },
    );
    expect(result).toMatchObject({ ok: false, status: 413, errors: [{ field: '/attachments' }] });
  });

  it('decodes inline attachments with their SHA-256, derived type, and passes references through', () => {
    const result = planAttachments(
      [{ filename: 'a.pdf', content: b64('%PDF') }, { attachment_id: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw' }],
      LIMITS,
    );
    expect(result).toEqual({
      ok: true,
      value: [
        {
          kind: 'inline',
          filename: 'a.pdf',
          content_type: 'application/pdf',
          bytes: new Uint8Array(Buffer.from('%PDF')),
          sha256: createHash('sha256').update('%PDF').digest('hex'),
        },
        { kind: 'upload', attachment_id: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw' },
      ],
    });
  });

  it('holds the whole message to POSTDATE_MAX_MESSAGE_MB as base64 (a 20 MB file fits, a 35 MB file does not)', () => {
    expect(messageSizeCheck(1000, [20 * 1024 * 1024], LIMITS).ok).toBe(true);
    expect(messageSizeCheck(1000, [35 * 1024 * 1024], LIMITS)).toMatchObject({
      ok: false,
      status: 413,
      errors: [{ field: '/attachments' }],
    });
  });

  it('gives the largest upload that fits the message alone, in the headers and frames Postdate writes', () => {
    const max = maxUploadBytes(LIMITS);
    expect(messageSizeCheck(MESSAGE_FRAME_BYTES, [max], LIMITS).ok).toBe(true);
    expect(messageSizeCheck(MESSAGE_FRAME_BYTES, [max + 1], LIMITS).ok).toBe(false);
  });

  // DESIGN §13, "the whole message": quoted-printable writes é as =C3=A9, base64 4 bytes for 3.
  it('counts the text as the mailer may encode it, and every header value, never less than the bytes', () => {
    const message = {
      from: 'ops@example.com',
      to: ['ada@example.com'],
      cc: [],
      bcc: [],
      reply_to: null,
      subject: 'Rechnung für März',
      headers: { 'X-Campaign': '42' },
      text: null,
      html: null,
    };
    const ascii = encodedMessageBytes({ ...message, text: 'a'.repeat(76_000) });
    const accented = encodedMessageBytes({ ...message, text: 'aé'.repeat(25_000) });
    expect(accented - encodedMessageBytes(message)).toBeGreaterThanOrEqual(25_000 * (1 + 6));
    expect(ascii - encodedMessageBytes(message)).toBeGreaterThanOrEqual((76_000 / 3) * 4);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        expect(encodedMessageBytes({ ...message, text, subject: text })).toBeGreaterThan(
          MESSAGE_FRAME_BYTES + 2 * Buffer.byteLength(text),
        );
      }),
    );
  });
});

describe('keys and the fingerprint', () => {
  it('puts every key under its area and tenant', () => {
    expect(uploadKey('acme', 'att_x')).toBe('uploads/acme/att_x');
    expect(messageAttachmentKey('a/b', 'm1', 't1')).toBe('messages/a%2Fb/m1/t1');
  });

  it('covers the content: another file under the same name fingerprints differently', () => {
    const one = requestedAttachments([{ filename: 'a.pdf', content: b64('one') }]);
    const two = requestedAttachments([{ filename: 'a.pdf', content: b64('two') }]);
    expect(one).not.toEqual(two);
    expect(one).toEqual([
      {
        filename: 'a.pdf',
        content_type: 'application/pdf',
        size: 3,
        sha256: createHash('sha256').update('one').digest('hex'),
      },
    ]);
    expect(JSON.stringify(one)).not.toContain(b64('one'));
  });

  it("reads a replayed request's uploads as the message keeps them, by upload and place (DESIGN §3, §13)", () => {
    const copy = (position: number, id: string) => ({
      filename: `f${position}.pdf`,
      content_type: 'application/pdf',
      size: 10 + position,
      sha256: `${position}`.repeat(64),
      // The layout before decision 0144 (no write part) and the one after it.
      key: messageAttachmentKey('acme', 'm1', position === 0 ? `0-${id}` : `${position}-${id}-k3x9q2ab`),
    });
    const inline = requestedAttachments([{ filename: 'n.txt', content: b64('hi') }])[0];
    const message = { tenant: 'acme', id: 'm1', attachments: [copy(0, 'att_a'), copy(1, 'att_b')] };
    expect(
      requestedAsStored([{ attachment_id: 'att_a' }, inline ?? { attachment_id: 'x' }], message),
    ).toEqual([
      { filename: 'f0.pdf', content_type: 'application/pdf', size: 10, sha256: '0'.repeat(64) },
      inline,
    ]);
    // Another upload, or the same upload at another place, has no copy: it stays a reference.
    fc.assert(
      fc.property(fc.oneof(fc.constantFrom('att_a', 'att_b'), fc.string()), fc.nat(3), (id, position) => {
        const requested = Array.from({ length: position + 1 }, () => ({ attachment_id: id }));
        const known = (position === 0 && id === 'att_a') || (position === 1 && id === 'att_b');
        const read = requestedAsStored(requested, message)[position];
        expect(read).toEqual(
          known ? expect.objectContaining({ size: 10 + position }) : { attachment_id: id },
        );
      }),
    );
  });
});

describe("an attachment's lifetime, decided from the message's record as it is now (DESIGN §2, §13; decision 0144)", () => {
  const key = fc.constantFrom('messages/acme/m/0-a-1', 'messages/acme/m/1-b-2', 'messages/acme/m/0-a-3');
  const record = fc.option(
    fc.record(
      {
        expires_at: fc.integer({ min: 1, max: 2_000_000_000 }),
        attachments: fc.array(
          key.map((held) => ({ key: held })),
          { maxLength: 3 },
        ),
      },
      { requiredKeys: [] },
    ),
  );

  it('is live exactly while the record names the key and has no TTL: never expiring a waiting message’s file, never keeping an ended one’s', () => {
    fc.assert(
      fc.property(key, record, (asked, current) => {
        const named = current?.attachments?.some((held) => held.key === asked) === true;
        const waiting = current !== null && current.expires_at === undefined;
        expect(attachmentLifetime(asked, current)).toBe(named && waiting ? 'live' : 'ended');
      }),
    );
  });

  it("is looked at on a record's first write and on every write that sets or removes its TTL, no other", () => {
    const ttl = fc.option(fc.integer({ min: 1 }), { nil: undefined });
    fc.assert(
      fc.property(fc.boolean(), ttl, ttl, (inserted, before, after) => {
        expect(changesAttachmentLifetime({ inserted, expiresAtBefore: before, expiresAtAfter: after })).toBe(
          inserted || (before === undefined) !== (after === undefined),
        );
      }),
    );
  });

  it('writes each request under keys of its own: 8 base-36 characters from the random source', () => {
    let n = 0;
    const sequence = () => [0, 0.5, 0.99][n++ % 3] ?? 0;
    expect(attachmentWriteToken(sequence)).toMatch(/^[0-9a-z]{8}$/);
    fc.assert(
      fc.property(fc.double({ min: 0, max: 0.9999, noNaN: true }), (value) => {
        expect(attachmentWriteToken(() => value)).toMatch(/^[0-9a-z]{8}$/);
      }),
    );
  });
});

describe("an ended message's object: copied onto itself or only tagged (DESIGN §13: kept a retention after the end; decision 0191)", () => {
  const DAY = 86_400_000;
  /**
   * S3's lifecycle, told independently: the rule's days added to the object's creation, rounded up to
   * the next midnight UTC (a creation at midnight exactly taken as expiring then).
   */
  const s3Expiry = (created: number, days: number): number => {
    const due = new Date(created + days * DAY);
    const midnight = Date.UTC(due.getUTCFullYear(), due.getUTCMonth(), due.getUTCDate());
    return midnight === due.getTime() ? midnight : midnight + DAY;
  };
  const ended = fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2030, 0, 1) });
  const retention = fc.integer({ min: 1, max: 3650 });
  // Written from 400 days before the end (a far send_at) to a little after it (clock skew).
  const writtenBefore = fc.integer({ min: -60_000, max: 400 * DAY });

  it('never leaves an object expiring before the end plus the retention, whenever after the end a copy is made', () => {
    fc.assert(
      fc.property(ended, writtenBefore, retention, fc.nat(30 * DAY), (end, before, days, copyAfter) => {
        const written = end - before;
        const how = endedObjectWrite(new Date(written), new Date(end), days);
        const lastWrite = how === 'copy' ? end + copyAfter : written;
        expect(s3Expiry(lastWrite, days)).toBeGreaterThanOrEqual(end + days * DAY);
      }),
    );
  });

  it('copies only an object whose expiry counted from its write would come too soon', () => {
    fc.assert(
      fc.property(ended, writtenBefore, retention, (end, before, days) => {
        const written = end - before;
        const needed = s3Expiry(written, days) < end + days * DAY;
        expect(endedObjectWrite(new Date(written), new Date(end), days)).toBe(needed ? 'copy' : 'tag');
      }),
    );
  });

  it('only tags the object of a message that ends the UTC day it was written, copies one written on an earlier day', () => {
    const at = (iso: string) => new Date(iso);
    expect(endedObjectWrite(at('2026-12-04T00:00:01Z'), at('2026-12-04T23:59:59Z'), 30)).toBe('tag');
    expect(endedObjectWrite(at('2026-12-03T23:00:00Z'), at('2026-12-04T01:00:00Z'), 30)).toBe('copy');
    expect(endedObjectWrite(at('2025-11-01T10:00:00Z'), at('2026-12-04T10:00:00Z'), 30)).toBe('copy');
    // Written at midnight exactly: S3 may count that day as over, so the end the same day copies.
    expect(endedObjectWrite(at('2026-12-04T00:00:00Z'), at('2026-12-04T00:00:01Z'), 30)).toBe('copy');
  });
});
