/**
 * DESIGN §13: "the whole message within POSTDATE_MAX_MESSAGE_MB". The enqueue counts a message
 * without composing it (core/attachments.ts `encodedMessageBytes`, files by `encodedAttachmentBytes`);
 * the mailer's composition (`composeMessage`, what the relay receives) must never be larger, whatever
 * the text, its script and the encodings nodemailer picks for it.
 */
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { composeMessage } from '../../lambdas/adapters/NodemailerMailer.js';
import { encodedAttachmentBytes, encodedMessageBytes } from '../../lambdas/core/attachments.js';
import { headerValueProblem } from '../../lambdas/core/headerSafety.js';
import { LIMITS } from '../../lambdas/core/requestLimits.js';

const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 3000 }),
  fc.string({ unit: fc.constantFrom('a', 'é', '=', ' ', '\n', '請', '😀', 'Z', '.'), maxLength: 3000 }),
);
const name = fc.string({ unit: fc.constantFrom('A', 'd', 'ü', '請', ' '), minLength: 1, maxLength: 40 });
const address = fc
  .tuple(name, fc.constantFrom('ada@example.com', 'b.c@example.org'))
  .map(([n, a]) => `${n.trim() || 'X'} <${a}>`);

async function composedBytes(message: Parameters<typeof composeMessage>[0]): Promise<number> {
  let bytes = 0;
  for await (const chunk of composeMessage(message, 'postdate.local')) bytes += (chunk as Buffer).length;
  return bytes;
}

describe('the size the enqueue counts', () => {
  it('is never less than the message the mailer composes, files included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          from: address,
          to: fc.array(address, { minLength: 1, maxLength: 4 }),
          subject: text.map((s) => s.replace(/[\r\n\p{Cc}]/gu, ' ').slice(0, 998)),
          text: fc.option(text, { nil: null }),
          html: fc.option(text, { nil: null }),
          header: text.map((s) => s.replace(/[\r\n\p{Cc}]/gu, ' ').slice(0, 998)),
          file: fc.option(fc.uint8Array({ maxLength: 5000 }), { nil: null }),
        }),
        async ({ from, to, subject, text, html, header, file }) => {
          const headers = { 'X-Campaign': header };
          const counted =
            encodedMessageBytes({ from, to, cc: [], bcc: [], reply_to: null, subject, headers, text, html }) +
            (file === null ? 0 : encodedAttachmentBytes(file.length));
          const composed = await composedBytes({
            id: '01JF6Y8M3V3X1Z6D2QK4N8R5TW',
            from,
            to,
            cc: [],
            bcc: [],
            replyTo: null,
            subject,
            text,
            html,
            headers,
            envelope: to,
            attachments:
              file === null
                ? []
                : [
                    {
                      filename: 'Überblick März 2026 – Rechnung.pdf',
                      contentType: 'application/pdf',
                      open: async () => Readable.from([file]),
                    },
                  ],
          });
          expect(composed).toBeLessThanOrEqual(counted);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("RFC 5322's line limit (998 characters), whatever the enqueue accepts", () => {
  // RFC 5322 §2.1.1: a line is at most 998 characters; RFC 5321 §4.5.3.1.6: 1,000 octets with CRLF,
  // and SES refuses longer lines. A subject or header value the enqueue takes must compose within it,
  // also when it has no space to fold at (nodemailer then gives the whole run a line of its own,
  // after one space).
  // A run of one printable character (a token, a URL, a base64 blob), maybe after a few words.
  const value = fc
    .tuple(
      fc.constantFrom('', 'Re: ', 'Invoice 42 '),
      fc.constantFrom('a', 'Z', '0', '.', '-', '_', '/', '=', '?', ':'),
      fc.integer({ min: 900, max: 1000 }),
    )
    .map(([head, character, length]) => `${head}${character.repeat(length - head.length)}`)
    .filter((text) => text.length <= LIMITS.maxSubjectLength && headerValueProblem(text) === null);

  async function headerLines(subject: string, header: string): Promise<string[]> {
    const chunks: Buffer[] = [];
    for await (const chunk of composeMessage(
      {
        id: '01JF6Y8M3V3X1Z6D2QK4N8R5TW',
        from: 'Ops <ops@example.com>',
        to: ['ada@example.com'],
        cc: [],
        bcc: [],
        replyTo: null,
        subject,
        text: 'hello',
        html: null,
        headers: { 'X-Campaign': header },
        envelope: ['ada@example.com'],
        attachments: [],
      },
      'postdate.local',
    ))
      chunks.push(chunk as Buffer);
    const message = Buffer.concat(chunks).toString('latin1');
    return message.slice(0, message.indexOf('\r\n\r\n')).split('\r\n');
  }

  it('composes every subject and header value the enqueue accepts in lines of at most 998 characters', async () => {
    expect(LIMITS.maxHeaderValueLength).toBeLessThanOrEqual(LIMITS.maxSubjectLength);
    await fc.assert(
      fc.asyncProperty(value, value, async (subject, header) => {
        const longest = Math.max(...(await headerLines(subject, header)).map((line) => line.length));
        expect(longest).toBeLessThanOrEqual(998);
      }),
      { numRuns: 60 },
    );
  });
});
