import { freePort } from '../../local/freePort.js';

/**
 * `count` free ports, different by construction. `freePort` draws each at random among the 12,768
 * ports below the ephemeral range (local/freePort.ts) and nothing holds a port it returns: two draws
 * made before either port is listened on meet one time in 12,768 per pair (seven ports: one start in
 * 600), and the two parts given it then fail on EADDRINUSE. A port drawn twice is drawn again.
 */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  return ports;
}
