import { describe, expect, it } from 'vitest';
import { LOCAL_PORT_VARIABLES } from '../../local/localEnv.js';
import { eventually } from '../support/eventually.js';
import { startInOwnCheckout } from './npmStartProcess.js';

/**
 * The arguments of `npm start -- …` (docs/local-stack.md: `--quiet`, `--pretty`, `--json`,
 * `--backup-relay[=PORT]`). A start that cannot go ahead with them is refused before anything starts,
 * as a bad variable is (DESIGN §8): exit 1, nothing on stdout, one line on stderr that says what
 * would have been right.
 */

/** `npm start`'s own process (`exec node …`) with these arguments and variables, run to its exit. */
async function startExit(args: readonly string[], env: Record<string, string> = {}) {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  // A start that goes ahead by mistake takes no port another stack holds.
  for (const name of Object.values(LOCAL_PORT_VARIABLES)) merged[name] = '0';
  delete merged.POSTDATE_RELAYS;
  const { child, stdout, stderr } = startInOwnCheckout(
    process.execPath,
    ['--import', 'tsx', 'local/start.ts', ...args],
    { env: { ...merged, ...env }, detached: true },
  );
  try {
    const code = await eventually(
      () => `npm start ${args.join(' ')} to exit (stdout: ${stdout().slice(-300)})`,
      () => (child.exitCode === null ? undefined : { code: child.exitCode }),
      { withinMs: 30_000, everyMs: 50 },
    );
    return {
      code: code.code,
      stdout: stdout(),
      lines: stderr()
        .split('\n')
        .filter((line) => line !== ''),
    };
  } finally {
    // A stack that started after all is stopped with everything it started.
    if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  }
}

describe('npm start -- arguments', () => {
  it('an unknown one is refused with every argument npm start takes, --backup-relay included', async () => {
    const { code, stdout, lines } = await startExit(['--help']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines).toEqual([
      'postdate: npm start: unknown argument "--help" (one of --pretty, --quiet, --json, --backup-relay[=PORT])',
    ]);
  }, 40_000);

  it('--backup-relay with a port that is not one is refused before anything starts', async () => {
    const { code, stdout, lines } = await startExit(['--backup-relay=abc']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines).toEqual(['postdate: --backup-relay takes a port from 1 to 65535, got "abc"']);
  }, 40_000);

  it('--backup-relay with POSTDATE_RELAYS set is refused before anything starts, naming the variable', async () => {
    const relays = JSON.stringify([
      { name: 'mine', host: '127.0.0.1', port: 2525, secure: false, require_tls: false },
    ]);
    const { code, stdout, lines } = await startExit(['--backup-relay'], { POSTDATE_RELAYS: relays });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^postdate: POSTDATE_RELAYS: is set: .*--backup-relay/);
  }, 40_000);
});
