import { connect } from 'node:net';

/**
 * A minimal HTTP/1.1 client over a raw socket: the hostile suite must put bytes on the wire that
 * `fetch` and `node:http` refuse to send (CR/LF and invalid UTF-8 in header values).
 */
export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: readonly (readonly [string, string | Buffer])[];
  readonly body?: Buffer | undefined;
}

export function rawHttp(baseUrl: string, request: RawRequest, timeoutMs = 30_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const head: Buffer[] = [Buffer.from(`${request.method} ${request.path} HTTP/1.1\r\nHost: ${url.host}\r\n`)];
  for (const [name, value] of request.headers) {
    head.push(
      Buffer.from(`${name}: `),
      typeof value === 'string' ? Buffer.from(value, 'latin1') : value,
      Buffer.from('\r\n'),
    );
  }
  const body = request.body ?? Buffer.alloc(0);
  head.push(Buffer.from(`Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`));
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const chunks: Buffer[] = [];
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error) => {
      // A server may answer (e.g. 413) and close before reading the whole body: keep its answer.
      const answer = chunks.length > 0 ? parseResponse(Buffer.concat(chunks)) : undefined;
      if (answer) resolve(answer);
      else reject(error);
    });
    socket.on('end', () => {
      const answer = parseResponse(Buffer.concat(chunks));
      if (answer) resolve(answer);
      else reject(new Error('the server closed the connection without a complete answer'));
    });
    socket.write(Buffer.concat([...head, body]));
  });
}

function parseResponse(raw: Buffer): RawResponse | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') body = dechunk(body);
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
