import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOCAL_PORT_VARIABLES } from '../../local/localEnv.js';
import { eventually } from '../support/eventually.js';

/** The repository's root: the checkout a person runs `npm start` in. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What a checkout of a test's own does not share with the repository's. */
const NOT_SHARED = new Set([
  // Where `npm start` writes its endpoints (local/stackFile.ts): each stack its own.
  '.postdate',
  // The history: a stack reads none of it.
  '.git',
]);

/**
 * A checkout of its own for a stack a test starts: a temporary directory whose entries are symlinks
 * to the repository's (package.json, node_modules, local, lambdas, …) but for `.postdate` and `.git`.
 * `npm start` run there (npm runs the script in the package's root: this directory) writes its
 * `.postdate/local-stack.json` there, not at the repository's root, where a stack of another test file
 * running in parallel would overwrite it, and where the CLI run by any test in the root would find it
 * (a user runs one `npm start` per checkout: the product writes at the checkout's root, rightly).
 * Node resolves the modules through the symlinks to the repository's real files, so the stack runs
 * the same code. `removeCheckout` removes it.
 */
function ownCheckout(): string {
  // Real, as /proc names a process's working directory (`removeCheckout`).
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'postdate-checkout-')));
  for (const entry of readdirSync(ROOT)) {
    if (!NOT_SHARED.has(entry)) symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  return dir;
}

/**
 * Removes a checkout of `ownCheckout` once no process runs in it any more (Linux /proc; elsewhere at
 * once): a stack orphaned by its npm still reads its directory when it stops (`removeStackFile`), and
 * would fail to in a removed one. Waits in the background, holding nothing open; a checkout still in
 * use after a minute is left in the temporary directory. Only the symlinks go, never what they point
 * to (rmSync does not follow them).
 */
function removeCheckout(dir: string, withinMs = 60_000): void {
  const deadline = Date.now() + withinMs;
  const attempt = () => {
    if (!runsIn(dir)) rmSync(dir, { recursive: true, force: true });
    else if (Date.now() < deadline) setTimeout(attempt, 500).unref();
  };
  attempt();
}

/** Whether a process has `dir` as its working directory (false without /proc). */
function runsIn(dir: string): boolean {
  if (!existsSync('/proc/self/cwd')) return false;
  return readdirSync('/proc').some((entry) => {
    try {
      return /^\d+$/.test(entry) && readlinkSync(`/proc/${entry}/cwd`) === dir;
    } catch {
      // Gone meanwhile, or not ours to read.
      return false;
    }
  });
}

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
 * (as a terminal makes it), in a checkout of its own (`ownCheckout`, its `checkout`), every port
 * picked freely (unless `env` fixes one) so that stacks of parallel runs do not meet. Its
 * environment carries a mark of its own (`POSTDATE_RUN_MARK`), which every process it starts
 * inherits: `marked` finds them all, those started after any snapshot too.
 * The tests of test/local/ that need the whole chain (npm → shell → node → java) use it.
 */
export interface NpmStart extends CapturedProcess {
  readonly mark: string;
  /** The directory it runs in, where it writes `.postdate/local-stack.json`. */
  readonly checkout: string;
}

export function npmStart(env: NodeJS.ProcessEnv = {}): NpmStart {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.values(LOCAL_PORT_VARIABLES)) merged[name] = '0';
  delete merged.POSTDATE_LOG;
  // A test that fixes a port (one another program holds) says so in `env`.
  Object.assign(merged, env);
  const mark = randomUUID();
  merged.POSTDATE_RUN_MARK = mark;
  return { ...startInOwnCheckout('npm', ['start'], { env: merged, detached: true, stdin: 'open' }), mark };
}

/**
 * A process that starts a local stack (`npm start`, `node --import tsx local/start.ts`), spawned as
 * `spawnCaptured` spawns it but in a checkout of its own (`ownCheckout`, its `checkout`), removed
 * once it has ended: the one way the tests start `local/start.ts` in a process
 * (test/architecture/stackStarts.test.ts).
 */
export function startInOwnCheckout(
  command: string,
  args: readonly string[],
  options: Omit<Parameters<typeof spawnCaptured>[2], 'cwd'>,
): CapturedProcess & { readonly checkout: string } {
  const checkout = ownCheckout();
  const started = spawnCaptured(command, args, { ...options, cwd: checkout });
  void started.exited.then(() => removeCheckout(checkout));
  return { ...started, checkout };
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

/** The live processes whose environment holds `POSTDATE_RUN_MARK=mark` (Linux /proc), zombies not counted. */
export function marked(mark: string): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (!environ.split('\0').includes(`POSTDATE_RUN_MARK=${mark}`)) continue;
      const command = readFileSync(`/proc/${entry}/comm`, 'latin1').trim();
      // A zombie has ended; its parent has not read its status yet.
      if (parentAndState(Number(entry))?.state !== 'Z') found.push({ pid: Number(entry), command });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/**
 * Whether a stack could still hold TCP `port`: something listens there that is not of this test run's
 * own process tree. Once every process of a stack has ended, a listener in the tree is another test's,
 * which `freePort` let choose the very port the stack gave back (local/freePort.ts: nothing holds a
 * port between its choice and its use); a process the stack left behind is not in the tree, since an
 * orphan is given to init. The run's tree is everything under this worker's parent (vitest's main
 * process). Without /proc (macOS): whether anything accepts a connection.
 */
export async function heldOutsideTheRun(port: number): Promise<boolean> {
  const owners = listenerOwners(port);
  if (owners === undefined) return portTaken(port);
  return owners.some((owner) => owner === undefined || !descendsFrom(owner, process.ppid));
}

/**
 * The pids that hold a socket listening on TCP `port` (IPv4 or IPv6, any address), from the kernel's
 * socket tables and each process's open files; undefined for a listener whose holder this user cannot
 * read. Undefined as a whole where there is no /proc/net/tcp.
 */
export function listenerOwners(port: number): (number | undefined)[] | undefined {
  if (!existsSync('/proc/net/tcp')) return undefined;
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[] = [];
    try {
      lines = readFileSync(table, 'latin1').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      // sl local_address rem_address st … inode: 0A is LISTEN; the port is the local address's hex tail.
      const fields = line.trim().split(/\s+/);
      const local = fields[1] ?? '';
      if (fields[3] === '0A' && Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port)
        inodes.add(fields[9] ?? '');
    }
  }
  if (inodes.size === 0) return [];
  const owners = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${entry}/fd/${fd}`))?.[1];
        if (inode !== undefined && inodes.has(inode)) owners.set(inode, Number(entry));
      } catch {
        // Closed meanwhile.
      }
    }
  }
  return [...inodes].map((inode) => owners.get(inode));
}

/** Whether `pid` is `root` or one of its descendants, by /proc's parent links. */
function descendsFrom(pid: number, root: number): boolean {
  for (let at: number | undefined = pid; at !== undefined && at > 1; at = parentAndState(at)?.parent) {
    if (at === root) return true;
  }
  return false;
}

/** A process's parent and state letter, from /proc/<pid>/stat; undefined once it is gone. */
function parentAndState(pid: number): { parent: number; state: string } | undefined {
  try {
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after its last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const [state = '', parent = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { parent: Number(parent), state };
  } catch {
    return undefined;
  }
}
