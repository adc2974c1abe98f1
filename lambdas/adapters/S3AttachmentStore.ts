/**
 * The attachment store on S3 (DESIGN §13): the stack's own bucket in AWS, the S3 emulator locally
 * (`POSTDATE_S3_ENDPOINT`, path-style). Vendor errors become our outcomes here: a missing object is
 * `undefined` (or AttachmentMissingError where it must exist); every other error passes through.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  PutObjectCommand,
  PutObjectTaggingCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  ATTACHMENT_LIFETIME_TAG,
  type AttachmentLifetime,
  type WrittenLifetime,
} from '../core/attachments.js';
import {
  AttachmentMissingError,
  type AttachmentStore,
  type PresignedUpload,
  type StoredObject,
} from '../ports/AttachmentStore.js';
import { awsClientOptions } from './awsClients.js';

export interface S3AttachmentStoreOptions {
  readonly bucket: string;
  /** The emulator's URL (local stack, tests); unset in AWS. */
  readonly endpoint?: string | undefined;
  /** An existing client (tests); otherwise one is built with the functions' limits. */
  readonly client?: S3Client;
}

/**
 * The S3 client of the functions: path-style against an emulator, whose host is an address.
 * Checksums only where S3 requires them: by default the SDK puts a CRC32 of the (empty) body into
 * a pre-signed PUT's query, and S3 would refuse every upload whose bytes do not match it.
 */
export function attachmentS3Client(endpoint: string | undefined, config: S3ClientConfig = {}): S3Client {
  return new S3Client({
    ...awsClientOptions(),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...config,
  });
}

export class S3AttachmentStore implements AttachmentStore {
  private readonly bucket: string;
  private readonly client: S3Client;

  constructor(options: S3AttachmentStoreOptions) {
    this.bucket = options.bucket;
    this.client = options.client ?? attachmentS3Client(options.endpoint);
  }

  async put(key: string, bytes: Uint8Array, contentType: string, lifetime?: WrittenLifetime): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: bytes,
        ContentType: contentType,
        ...(lifetime === undefined ? {} : { Tagging: lifetimeTagging(lifetime) }),
      }),
    );
  }

  async read(key: string): Promise<Uint8Array | undefined> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return object.Body ? await object.Body.transformToByteArray() : new Uint8Array();
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async describe(key: string): Promise<StoredObject | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: head.ContentLength ?? 0, contentType: head.ContentType ?? '', etag: head.ETag };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async copy(
    from: string,
    to: string,
    lifetime?: WrittenLifetime,
  ): Promise<{ readonly sha256: string } | undefined> {
    try {
      const copied = await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: to,
          CopySource: copySource(this.bucket, from),
          // The copy's tags are these, not the upload's (it has none).
          ...(lifetime === undefined
            ? {}
            : { TaggingDirective: 'REPLACE' as const, Tagging: lifetimeTagging(lifetime) }),
          // S3 computes the copy's SHA-256 itself: the function never reads the bytes.
          ChecksumAlgorithm: 'SHA256',
        }),
      );
      const checksum = copied.CopyObjectResult?.ChecksumSHA256;
      if (checksum && !checksum.includes('-'))
        return { sha256: Buffer.from(checksum, 'base64').toString('hex') };
      // An emulator without checksums (local/EMULATORS.md): hash the source as a stream (the api
      // may read uploads/, not messages/).
      const sha256 = await this.hash(from);
      return sha256 === undefined ? undefined : { sha256 };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async hash(key: string): Promise<string | undefined> {
    try {
      return await hashStream(await this.open(key));
    } catch (error) {
      if (error instanceof AttachmentMissingError) return undefined;
      throw error;
    }
  }

  async setLifetime(key: string, lifetime: AttachmentLifetime): Promise<void> {
    try {
      await this.client.send(
        new PutObjectTaggingCommand({
          Bucket: this.bucket,
          Key: key,
          Tagging: { TagSet: [{ Key: ATTACHMENT_LIFETIME_TAG.key, Value: lifetime }] },
        }),
      );
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
  }

  async endLifetime(
    key: string,
    rewrite: (writtenAt: Date) => boolean,
  ): Promise<'rewritten' | 'tagged' | 'gone'> {
    let head: HeadObjectCommandOutput;
    try {
      head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (!isNotFound(error)) throw error;
      // A HEAD's 404 has no body to tell a missing bucket from a missing key; the tagging's does
      // (it throws NoSuchBucket, and does nothing for a key that is gone).
      await this.setLifetime(key, ATTACHMENT_LIFETIME_TAG.ended);
      return 'gone';
    }
    if (!rewrite(head.LastModified ?? new Date(0))) {
      await this.setLifetime(key, ATTACHMENT_LIFETIME_TAG.ended);
      return 'tagged';
    }
    try {
      // S3 refuses a copy onto itself that changes nothing; REPLACE sets the metadata (as it was).
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: key,
          CopySource: copySource(this.bucket, key),
          MetadataDirective: 'REPLACE',
          ...(head.ContentType === undefined ? {} : { ContentType: head.ContentType }),
          ...(head.Metadata === undefined ? {} : { Metadata: head.Metadata }),
          TaggingDirective: 'REPLACE',
          Tagging: lifetimeTagging(ATTACHMENT_LIFETIME_TAG.ended),
        }),
      );
      return 'rewritten';
    } catch (error) {
      if (isNotFound(error)) return 'gone';
      throw error;
    }
  }

  async open(key: string): Promise<Readable> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (object.Body instanceof Readable) return object.Body;
      throw new Error('the S3 client answered a body that is not a Node.js stream');
    } catch (error) {
      if (isNotFound(error)) throw new AttachmentMissingError(key, error);
      throw error;
    }
  }

  async presignPut(
    key: string,
    upload: {
      readonly size: number;
      readonly contentType: string;
      readonly expiresInSeconds: number;
      readonly now: Date;
    },
  ): Promise<PresignedUpload> {
    // X-Amz-Date has whole seconds, and S3 takes the URL until X-Amz-Date + X-Amz-Expires.
    const signedAt = new Date(Math.floor(upload.now.getTime() / 1000) * 1000);
    // The identity the presigner signs with, memoized by the client: no call of its own.
    const { expiration } = await this.client.config.credentials();
    const expiresIn = signableSeconds(signedAt, upload.expiresInSeconds, expiration);
    const url = await getSignedUrl(
      this.client,
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ContentType: upload.contentType,
        ContentLength: upload.size,
      }),
      {
        expiresIn,
        signingDate: signedAt,
        // In the signature, so S3 refuses a PUT of another size or type (DESIGN §13).
        signableHeaders: new Set(['content-type', 'content-length']),
      },
    );
    return { url, expiresAt: new Date(signedAt.getTime() + expiresIn * 1000) };
  }
}

/**
 * What a pre-signed URL's clocks may differ by: S3 judges the session's end by its own clock, the
 * function signs by its (both NTP-synchronized).
 */
const CREDENTIALS_MARGIN_SECONDS = 60;

/**
 * How long a URL signed at `signedAt` may say it works: `wanted`, or less when the signing
 * credentials end sooner (a role's session: S3 refuses a URL signed with its token once it ends,
 * whatever X-Amz-Expires says), a margin kept back. At least a second (credentials that can no longer
 * be refreshed, about to end: a URL that says so). Credentials without a known end (Lambda's own, in
 * its environment variables: docs/decisions/0210) sign for `wanted`.
 */
function signableSeconds(signedAt: Date, wanted: number, credentialsEnd: Date | undefined): number {
  if (credentialsEnd === undefined) return wanted;
  const left =
    Math.floor((credentialsEnd.getTime() - signedAt.getTime()) / 1000) - CREDENTIALS_MARGIN_SECONDS;
  return Math.max(1, Math.min(wanted, left));
}

/** A copy's `x-amz-copy-source`: the bucket and the key, each part of it URL-encoded. */
function copySource(bucket: string, key: string): string {
  return `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** A tag set as `x-amz-tagging` carries it: URL query form. */
function lifetimeTagging(lifetime: WrittenLifetime | AttachmentLifetime): string {
  return new URLSearchParams({ [ATTACHMENT_LIFETIME_TAG.key]: lifetime }).toString();
}

/**
 * S3 answers a missing key with 404 (NoSuchKey on GET and copy, NotFound on HEAD) to a caller that
 * may `s3:ListBucket`, which the functions may (decision 0174); to any other, 403. A missing bucket
 * is a 404 too (NoSuchBucket), but a misconfiguration, not a missing object: it passes through.
 */
function isNotFound(error: unknown): boolean {
  const failure = error as { name?: unknown; $metadata?: { httpStatusCode?: number } } | null;
  return failure?.$metadata?.httpStatusCode === 404 && failure.name !== 'NoSuchBucket';
}

async function hashStream(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Uint8Array);
  return hash.digest('hex');
}
