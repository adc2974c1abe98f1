import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../local/freePort.js';
import { eventually } from '../support/eventually.js';
import { heldOutsideTheRun, isAlive, portTaken } from './npmStartProcess.js';

/**
 * The port half of "stops every part and frees every port" (DESIGN §7), as startStopping and
 * npmStartNewcomer read it once every process of a stack has ended. A port the stack gave back may be
 * chosen at once by another test of the same run (local/freePort.ts): that is not the stack holding
 * it (CI, 2026-12-06: "waited 30000 ms for port 29331 to be free" with no process of the stack left).
 * A process the stack left behind is an orphan, given to init: that is the stack holding it.
 */

let server: Server | undefined;
let orphan: number | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  if (orphan !== undefined && isAlive(orphan)) process.kill(orphan, 'SIGKILL');
  orphan = undefined;
});

describe.runIf(process.platform === 'linux')('heldOutsideTheRun', () => {
  it('does not count a listener of this test run (another test took the port the stack gave back)', async () => {
    const port = await freePort();
    server = createServer();
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', () => resolve()));
    expect(await portTaken(port)).toBe(true);
    expect(await heldOutsideTheRun(port)).toBe(false);
  });

  it('counts a listener the run no longer parents (an orphan a stopped stack left), until it ends', async () => {
    const port = await freePort();
    // The shell starts node in the background and exits: node is an orphan, given to init.
    const script = `require('node:net').createServer().listen(${port}, '127.0.0.1')`;
    orphan = Number(
      execFileSync('sh', [
        '-c',
        `${JSON.stringify(process.execPath)} -e "${script}" >/dev/null 2>&1 & echo $!`,
      ])
        .toString()
        .trim(),
    );
    await eventually('the orphan to listen', () => portTaken(port), { withinMs: 20_000, everyMs: 50 });
    expect(await heldOutsideTheRun(port)).toBe(true);
    process.kill(orphan, 'SIGKILL');
    await eventually('the port to be free of the orphan', async () => !(await heldOutsideTheRun(port)), {
      withinMs: 20_000,
      everyMs: 50,
    });
  });

  it('does not count a port nothing listens on', async () => {
    expect(await heldOutsideTheRun(await freePort())).toBe(false);
  });
});
