import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Where `npm start` writes the endpoints of the stack it runs, so that the CLI (and anything else on
 * the machine) finds a stack started on other ports — including ports picked freely with 0. The
 * file holds no key and no credential: only loopback addresses, and the pid that owns them.
 */
export const STACK_FILE = join('.postdate', 'local-stack.json');

export interface StackFile {
  readonly pid: number;
  readonly startedAt: string;
  readonly apiUrl: string;
  readonly mailViewerUrl: string | null;
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly schedulerEndpoint: string;
  readonly smtpPort: number | null;
  /** The S3 emulator (attachments); absent in the file of a stack started before it was written. */
  readonly s3Endpoint?: string;
  /**
   * The relays the stack's functions have, in order (POSTDATE_RELAYS, or the one relay `default`):
   * the local CLI decides "is sending available" with these (cli/relaysCommands.ts). Absent in the
   * file of a stack started before it was written.
   */
  readonly relayNames?: readonly string[];
  /**
   * The domain the stack's senders write Message-IDs with (POSTDATE_MESSAGE_ID_DOMAIN): the local CLI
   * shows the Message-ID to search the relay for with it, whatever its own shell has (decision 0282).
   * Absent in the file of a stack started before it was written.
   */
  readonly messageIdDomain?: string;
}

export function stackFilePath(cwd: string = process.cwd()): string {
  return join(cwd, STACK_FILE);
}

export function writeStackFile(file: StackFile, cwd?: string): void {
  const path = stackFilePath(cwd);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
}

/** Removes the file if it is this process's (another stack may have written it since). */
export function removeStackFile(pid: number, cwd?: string): void {
  const path = stackFilePath(cwd);
  if (stackFileAt(path, processIsAlive)?.pid === pid) rmSync(path, { force: true });
}

/**
 * The file of a stack that is still running, or undefined (none, unreadable, or its process is gone).
 * `npm start` writes it at the checkout's root, and `npx postdate` runs in the shell's directory:
 * the nearest file in `cwd` or a directory above it is the one read.
 */
export function readStackFile(
  cwd: string = process.cwd(),
  isAlive: (pid: number) => boolean = processIsAlive,
): StackFile | undefined {
  for (let dir = cwd; ; dir = dirname(dir)) {
    const path = stackFilePath(dir);
    if (existsSync(path)) return stackFileAt(path, isAlive);
    if (dirname(dir) === dir) return undefined;
  }
}

function stackFileAt(path: string, isAlive: (pid: number) => boolean): StackFile | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (!isStackFile(parsed) || !isAlive(parsed.pid)) return undefined;
  return parsed;
}

function isStackFile(value: unknown): value is StackFile {
  if (typeof value !== 'object' || value === null) return false;
  const file = value as Record<string, unknown>;
  return (
    typeof file.pid === 'number' &&
    typeof file.dynamodbEndpoint === 'string' &&
    typeof file.sqsEndpoint === 'string' &&
    typeof file.schedulerEndpoint === 'string' &&
    typeof file.apiUrl === 'string' &&
    (file.s3Endpoint === undefined || typeof file.s3Endpoint === 'string') &&
    (file.relayNames === undefined ||
      (Array.isArray(file.relayNames) && file.relayNames.every((name) => typeof name === 'string')))
  );
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but is someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
