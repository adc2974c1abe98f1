import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readStackFile } from '../../local/stackFile.js';
import { killLeftovers, marked, type NpmStart, npmStart, ready } from './npmStartProcess.js';

/**
 * `npm start` writes its endpoints to `.postdate/local-stack.json` in the checkout it runs in, and the
 * CLI reads the nearest one (local/stackFile.ts): one file per checkout, right for a user, who runs
 * one stack per checkout. The test files run in parallel and several start a stack: each must write
 * the file of its own checkout (npmStartProcess.ts `ownCheckout`), or the last one started overwrites
 * the others' (a full run, decision 0299: localStack's read found another file's pid), and the CLI any
 * test runs in the repository's root is sent to whichever stack wrote last.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('stacks started by tests at the same time', () => {
  const starts: NpmStart[] = [];

  afterAll(async () => {
    for (const start of starts) {
      if (start.child.pid !== undefined && start.child.exitCode === null) {
        process.kill(-start.child.pid, 'SIGTERM');
      }
    }
    await Promise.all(starts.map((start) => start.exited));
    killLeftovers(starts.flatMap((start) => marked(start.mark).map((process) => process.pid)));
  });

  it("each writes its own file, naming its own process, and none the repository's", async () => {
    starts.push(npmStart(), npmStart());
    await Promise.all(starts.map((start) => ready(start)));

    /** The processes of a start: its file's pid is its node's, one of them. */
    const pidsOf = (start: NpmStart) => marked(start.mark).map((process) => process.pid);
    for (const start of starts) {
      const file = readStackFile(start.checkout);
      expect(pidsOf(start), `the pid of ${start.checkout}'s file`).toContain(file?.pid);
    }
    // A stack at the root, if any, is a person's `npm start`: never one of these.
    const atRoot = readStackFile(ROOT)?.pid;
    for (const start of starts) expect(pidsOf(start)).not.toContain(atRoot);
  }, 240_000);
});
