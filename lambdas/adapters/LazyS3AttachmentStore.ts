/**
 * The attachment store on S3, built on its first use (decision 0114). Most messages carry no
 * attachment, yet the api, sender and events functions each hold a store: importing the S3 client
 * and its presigner (~100 KB of bundle) at every cold start would cost each of them the parse and
 * the top level of code most invocations never run. Behind this `import()`, code splitting puts
 * S3AttachmentStore.ts and the client in a chunk of their own; the first call loads it, every later
 * call goes straight to the same store.
 */
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { AttachmentStore } from '../ports/AttachmentStore.js';
import { awsClientOptions } from './awsClients.js';

export interface LazyS3AttachmentStoreOptions {
  readonly bucket: string;
  /** The emulator's URL (local stack, tests); unset in AWS. */
  readonly endpoint?: string | undefined;
  /** The client's region, endpoint and credentials when they do not come from `process.env`. */
  readonly config?: S3ClientConfig;
}

export function lazyS3AttachmentStore(options: LazyS3AttachmentStoreOptions): AttachmentStore {
  // The client's options are read now, when the function is wired, as every other client's are:
  // what the environment says at the first attachment is not what the function was wired with.
  const config: S3ClientConfig = { ...awsClientOptions(), ...options.config };
  let loading: Promise<AttachmentStore> | undefined;
  const store = (): Promise<AttachmentStore> => {
    loading ??= import('./S3AttachmentStore.js').then(
      ({ attachmentS3Client, S3AttachmentStore }) =>
        new S3AttachmentStore({
          bucket: options.bucket,
          client: attachmentS3Client(options.endpoint, config),
        }),
    );
    return loading;
  };
  // Each call is awaited, not handed on: the stack of an error from its second request (after an
  // await inside the store) still names the caller.
  return {
    put: async (key, bytes, contentType, lifetime) =>
      await (await store()).put(key, bytes, contentType, lifetime),
    read: async (key) => await (await store()).read(key),
    describe: async (key) => await (await store()).describe(key),
    copy: async (from, to, lifetime) => await (await store()).copy(from, to, lifetime),
    hash: async (key) => await (await store()).hash(key),
    setLifetime: async (key, lifetime) => await (await store()).setLifetime(key, lifetime),
    endLifetime: async (key, rewrite) => await (await store()).endLifetime(key, rewrite),
    open: async (key) => await (await store()).open(key),
    presignPut: async (key, upload) => await (await store()).presignPut(key, upload),
  };
}
