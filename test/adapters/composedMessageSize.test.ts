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
