import type { Server } from 'node:http';
import { createSqsServer } from 'local-aws-sqs';

export interface LocalSqs {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Starts the in-process SQS emulator (`local-aws-sqs`, patched at install, see patches/). */
export async function startLocalSqs(options: { port: number; host?: string }): Promise<LocalSqs> {
  const host = options.host ?? '127.0.0.1';
  const server: Server = await createSqsServer({
    port: options.port,
    hostname: host,
    emulateQueueCreationLifecycle: false,
  });
  return {
    endpoint: `http://${host}:${options.port}`,
    port: options.port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
