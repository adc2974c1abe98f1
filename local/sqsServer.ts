import { createServer } from 'node:http';
import { createRequestHandler } from 'local-aws-sqs';
import { listenAs } from './localEnv.js';

export interface LocalSqs {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Starts the in-process SQS emulator (`local-aws-sqs`, patched at install, see patches/).
 * Its own `createSqsServer` listens without an error handler, so a port taken between the choice
 * and the listen crashed `npm start`; the server is made here and such a port is a PortInUseError,
 * which the stack starts again on when it drew the port (`startAgainWhenTaken`), or ends with.
 * @throws PortInUseError when the port is taken.
 */
export async function startLocalSqs(options: { port: number; host?: string }): Promise<LocalSqs> {
  const host = options.host ?? '127.0.0.1';
  const { service, requestHandler } = createRequestHandler({
    port: options.port,
    hostname: host,
    emulateQueueCreationLifecycle: false,
  });
  const server = createServer(requestHandler);
  const port = await listenAs('sqs', server, options.port, host);
  // The emulator writes its port into the queue URLs it answers with.
  service.PORT = port;
  return {
    endpoint: `http://${host}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
