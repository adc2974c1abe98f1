/**
 * The local stack's S3 (DESIGN §7, §13): `s3rver` in this process, on loopback, with the attachment
 * bucket made at start. It keeps objects on disk only: under `dataDir` when given (they survive a
 * restart), else in a temp dir removed at stop. s3rver checks no SigV4 signature; a pre-signed URL's
 * is checked here (`presignedSignatureProblem`), so a PUT of another size or type than the one signed
 * is refused as S3 refuses it; the tags a PUT or a copy sets (`x-amz-tagging`) are applied here too,
 * as S3 applies them (`tagsAtWrite`), and a copy onto itself is a new write (`copyOntoItselfWrites`).
 * What it does not enforce is in local/EMULATORS.md.
 */
import { createHash, createHmac } from 'node:crypto';
import { mkdir, utimes } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';
import { LOCAL_ATTACHMENT_BUCKET, type LocalPart, listenAs } from './localEnv.js';
import { ownTempDir } from './ownTempDir.js';

export interface S3Emulator {
  readonly endpoint: string;
  readonly port: number;
  readonly bucket: string;
  /** Sets an object's `LastModified` (its file's mtime): how a test makes one written long ago. */
  backdate(key: string, writtenAt: Date): Promise<void>;
  stop(): Promise<void>;
}

export interface S3EmulatorOptions {
  readonly port: number;
  readonly host?: string;
  /** The part whose variable a taken port's PortInUseError names (the stack's); unset, the listen's own error is kept. */
  readonly part?: LocalPart;
  /** Where objects are kept across restarts; unset: a temp dir removed at stop. */
  readonly dataDir?: string;
  readonly bucket?: string;
  /** The access key id the functions sign with (the local stack's is `local`). */
  readonly accessKeyId?: string;
}

/**
 * Starts s3rver on its own HTTP server: s3rver's `run()` listens with no 'error' handler, so a taken
 * port was an uncaught exception and a start that never settled.
 * @throws PortInUseError when the port is taken and `part` is given.
 */
export async function startS3Emulator(options: S3EmulatorOptions): Promise<S3Emulator> {
  const host = options.host ?? '127.0.0.1';
  const bucket = options.bucket ?? LOCAL_ATTACHMENT_BUCKET;
  const { path: directory, remove: removeOwnDirectory } =
    options.dataDir === undefined
      ? await ownTempDir('postdate-s3-')
      : { path: options.dataDir, remove: async () => undefined };
  // s3rver refuses an access key it does not know (it checks no SigV4 signature: EMULATORS.md).
  registerAccessKey(options.accessKeyId ?? 'local');

  const accessKeyId = options.accessKeyId ?? 'local';
  // Its address and port are not given: it does not listen itself (below).
  const server = new S3rver({
    directory,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  answerPutsOnceStored((server as unknown as { store: S3rverStore }).store);
  // First in line, before s3rver's own routes (Koa composes its middleware in callback(), below).
  (server as unknown as { middleware: KoaMiddleware[] }).middleware.unshift(
    checkPresignedSignature(accessKeyId),
    tagsAtWrite((server as unknown as { store: S3rverStore }).store),
    copyOntoItselfWrites((server as unknown as { store: S3rverStore }).store),
  );
  // What s3rver's run() does (the buckets, then its Koa app on a server), with the listen's errors heard.
  const http = createServer(server.callback());
  let port: number;
  try {
    await server.configureBuckets();
    port = await listenAs(options.part, http, options.port, host);
  } catch (error) {
    await removeOwnDirectory();
    throw error;
  }
  return {
    endpoint: `http://${host}:${port}`,
    port,
    bucket,
    async backdate(key, writtenAt) {
      const store = (server as unknown as { store: S3rverStore }).store;
      await utimes(store.getResourcePath(bucket, key, 'object'), writtenAt, writtenAt);
    },
    async stop() {
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await removeOwnDirectory();
    },
  };
}

interface S3rverAccount {
  createKeyPair(accessKeyId: string, secretAccessKey: string): void;
}

function registerAccessKey(accessKeyId: string): void {
  // s3rver's one account; its module is CommonJS with no types of its own for this part.
  const account = createRequire(import.meta.url)('s3rver/lib/models/account.js') as {
    DUMMY_ACCOUNT: S3rverAccount;
  };
  account.DUMMY_ACCOUNT.createKeyPair(accessKeyId, accessKeyId);
}

interface KoaContext {
  readonly method: string;
  readonly path: string;
  readonly querystring: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  status: number;
  body: unknown;
  set(name: string, value: string): void;
}
type KoaMiddleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;

interface S3rverObject {
  readonly bucket: string;
  readonly key: string;
  readonly content: Buffer | Readable;
  readonly metadata: Readonly<Record<string, string>>;
}

interface S3rverStore {
  putObject(object: S3rverObject): Promise<{ size: number; md5: string }>;
  putMetadata(bucket: string, key: string, metadata: S3rverObject['metadata'], md5: string): Promise<void>;
  getSubresource(bucket: string, key: string, type: 'tagging'): Promise<{ toXML(): string } | null>;
  putSubresource(bucket: string, key: string, resource: unknown): Promise<void>;
  deleteSubresource(bucket: string, key: string, type: 'tagging'): Promise<void>;
  getResourcePath(bucket: string, key: string, resource: 'object'): string;
}

/**
 * S3 answers a PUT once the object is stored: a LIST or GET after the answer finds all of it.
 * s3rver's store resolved as soon as its write stream had been handed the bytes, before they were on
 * disk, so on a busy machine a LIST right after the answer found nothing (CI, stop 56). This is its
 * `putObject` (the file, then its metadata), waiting for the write stream's `finish`. It writes
 * through the `fs-extra` s3rver's store requires, as s3rver does.
 */
function answerPutsOnceStored(store: S3rverStore): void {
  const storeFs = createRequire(createRequire(import.meta.url).resolve('s3rver/lib/stores/filesystem.js'))(
    'fs-extra',
  ) as { createWriteStream(path: string): Writable };
  store.putObject = async (object) => {
    const path = store.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(dirname(path), { recursive: true });
    const md5 = createHash('md5');
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        md5.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    const content = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
    await pipeline(content, counted, storeFs.createWriteStream(path));
    const digest = md5.digest('hex');
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
}

function headerOf(ctx: KoaContext, name: string): string | undefined {
  const value = ctx.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function objectOf(path: string): [string, string] {
  const [bucket = '', ...key] = path.replace(/^\//, '').split('/');
  return [decodeURIComponent(bucket), key.map(decodeURIComponent).join('/')];
}

/**
 * S3 writes a new object for a copy onto itself (`x-amz-metadata-directive: REPLACE`): its
 * `LastModified` is the copy's, and the bucket's lifecycle counts from it (decision 0191). s3rver
 * rewrites only the metadata, and its `LastModified` is the file's mtime; so the file's time is set
 * to now first, which s3rver's answer and every later HEAD then carry. A missing key is s3rver's 404.
 */
function copyOntoItselfWrites(store: S3rverStore): KoaMiddleware {
  return async function copyOntoItself(ctx, next) {
    const source = headerOf(ctx, 'x-amz-copy-source');
    if (
      ctx.method === 'PUT' &&
      source !== undefined &&
      headerOf(ctx, 'x-amz-metadata-directive') === 'REPLACE'
    ) {
      const [bucket, key] = objectOf(ctx.path);
      const [fromBucket, fromKey] = objectOf(decodeURI(source));
      if (bucket === fromBucket && key === fromKey && key !== '') {
        const now = new Date();
        await utimes(store.getResourcePath(bucket, key, 'object'), now, now).catch((error: unknown) => {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        });
      }
    }
    return next();
  };
}

/**
 * S3 replaces an object's tags with every PUT and copy: those of `x-amz-tagging` (a copy's with
 * `x-amz-tagging-directive: REPLACE`; by default a copy takes its source's), none when it sends none.
 * s3rver ignores the header and keeps a key's old tags across an overwrite, so this sets them after
 * s3rver stored the object.
 */
function tagsAtWrite(store: S3rverStore): KoaMiddleware {
  const { TaggingConfiguration } = createRequire(import.meta.url)('s3rver/lib/models/config.js') as {
    TaggingConfiguration: new (xml: string) => unknown;
  };
  return async function tagsOnPut(ctx, next) {
    await next();
    const query = new URLSearchParams(ctx.querystring);
    const write = ctx.method === 'PUT' && !query.has('tagging') && !query.has('uploadId');
    if (!write || ctx.status < 200 || ctx.status >= 300) return;
    const [bucket, key] = objectOf(ctx.path);
    if (key === '') return;
    const source = headerOf(ctx, 'x-amz-copy-source');
    if (source !== undefined && headerOf(ctx, 'x-amz-tagging-directive') !== 'REPLACE') {
      const [fromBucket, fromKey] = objectOf(decodeURI(source));
      const tags = await store.getSubresource(fromBucket, fromKey, 'tagging');
      if (tags === null) await store.deleteSubresource(bucket, key, 'tagging');
      else await store.putSubresource(bucket, key, new TaggingConfiguration(tags.toXML()));
      return;
    }
    const given = [...new URLSearchParams(headerOf(ctx, 'x-amz-tagging') ?? '')];
    if (given.length === 0) return store.deleteSubresource(bucket, key, 'tagging');
    const xml = (text: string) =>
      text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
    const tagSet = given
      .map(([name, value]) => `<Tag><Key>${xml(name)}</Key><Value>${xml(value)}</Value></Tag>`)
      .join('');
    await store.putSubresource(
      bucket,
      key,
      new TaggingConfiguration(`<Tagging><TagSet>${tagSet}</TagSet></Tagging>`),
    );
  };
}

/** Refuses a pre-signed request whose SigV4 signature does not match (403 SignatureDoesNotMatch). */
function checkPresignedSignature(accessKeyId: string): KoaMiddleware {
  return async function presignedSignature(ctx, next) {
    const problem = presignedSignatureProblem(ctx, accessKeyId);
    if (problem === null) return next();
    ctx.status = 403;
    ctx.set('content-type', 'application/xml');
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>${problem}</Message></Error>`;
  };
}

/**
 * Why a pre-signed request's signature is wrong, or null when it is right or the request is not
 * pre-signed (SigV4 query authentication: AWS General Reference, "Authenticating requests: using
 * query parameters"). The secret of the local key is the key id itself (registerAccessKey).
 */
function presignedSignatureProblem(
  request: Pick<KoaContext, 'method' | 'path' | 'querystring' | 'headers'>,
  secret: string,
): string | null {
  const pairs = request.querystring
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const [name = '', value = ''] = pair.split('=');
      return [decodeURIComponent(name), decodeURIComponent(value.replaceAll('+', ' '))] as const;
    });
  const query = new Map(pairs);
  const signature = query.get('X-Amz-Signature');
  if (signature === undefined) return null;
  const credential = (query.get('X-Amz-Credential') ?? '').split('/');
  const amzDate = query.get('X-Amz-Date') ?? '';
  const signedHeaders = (query.get('X-Amz-SignedHeaders') ?? '').split(';');
  const headerValue = (name: string): string => {
    const value = request.headers[name];
    return (Array.isArray(value) ? value.join(',') : (value ?? '')).trim().replace(/\s+/g, ' ');
  };
  const canonicalQuery = pairs
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => [rfc3986(name), rfc3986(value)] as const)
    .sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : 1) : a < b ? -1 : 1))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonicalRequest = [
    request.method,
    request.path
      .split('/')
      .map((segment) => rfc3986(decodeURIComponent(segment)))
      .join('/'),
    canonicalQuery,
    ...signedHeaders.map((name) => `${name}:${headerValue(name)}`),
    '',
    signedHeaders.join(';'),
    query.get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD',
  ].join('\n');
  const scope = credential.slice(1).join('/');
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  const [, date = '', region = '', service = ''] = credential;
  const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  const expected = createHmac('sha256', key).update(stringToSign).digest('hex');
  return expected === signature
    ? null
    : `The request signature does not match: signed headers ${signedHeaders.join(', ')} (a PUT must send exactly the signed Content-Type and Content-Length).`;
}

/** RFC 3986 unreserved characters kept, everything else percent-encoded (SigV4's UriEncode). */
function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
