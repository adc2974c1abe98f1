/**
 * Just enough RFC 5322 / RFC 2047 reading for the mail viewer: the header block of a raw message,
 * unfolded, and encoded words decoded for display. Not a MIME parser: the viewer shows the raw
 * source for everything else.
 */

/** The header fields of a raw message, names lower-cased, the first occurrence of each kept. */
export function readHeaders(raw: Buffer): Map<string, string> {
  const text = raw.toString('utf8');
  const end = headerBlockEnd(text);
  const block = text.slice(0, end).replace(/\r?\n[ \t]+/g, ' ');
  const headers = new Map<string, string>();
  for (const line of block.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return headers;
}

function headerBlockEnd(text: string): number {
  const crlf = text.indexOf('\r\n\r\n');
  const lf = text.indexOf('\n\n');
  const candidates = [crlf, lf].filter((index) => index >= 0);
  return candidates.length === 0 ? text.length : Math.min(...candidates);
}

/** Decodes RFC 2047 encoded words (`=?UTF-8?B?...?=`, `=?UTF-8?Q?...?=`) in a header value. */
export function decodeEncodedWords(value: string): string {
  // Whitespace between two adjacent encoded words is not part of the text (RFC 2047 §6.2).
  const joined = value.replace(/(\?=)\s+(=\?)/g, '$1$2');
  return joined.replace(
    /=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g,
    (word, charset: string, encoding: string, payload: string) => {
      try {
        const bytes =
          encoding.toUpperCase() === 'B'
            ? Buffer.from(payload, 'base64')
            : Buffer.from(
                payload
                  .replace(/_/g, ' ')
                  .replace(/=([0-9A-Fa-f]{2})/g, (_match, hex: string) =>
                    String.fromCharCode(Number.parseInt(hex, 16)),
                  ),
                'latin1',
              );
        return new TextDecoder(charset.split('*')[0] ?? 'utf-8').decode(bytes);
      } catch {
        return word;
      }
    },
  );
}
