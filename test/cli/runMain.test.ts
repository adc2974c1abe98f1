/**
 * `runMain` (cliFixtures.ts) runs the CLI's main in the test's process, one command after another:
 * what a spawn gave each command for free, a fresh process, it must give back by hand. A run must
 * leave this process as it found it (its environment, exit code, directory, the hooks on its
 * streams and signals), or one command's run changes the next one's (decision 0274).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/cliErrors.js';
import { emulatorEnv, freshTable } from '../support/awsLocal.js';
import { runMain } from './cliFixtures.js';

/** What a command run in this process could leave behind. */
function processState() {
  return {
    cwd: process.cwd(),
    exitCode: process.exitCode,
    debug: process.env.POSTDATE_DEBUG,
    region: process.env.AWS_REGION,
    stdout: Object.fromEntries(
      (['error', 'drain', 'close'] as const).map((event) => [event, process.stdout.listenerCount(event)]),
    ),
    stderr: Object.fromEntries(
      (['error', 'drain', 'close'] as const).map((event) => [event, process.stderr.listenerCount(event)]),
    ),
    signals: { SIGINT: process.listenerCount('SIGINT'), SIGTERM: process.listenerCount('SIGTERM') },
    writes: { out: process.stdout.write, err: process.stderr.write },
  };
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('runMain, the CLI in this process', () => {
  it('leaves the process as it found it after a command that succeeds, one that fails, and an export to stdout', async () => {
    const { tableName } = await freshTable('cli-run-main');
    const dir = await mkdtemp(join(tmpdir(), 'postdate-run-main-'));
    dirs.push(dir);
    const before = processState();
    const aws = ['--json', '--table', tableName];
    const env = { ...emulatorEnv(), POSTDATE_DEBUG: '1' };

    const exported = await runMain([...aws, 'messages', 'export', '--tenant', 'acme', '--since', '1h'], env, {
      cwd: dir,
    });
    expect(exported.code).toBe(EXIT.ok);
    const missing = await runMain([...aws, 'messages', 'show', '01JQ5000000000000000000001'], env);
    expect(missing.code).toBe(EXIT.notFound);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { exit_code: EXIT.notFound } });

    expect(processState()).toEqual(before);
  });
});
