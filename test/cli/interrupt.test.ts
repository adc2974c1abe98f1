import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExportedMessage } from '../../cli/messagesExport.js';
import { spawnCaptured } from '../local/npmStartProcess.js';
import { documentClient, emulatorEnv, freshTable } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { messageId, type SeedMessage, seedMessages } from './cliFixtures.js';

/**
 * A script interrupts a long run (`timeout -s INT`, a CI job cancelled, Ctrl-C): docs/cli.md asks
 * that it end with a clear state and a non-zero exit, and that a `--json` stream of JSON Lines end
 * with its error line, so that every line parses whatever happens. The run is held mid-way by a
 * DynamoDB endpoint that takes the connection and never answers, so the interrupt lands while the
 * export waits, whatever the machine's speed.
 */

let server: Server;
const sockets: Socket[] = [];
let endpoint = '';

beforeAll(async () => {
  server = createServer((socket) => {
    sockets.push(socket);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  endpoint = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((closed) => server.close(closed));
});

/** The long run both cases interrupt: an export of two days of one tenant's messages. */
const LONG_EXPORT = ['messages', 'export', '--since', '2d', '--tenant', 'acme'];

async function interrupted(args: readonly string[]) {
  const seenBefore = sockets.length;
  const { child, stdout, stderr, exited } = spawnCaptured(process.execPath, ['cli/postdate.mjs', ...args], {
    env: {
      ...process.env,
      NO_COLOR: '1',
      AWS_ENDPOINT_URL_DYNAMODB: endpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
    },
  });
  await eventually('the CLI waiting on DynamoDB', () => sockets.length > seenBefore, { withinMs: 30_000 });
  child.kill('SIGINT');
  const { code, signal } = await exited;
  return { code, signal, stdout: stdout(), stderr: stderr() };
}

describe('an interrupted long run (SIGINT)', () => {
  it('messages export --json: exits 130 and its last line is the error, every line parses', async () => {
    const run = await interrupted(['--table', 'outbox', '--json', ...LONG_EXPORT]);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 130, signal: null });
    const lines = run.stdout.trimEnd().split('\n');
    const documents = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(documents.at(-1)).toMatchObject({
      error: { type: 'urn:postdate:cli:interrupted', exit_code: 130 },
    });
    expect(run.stderr).toMatch(/postdate: interrupted .*run it again/);
    expect(run.stderr).not.toMatch(/\bat .*\(|Error:/);
  }, 60_000);

  it('without --json: exits 130 with one line on stderr and nothing on stdout', async () => {
    const run = await interrupted(['--table', 'outbox', ...LONG_EXPORT]);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 130, signal: null });
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/postdate: interrupted .*run it again/);
  }, 60_000);
});

/**
 * `messages export --out FILE` interrupted while it writes (decision 0248): a real table holding
 * enough messages that the export is still running when its first lines are in the file. Whatever
 * the moment, every line the run counts as exported is in the file when the process has exited, the
 * file ends on a whole line (each one parses), and the error document says how many were written, so
 * a script knows what it has without reading the file.
 */
describe('an export to a file interrupted while it writes (SIGINT)', () => {
  const MESSAGES = 3000;
  const now = Date.now();
  // A day of one tenant's messages, each with a few attempts' replies, so a line is about a kilobyte.
  const seeds: SeedMessage[] = Array.from({ length: MESSAGES }, (_, n) => ({
    id: messageId(50_000 + n),
    tenant: 'acme',
    status: 'sent',
    createdAt: new Date(now - 24 * 3_600_000 + n * 1000).toISOString(),
    attempts: 3,
    history: [1, 2, 3].map((attempt) => ({
      at: new Date(now - 24 * 3_600_000 + n * 1000 + attempt * 100).toISOString(),
      outcome: attempt < 3 ? ('transient' as const) : ('sent' as const),
      code: attempt < 3 ? '451' : '250',
      enhanced_code: attempt < 3 ? '4.3.0' : '2.0.0',
      reply:
        attempt < 3
          ? '451 4.3.0 Temporary local problem, please try again later'
          : '250 2.0.0 Ok: queued as 4BX',
      duration_ms: 42,
    })),
  }));
  let tableName: string;

  beforeAll(async () => {
    ({ tableName } = await freshTable());
    await seedMessages(documentClient(), tableName, seeds);
  }, 120_000);

  it('has every line it counts in the file, the last one whole, and says how many in its error document', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'postdate-interrupt-')), 'audit.jsonl');
    const { child, stdout, stderr, exited } = spawnCaptured(
      process.execPath,
      [
        'cli/postdate.mjs',
        '--table',
        tableName,
        '--json',
        'messages',
        'export',
        '--since',
        '2d',
        '--tenant',
        'acme',
        '--out',
        file,
      ],
      { env: { ...process.env, ...emulatorEnv(), NO_COLOR: '1' } },
    );
    await eventually(
      'the first lines in the file',
      () => existsSync(file) && readFileSync(file, 'utf8').includes('\n'),
      { withinMs: 60_000, everyMs: 5 },
    );
    child.kill('SIGINT');
    const { code, signal } = await exited;

    expect({ code, signal, stderr: stderr() }).toMatchObject({ code: 130, signal: null });
    const document = JSON.parse(stdout().trimEnd().split('\n').at(-1) ?? '') as {
      error: Record<string, unknown>;
    };
    expect(document.error).toMatchObject({ type: 'urn:postdate:cli:interrupted', exit_code: 130 });
    const written = readFileSync(file, 'utf8');
    expect(written.endsWith('\n')).toBe(true);
    const lines = written.slice(0, -1).split('\n');
    const ids = lines.map((line) => (JSON.parse(line) as ExportedMessage).id);
    expect(document.error.lines_written).toBe(lines.length);
    // Interrupted: some of them, the oldest first, none twice.
    expect(lines.length).toBeLessThan(MESSAGES);
    expect(ids).toEqual(seeds.slice(0, lines.length).map((seed) => seed.id));
    expect(stderr()).toMatch(
      new RegExp(
        `postdate: interrupted \\(SIGINT\\) after ${lines.length} lines? written to .*audit\\.jsonl`,
      ),
    );
  }, 180_000);
});
