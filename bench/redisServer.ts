import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from '../local/freePort.js';

/** How to get redis-server, said once for the skip line and the errors. */
export const REDIS_INSTALL_HINT =
  'install it with `sudo apt-get install -y redis-server` (Debian/Ubuntu; the benchmark starts its own, not the service) or `brew install redis` (macOS)';

/** The first executable `name` on `pathList` (a PATH value), or undefined. */
export function findExecutable(
  name: string,
  pathList: string | undefined = process.env.PATH,
): string | undefined {
  for (const dir of (pathList ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here (or not executable): the next directory.
    }
  }
  return undefined;
}

/** The `key:value` lines of Redis's INFO answer (sections and comments left out). */
export function parseRedisInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** The arguments it was started with after the binary, for the record. */
  readonly args: readonly string[];
  stop(): Promise<void>;
}

const READY_LINE = 'Ready to accept connections';
const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

/**
 * A private redis-server on a free loopback port, configured as the peer is usually run for jobs
 * that must not be lost: the append-only file fsynced every second, no RDB snapshots, its files in
 * a fresh temporary directory that `stop` removes.
 */
export async function startRedisServer(binary: string): Promise<RedisServer> {
  const host = '127.0.0.1';
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'postdate-bench-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    host,
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
    '--dir',
    dir,
    '--daemonize',
    'no',
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    await untilReady(child);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    host,
    port,
    args,
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function untilReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () => fail(new Error(`redis-server did not start in ${START_TIMEOUT_MS} ms: ${output.slice(-500)}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes(READY_LINE)) {
        done();
        resolve();
      }
    };
    const onExit = (code: number | null) =>
      fail(new Error(`redis-server exited with ${code} before it was ready: ${output.slice(-500)}`));
    const onError = (error: Error) =>
      fail(new Error(`redis-server could not start (${REDIS_INSTALL_HINT})`, { cause: error }));
    function done() {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      // Keep draining its output so a full pipe never blocks it.
      child.stdout?.resume();
      child.stderr?.resume();
    }
    function fail(error: Error) {
      done();
      reject(error);
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/** SIGTERM (Redis flushes the append-only file and exits), SIGKILL if it has not gone in time. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
