import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Free ports are chosen below the kernel's ephemeral range. A port chosen now is listened on later
 * (by java, MailDev, a test's child process): had the kernel chosen it, any outgoing connection or
 * `listen(0)` of another process could get it in between (CI: "port 41557 (the SMTP sink) is already
 * in use"). Below that range only another program that fixes the same port can, and it is chosen at
 * random among thousands.
 */
const LOWEST = 20_000;
const TRIES = 50;

/**
 * The first port of Linux's ephemeral range, or undefined elsewhere: on macOS and Windows a probe of
 * loopback can succeed beside a service on the wildcard address, so there the kernel chooses.
 */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST + 1_000 ? low : undefined;
  } catch {
    return undefined;
  }
}

const BELOW = ephemeralLow();

/**
 * A TCP port free on `host` now: on Linux below the ephemeral range when one of a few random tries
 * is free, else (and elsewhere) one the kernel picks. The caller listens on it later; nothing holds it meanwhile.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let tries = 0; BELOW !== undefined && tries < TRIES; tries += 1) {
    const port = LOWEST + Math.floor(Math.random() * (BELOW - LOWEST));
    if ((await listenOnce(port, host)) !== undefined) return port;
  }
  const port = await listenOnce(0, host);
  if (port === undefined) throw new Error(`no free port on ${host}`);
  return port;
}

/** Listens once on the port and releases it: the port it got, or undefined when it is taken. */
export function listenOnce(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve(undefined);
      else reject(error);
    });
    server.listen(port, host, () => {
      const address = server.address();
      const got = typeof address === 'object' && address ? address.port : port;
      server.close(() => resolve(got));
    });
  });
}
