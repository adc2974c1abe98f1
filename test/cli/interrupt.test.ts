import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCaptured } from '../local/npmStartProcess.js';
import { eventually } from '../support/eventually.js';

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
