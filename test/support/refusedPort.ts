import { connect } from 'node:net';

/**
 * A port of 127.0.0.1 that refuses connections for the whole run: a relay that is down. A port
 * `freePort` draws and no one listens on can be drawn and listened on meanwhile by a part another
 * file of the run starts (local/freePort.ts draws among 12,768 ports for every part of every stack),
 * and the "down" relay then answers. Port 1 (tcpmux) is below 1024, where no part of the run ever
 * listens (freePort's ports are 20,000 and up, the others the kernel's ephemeral ones); that nothing
 * else on the machine does is checked here.
 */
export const REFUSED_PORT = 1;

export async function refusedPort(): Promise<number> {
  const code = await new Promise<string | undefined>((resolve) => {
    const socket = connect(REFUSED_PORT, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
  });
  if (code !== 'ECONNREFUSED') {
    throw new Error(`127.0.0.1:${REFUSED_PORT} does not refuse connections (${code ?? 'it accepted one'})`);
  }
  return REFUSED_PORT;
}
