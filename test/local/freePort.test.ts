import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { freePort } from '../../local/freePort.js';

/**
 * A free port is chosen now and listened on later by another part (java, MailDev, a child process).
 * The kernel hands ports of its ephemeral range to every `listen(0)` and outgoing connection of every
 * process, so a port chosen there can be taken in between (CI: "port 41557 (the SMTP sink) is already
 * in use"); one chosen below it cannot be, except by a program that fixes that very port.
 */
const ephemeralLow = Number(
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
);

describe.runIf(process.platform === 'linux')('freePort', () => {
  it('chooses ports below the ephemeral range that one can listen on', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(1_024);
      expect(port).toBeLessThan(ephemeralLow);
    }
    const port = ports[0] ?? 0;
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it('never returns a port something listens on: a taken pick is passed over', async () => {
    const server = createServer();
    const held = await freePort();
    await new Promise<void>((resolve) => server.listen(held, '127.0.0.1', resolve));
    // The first pick lands on the held port; the next is drawn at random.
    const heldDraw = (held - 20_000 + 0.5) / (ephemeralLow - 20_000);
    const random = vi.spyOn(Math, 'random').mockReturnValueOnce(heldDraw);
    try {
      const chosen = await freePort();
      expect(random).toHaveBeenCalledTimes(2);
      expect(chosen).not.toBe(held);
    } finally {
      random.mockRestore();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
