import { afterEach, describe, expect, it } from 'vitest';
import {
  bannerPorts,
  descendants,
  isAlive,
  killLeftovers,
  type NpmStart,
  npmStart,
  portTaken,
  ready,
  until,
} from './npmStartProcess.js';

/**
 * The stop paths test/local/stopping.test.ts does not take (issue 29): a signal to the stack's own
 * node process (what `kill $(pgrep …)` or a process manager watching node sends), and Ctrl-C twice —
 * back to back (one keypress relayed twice, or a person pressing again at once) and again while the
 * stop is under way. Each must leave no process of the chain and no port of the banner.
 */

const STOPPED_WITHIN_MS = 30_000;

let leftovers: number[] = [];

afterEach(() => {
  killLeftovers(leftovers);
  leftovers = [];
});

interface Running {
  readonly start: NpmStart;
  readonly npm: number;
  readonly node: number;
  readonly chain: readonly { pid: number; command: string }[];
  readonly ports: readonly number[];
}

async function running(): Promise<Running> {
  const start = npmStart();
  const banner = await ready(start);
  const npm = start.child.pid;
  if (npm === undefined) throw new Error('npm did not start');
  const chain = [{ pid: npm, command: 'npm' }, ...descendants(npm)];
  leftovers = chain.map((part) => part.pid);
  const node = chain.find((part) => part.command === 'node')?.pid;
  if (node === undefined) throw new Error(`no node process in the chain: ${JSON.stringify(chain)}`);
  const ports = bannerPorts(banner);
  expect(ports.length).toBeGreaterThanOrEqual(5);
  return { start, npm, node, chain, ports };
}

async function expectNothingLeft({ chain, ports }: Running): Promise<void> {
  await until(
    `every process of the chain to end (${chain.map((part) => `${part.command} ${part.pid}`).join(', ')})`,
    () => (chain.every((part) => !isAlive(part.pid)) ? true : undefined),
    STOPPED_WITHIN_MS,
  );
  for (const port of ports) {
    await until(
      `port ${port} to be free`,
      async () => ((await portTaken(port)) ? undefined : true),
      STOPPED_WITHIN_MS,
    );
  }
}

/** Sends a signal unless its receiver has already gone (a fast stop may beat the second one). */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

describe('stopping npm start: the other paths', () => {
  it("SIGTERM to the stack's node process stops every part gracefully and frees every port", async () => {
    const stack = await running();
    signal(stack.node, 'SIGTERM');
    const exit = await stack.start.exited;
    await expectNothingLeft(stack);
    expect(stack.start.stdout()).toContain('SIGTERM: stopping every part');
    expect(exit.code).toBe(0);
  }, 300_000);

  it('Ctrl-C twice at once is one graceful stop: exit 0, nothing left', async () => {
    const stack = await running();
    signal(-stack.npm, 'SIGINT');
    signal(-stack.npm, 'SIGINT');
    const exit = await stack.start.exited;
    await expectNothingLeft(stack);
    expect(stack.start.stderr()).not.toContain('again');
    expect(exit).toEqual({ code: 0, signal: null });
  }, 300_000);

  it('Ctrl-C again while the stop is under way still leaves no process and no port', async () => {
    const stack = await running();
    signal(-stack.npm, 'SIGINT');
    await until(
      'the stop to begin',
      () => (stack.start.stdout().includes('SIGINT: stopping every part') ? true : undefined),
      STOPPED_WITHIN_MS,
    );
    signal(-stack.npm, 'SIGINT');
    await stack.start.exited;
    await expectNothingLeft(stack);
  }, 300_000);
});
