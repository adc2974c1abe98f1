/**
 * bytesBeyondInline: what the 256 KiB body limit measures (DESIGN §3: "body at most 256 KiB"; §13:
 * inline attachments are bounded by POSTDATE_INLINE_ATTACHMENT_MAX_KB instead). A single enqueue and
 * a batch item are both measured by it, so an item answers what a single enqueue would (§3a).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesBeyondInline } from '../../lambdas/core/requestLimits.js';

const base64 = fc.uint8Array({ maxLength: 3000 }).map((bytes) => Buffer.from(bytes).toString('base64'));
const inlineFile = fc.record({ filename: fc.string({ minLength: 1 }), content: base64 });
const uploadRef = fc.record({ attachment_id: fc.string({ minLength: 1 }) });
const body = fc.record({
  to: fc.array(fc.emailAddress(), { minLength: 1, maxLength: 3 }),
  subject: fc.string(),
  text: fc.string({ unit: 'grapheme' }),
  attachments: fc.array(fc.oneof(inlineFile, uploadRef), { maxLength: 4 }),
});

function withoutContent(value: { attachments: readonly object[] }) {
  return {
    ...value,
    attachments: value.attachments.map((file) => ('content' in file ? { ...file, content: '' } : file)),
  };
}

describe('bytesBeyondInline: an enqueue body as the 256 KiB limit holds it', () => {
  it('is the JSON size of a body without attachments', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        fc.pre(!(typeof value === 'object' && value !== null && 'attachments' in value));
        expect(bytesBeyondInline(value)).toBe(Buffer.byteLength(JSON.stringify(value)));
      }),
    );
  });

  it('does not move with the inline files’ content, however large', () => {
    fc.assert(
      fc.property(body, (value) => {
        expect(bytesBeyondInline(value)).toBe(Buffer.byteLength(JSON.stringify(withoutContent(value))));
      }),
    );
  });

  it('counts every other byte: a longer text is that many bytes more, files or none', () => {
    fc.assert(
      fc.property(body, fc.string({ unit: 'grapheme', minLength: 1 }), (value, more) => {
        fc.pre(JSON.stringify(more) === `"${more}"`);
        const longer = { ...value, text: value.text + more };
        expect(bytesBeyondInline(longer) - bytesBeyondInline(value)).toBe(Buffer.byteLength(more));
      }),
    );
  });
});
