/**
 * The local stack's S3 (DESIGN §7, §13): `s3rver` in this process, on loopback, with the attachment
 * bucket made at start. It keeps objects on disk only: under `dataDir` when given (they survive a
 * restart), else in a temp dir removed at stop. What it does not enforce is in local/EMULATORS.md.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

/** The bucket of the local stack (in AWS the construct names it). */
export const LOCAL_ATTACHMENT_BUCKET = 'postdate-attachments';

export interface S3Emulator {
  readonly endpoint: string;
  readonly port: number;
  readonly bucket: string;
  stop(): Promise<void>;
}

export interface S3EmulatorOptions {
  readonly port: number;
  readonly host?: string;
  /** Where objects are kept across restarts; unset: a temp dir removed at stop. */
  readonly dataDir?: string;
  readonly bucket?: string;
  /** The access key id the functions sign with (the local stack's is `local`). */
  readonly accessKeyId?: string;
}

export async function startS3Emulator(options: S3EmulatorOptions): Promise<S3Emulator> {
  const host = options.host ?? '127.0.0.1';
  const bucket = options.bucket ?? LOCAL_ATTACHMENT_BUCKET;
  const directory = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'postdate-s3-')));
  // s3rver refuses an access key it does not know (it checks no SigV4 signature: EMULATORS.md).
  registerAccessKey(options.accessKeyId ?? 'local');
  const server = new S3rver({
    address: host,
    port: options.port,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const address = await server.run();
  return {
    endpoint: `http://${host}:${address.port}`,
    port: address.port,
    bucket,
    async stop() {
      await server.close();
      if (options.dataDir === undefined) await rm(directory, { recursive: true, force: true });
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
