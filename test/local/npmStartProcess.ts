import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { LOCAL_PORT_VARIABLES } from '../../local/localEnv.js';
import { eventually } from '../support/eventually.js';

/** A child process whose output a test reads as it comes, and its end. */
export interface CapturedProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything printed so far on stdout. */
  stdout(): string;
  /** Everything printed so far on stderr. */
  stderr(): string;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `command` with `env` as its whole environment, collecting what it prints; `detached` makes
 * it the leader of its own process group (as a terminal makes `npm start`), so the group can be killed.
 * Its stdin is at its end at once unless `stdin` is `'open'` (a terminal's, which nobody types into).
 * The tests that run npm start, local/start.ts, the CLI's bin or the docs' scripts use it.
 */
export function spawnCaptured(
  command: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; detached?: boolean; stdin?: 'open' | 'ended' },
): CapturedProcess {
  const { stdin = 'ended', ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, stdio: 'pipe' });
  if (stdin === 'ended') child.stdin.end();
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/**
 * `npm start` as a person, an IDE or CI runs it: through npm, as the leader of its own process group
 * (as a terminal makes it), every port picked freely (unless `env` fixes one) so that stacks of
 * parallel runs do not meet.
 * The tests of test/local/ that need the whole chain (npm → shell → node → java) use it.
 */
export type NpmStart = CapturedProcess;

export function npmStart(env: NodeJS.ProcessEnv = {}): NpmStart {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.values(LOCAL_PORT_VARIABLES)) merged[name] = '0';
  delete merged.POSTDATE_LOG;
  // A test that fixes a port (one another program holds) says so in `env`.
  Object.assign(merged, env);
  return spawnCaptured('npm', ['start'], { env: merged, detached: true, stdin: 'open' });
}

/** Waits for the banner's last line; returns the stdout so far. */
export function ready(start: NpmStart, withinMs = 180_000): Promise<string> {
  return eventually(
    // Read at the deadline: what the stack printed by then.
    () => `the banner (stdout: ${start.stdout().slice(-300)} stderr: ${start.stderr().slice(-300)})`,
    () => {
      if (start.stdout().includes('Ctrl-C stops everything.')) return start.stdout();
      // A start that ended without its banner will not print it later: fail now, with its words.
      if (start.child.exitCode !== null || start.child.signalCode !== null)
        throw new Error(`npm start ended before its banner: ${start.stderr().slice(-300)}`);
      return undefined;
    },
    { withinMs, everyMs: 100 },
  );
}

/** The ports the banner names (API, viewer, DynamoDB, SQS, Scheduler, SMTP sink). */
export function bannerPorts(banner: string): number[] {
  const ports = [...banner.matchAll(/127\.0\.0\.1:(\d+)/g)].map((match) => Number(match[1]));
  return [...new Set(ports)];
}

/** Every descendant of `pid` (children first found by `ps`), with its command name. */
export function descendants(pid: number): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  let output = '';
  try {
    output = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)]).toString();
  } catch {
    // ps exits 1 when there is no child.
    return found;
  }
  for (const line of output.trim().split('\n')) {
    const [child, command] = line.trim().split(/\s+/, 2);
    if (!child) continue;
    found.push({ pid: Number(child), command: command ?? '' }, ...descendants(Number(child)));
  }
  return found;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port`. */
export function portTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Kills whatever of `pids` is still alive (a failed test must not leave a stack behind). */
export function killLeftovers(pids: readonly number[]): void {
  for (const pid of pids) {
    if (isAlive(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  }
}
