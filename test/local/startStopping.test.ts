import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import {
  bannerPorts,
  descendants,
  heldOutsideTheRun,
  killLeftovers,
  marked,
  type NpmStart,
  npmStart,
  portTaken,
  ready,
} from './npmStartProcess.js';

/**
 * DESIGN §7: "Any way of stopping it — Ctrl-C, SIGTERM to any process of the chain, a closed
 * terminal — stops every part and frees every port." Each case starts the stack through npm as a
 * terminal would (npm the leader of its process group), stops it one way, and waits (with a
 * deadline) until no process carrying the start's mark is left and no process outside this run
 * listens on a port of the banner (another test may take a port the stack gave back meanwhile:
 * `heldOutsideTheRun`). One Ctrl-C and
 * Ctrl-C twice at once are the two stops of npmStartNewcomer's restart test (its stacks are stopped
 * anyway; the same assertions, read from /proc there): no start of their own here.
 */

const STOPPED_WITHIN_MS = 30_000;

/** The start under test: whatever carries its mark is killed after the test, whatever happened. */
let running: NpmStart | undefined;

afterEach(() => {
  if (running) killLeftovers(marked(running.mark).map((process) => process.pid));
  running = undefined;
});

async function started(env: NodeJS.ProcessEnv = {}): Promise<{
  start: NpmStart;
  chain: { pid: number; command: string }[];
  ports: number[];
}> {
  const start = npmStart(env);
  running = start;
  const banner = await ready(start);
  const npmPid = start.child.pid;
  if (npmPid === undefined) throw new Error('npm did not start');
  const chainNow = () => [{ pid: npmPid, command: 'npm' }, ...descendants(npmPid)];
  let chain = chainNow();
  const ports = bannerPorts(banner);
  // The chain holds the stack's node process and DynamoDB Local's java, and every port answers. One
  // `ps` walk of a loaded machine has missed the java child once (CI, 2026-12-03): walk again until
  // both are seen, within a deadline.
  await eventually(
    "the chain to show the stack's node and DynamoDB Local's java",
    () => {
      chain = chainNow();
      const commands = chain.map((process) => process.command);
      return commands.includes('node') && commands.includes('java');
    },
    { withinMs: STOPPED_WITHIN_MS, everyMs: 200 },
  );
  expect(ports.length).toBeGreaterThanOrEqual(5);
  for (const port of ports) expect(await portTaken(port), `port ${port} before the stop`).toBe(true);
  return { start, chain, ports };
}

async function expectAllGone(start: NpmStart, ports: readonly number[]) {
  await eventually(
    () => `every process of the start to end (still running: ${JSON.stringify(marked(start.mark))})`,
    () => marked(start.mark).length === 0,
    { withinMs: STOPPED_WITHIN_MS, everyMs: 100 },
  );
  for (const port of ports) {
    await eventually(`port ${port} to be free of the stack`, async () => !(await heldOutsideTheRun(port)), {
      withinMs: STOPPED_WITHIN_MS,
      everyMs: 100,
    });
  }
}

describe('stopping npm start', () => {
  it('SIGTERM to npm alone (an IDE, a process manager, CI) stops every part and frees every port', async () => {
    const { start, ports } = await started();
    process.kill(start.child.pid as number, 'SIGTERM');
    await expectAllGone(start, ports);
  }, 300_000);

  it('a closed terminal (SIGHUP to the process group) stops every part and frees every port', async () => {
    const { start, ports } = await started();
    process.kill(-(start.child.pid as number), 'SIGHUP');
    await expectAllGone(start, ports);
    // The group's SIGHUP reaches npm and the stack at once; when npm ends first, the stack may see its
    // parent gone before its own SIGHUP handler runs (seen under load in CI): either way it says why.
    expect(start.stdout()).toMatch(/(SIGHUP|its parent \(pid \d+\) ended): stopping every part/);
  }, 300_000);

  it('SIGKILL to the stack’s node process still ends DynamoDB Local and frees its port', async () => {
    const { start, chain, ports } = await started();
    process.kill(nodeOf(chain), 'SIGKILL');
    await expectAllGone(start, ports);
  }, 300_000);

  it("SIGTERM to the stack's node process stops every part gracefully and frees every port", async () => {
    const { start, chain, ports } = await started();
    signal(nodeOf(chain), 'SIGTERM');
    const exit = await start.exited;
    await expectAllGone(start, ports);
    expect(start.stdout()).toContain('SIGTERM: stopping every part');
    expect(exit.code).toBe(0);
  }, 300_000);

  it.each(['SIGTERM', 'SIGKILL'] as const)(
    "%s to DynamoDB Local's java alone stops every part, frees every port, and exits non-zero saying why",
    async (name) => {
      const { start, chain, ports } = await started();
      signal(javaOf(chain), name);
      await expectAllGone(start, ports);
      const exit = await start.exited;
      expect(exit.code ?? exit.signal).not.toBe(0);
      expect(start.stderr()).toMatch(/postdate: DynamoDB Local .*exited/);
    },
    300_000,
  );

  it('Ctrl-C again while the stop is under way still leaves no process and no port', async () => {
    const { start, ports } = await started();
    signal(-(start.child.pid as number), 'SIGINT');
    await eventually('the stop to begin', () => start.stdout().includes('SIGINT: stopping every part'), {
      withinMs: STOPPED_WITHIN_MS,
    });
    signal(-(start.child.pid as number), 'SIGINT');
    await start.exited;
    await expectAllGone(start, ports);
  }, 300_000);
});

describe('stopping npm start before its banner', () => {
  it('Ctrl-C while the parts come up leaves no process, no port and no temp dir of its own', async () => {
    // A fresh temp dir: what the stack made there is seen (the launcher's class and tsx's cache are
    // caches, kept on purpose). No launcher there yet makes DynamoDB Local the last part by far.
    const dir = mkdtempSync(join(tmpdir(), 'postdate-early-'));
    try {
      const start = npmStart({ TMPDIR: dir });
      running = start;
      const npmPid = start.child.pid as number;
      await eventually(
        'MailDev and the S3 emulator to be up',
        () => start.stdout().includes('up  S3 emulator') && start.stdout().includes('up  MailDev'),
        { withinMs: 120_000, everyMs: 50 },
      );
      signal(-npmPid, 'SIGINT');
      await start.exited;
      expect(start.stdout()).not.toContain('Ctrl-C stops everything.');
      await expectAllGone(start, bannerPorts(start.stdout()));
      const own = readdirSync(dir).filter((name) => /^postdate-(s3|maildev)-/.test(name));
      expect(own).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe('a Java runtime without jdk.compiler (no loopback launcher for DynamoDB Local)', () => {
  it('says DynamoDB Local listens on every interface, and Ctrl-C still leaves no process and no port', async () => {
    // DESIGN §7: everything "on loopback". Without the launcher the plain jar listens everywhere:
    // the start says so where it says the part is up. A `java` on PATH that refuses to compile
    // (as a JRE without jdk.compiler) and a fresh temp dir (no launcher compiled before) make it so.
    const dir = mkdtempSync(join(tmpdir(), 'postdate-jre-'));
    try {
      writeFileSync(
        join(dir, 'java'),
        `#!/bin/sh\ncase "$*" in *jdk.compiler*) exit 1;; esac\nPATH="${process.env.PATH ?? ''}" exec java "$@"\n`,
      );
      chmodSync(join(dir, 'java'), 0o755);
      const { start, ports } = await started({
        PATH: `${dir}${delimiter}${process.env.PATH ?? ''}`,
        TMPDIR: dir,
      });
      expect(start.stdout()).toMatch(/up {2}DynamoDB Local .*every interface/);
      signal(-(start.child.pid as number), 'SIGINT');
      await start.exited;
      await expectAllGone(start, ports);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

function nodeOf(chain: readonly { pid: number; command: string }[]): number {
  const node = chain.find((process) => process.command === 'node');
  if (!node) throw new Error(`no node process in the chain: ${JSON.stringify(chain)}`);
  return node.pid;
}

function javaOf(chain: readonly { pid: number; command: string }[]): number {
  const java = chain.find((process) => process.command === 'java');
  if (!java) throw new Error(`no java process in the chain: ${JSON.stringify(chain)}`);
  return java.pid;
}

/** Sends a signal unless its receiver has already gone (a fast stop may beat the second one). */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}
