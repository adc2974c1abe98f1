import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ANY_FREE_PORTS, claimBackupPorts, claimPorts } from '../../local/localEnv.js';
import { distinctFreePorts } from '../support/freePorts.js';

/**
 * DESIGN §7 "every part on its own port": a part asked as 0 gets a port `freePort` draws at random
 * below the ephemeral range (local/freePort.ts), checked free by listening once and releasing it.
 * A port another part of the same start will listen on is free at that moment too: the port a later
 * part fixed, or one an earlier part claimed that does not listen yet. Drawn for a second part, the
 * two parts would meet on it and the start fail with EADDRINUSE, one start in a few thousand (12,768
 * ports here, one chance in that per part drawn before the fixed one). Here the draw is made to land
 * on exactly such a port (the next draws are the run's own).
 */
const LOWEST = 20_000;
const ephemeralLow = Number(
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
);

/** Math.random's value that makes freePort's next draw `port`; later draws are random again. */
function drawNext(...ports: number[]): void {
  const random = vi.spyOn(Math, 'random');
  for (const port of ports) random.mockReturnValueOnce((port - LOWEST + 0.5) / (ephemeralLow - LOWEST));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe.runIf(process.platform === 'linux')('the ports of one start', () => {
  it('never gives a part asked as 0 the port a later part fixed', async () => {
    const [smtp] = await distinctFreePorts(1);
    // The api, the first part, is 0: the draw lands on the port the SMTP sink (a later part) fixed.
    drawNext(smtp ?? 0);
    const ports = await claimPorts({ ...ANY_FREE_PORTS, smtp: smtp ?? 0 }, '127.0.0.1');
    expect(ports.smtp).toBe(smtp);
    expect(ports.api).not.toBe(smtp);
    expect(new Set(Object.values(ports)).size).toBe(Object.values(ports).length);
  });

  it("gives the backup relay's sink and viewer ports of their own, none of the stack's parts'", async () => {
    const claimed = await claimPorts(ANY_FREE_PORTS, '127.0.0.1');
    // The draws land on the API's port (claimed, listened on only later), then twice on the sink's.
    drawNext(claimed.api, claimed.smtp, claimed.smtp);
    const backup = await claimBackupPorts({}, claimed, '127.0.0.1');
    expect(Object.values(claimed)).not.toContain(backup.smtp);
    expect(Object.values(claimed)).not.toContain(backup.viewer);
    expect(backup.smtp).not.toBe(backup.viewer);
    // Ports the user fixed are kept as they are.
    expect(await claimBackupPorts({ port: 2525, viewerPort: 1081 }, claimed, '127.0.0.1')).toEqual({
      smtp: 2525,
      viewer: 1081,
    });
  });
});
