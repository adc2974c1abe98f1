import { type ProblemDetails, problem } from '../core/problem.js';
import { LIMITS } from '../core/requestLimits.js';

/** Header lookup that ignores case (payload 2.0 lower-cases names; a test or proxy may not). */
export function headerValue(
  headers: Readonly<Record<string, string | undefined>> | undefined,
  name: string,
): string | undefined {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

export type BodyRead =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problem: ProblemDetails };

/**
 * Reads a JSON request body: `application/json` (a `charset` other than UTF-8 is refused), at most
 * 256 KiB after base64 decoding, valid UTF-8, valid JSON. Each failure is a problem naming the field.
 */
export function readJsonBody(event: {
  readonly headers?: Readonly<Record<string, string | undefined>> | undefined;
  readonly body?: string | undefined;
  readonly isBase64Encoded?: boolean | undefined;
}): BodyRead {
  const contentType = headerValue(event.headers, 'content-type');
  const mediaProblem = checkContentType(contentType);
  if (mediaProblem) return { ok: false, problem: mediaProblem };
  const raw = event.body ?? '';
  // Base64 is 4/3 of the bytes: a body far over the limit is refused before decoding it.
  if (raw.length > LIMITS.maxBodyBytes * 2) return { ok: false, problem: tooLarge() };
  const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  if (bytes.length > LIMITS.maxBodyBytes) return { ok: false, problem: tooLarge() };
  if (bytes.length === 0) {
    return {
      ok: false,
      problem: problem('invalidJson', 'The body is empty; send a JSON object.', {
        errors: [{ field: 'body', message: 'is required' }],
      }),
    };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return {
      ok: false,
      problem: problem('invalidJson', 'The body is not valid UTF-8.', {
        errors: [{ field: 'body', message: 'must be UTF-8 encoded JSON' }],
      }),
    };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return {
      ok: false,
      problem: problem('invalidJson', 'The body could not be parsed as JSON.', {
        errors: [{ field: 'body', message: 'must be valid JSON' }],
      }),
    };
  }
}

function tooLarge(): ProblemDetails {
  return problem('payloadTooLarge', `The body is larger than ${LIMITS.maxBodyBytes} bytes.`, {
    errors: [{ field: 'body', message: `must be at most ${LIMITS.maxBodyBytes} bytes` }],
  });
}

function checkContentType(contentType: string | undefined): ProblemDetails | null {
  const fail = (detail: string) =>
    problem('unsupportedMediaType', detail, {
      errors: [{ field: 'Content-Type', message: 'must be application/json' }],
    });
  if (contentType === undefined || contentType.trim() === '')
    return fail('The Content-Type header is missing.');
  const [type = '', ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return fail('The body must be application/json.');
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=').map((part) => part.trim());
    if (name === 'charset' && value.replaceAll('"', '') !== 'utf-8' && value.replaceAll('"', '') !== 'utf8') {
      return fail('Only the UTF-8 charset is accepted.');
    }
  }
  return null;
}
