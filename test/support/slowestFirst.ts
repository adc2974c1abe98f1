import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (CI of 2026-12-05, 2 workers, ms of one run), slowest first. Started
 * first, they run beside the many short files instead of ending the run alone: on a fresh checkout
 * (CI: no vitest cache) vitest orders by file size, which put a 98 s file 99th of 325 and a 34 s one
 * 177th (decision 0263). A file not listed keeps vitest's own order after these; a listed file that
 * no longer exists is ignored. Update the list when a file's time changes by much.
 */
export const SLOWEST_FILES = [
  'test/local/localStackRestart.test.ts', // 169 s in CI at 512a442 (decision 0264's restart), ~120 s after
  'test/local/startStopping.test.ts', // 98 s: eleven starts of the whole stack through npm
  'test/local/npmStartNewcomer.test.ts', // 68 s: fourteen starts, each with a port held (decision 0261)
  'test/chaos/chaos.test.ts', // 94 s: the chaos run
  'test/sender/outcomeRules.test.ts', // 76 s, about 50 s after decision 0263
  'test/package/installable.test.ts', // 44 s: npm pack and install
  'test/local/localStack.test.ts', // 40 s
  'test/local/localStackQuietHours.test.ts', // 37 s: a quiet-hours window on the real clock
  'test/sender/relayBreaker.test.ts', // 35 s
  'test/sweeper/newerWriters.test.ts', // 34 s
  'test/docs/examples.test.ts', // 29 s
  'test/sweeper/timeBudget.test.ts', // 24 s
  'test/cli/interrupt.test.ts', // 24 s
  'test/sender/deadLettersThroughTheBackstop.test.ts', // 22 s
  'test/iam/permissions.test.ts', // 22 s
  'test/cli/everyCommandJson.test.ts', // 21 s
  'test/local/localStackWebhookReceiver.test.ts', // 21 s
  'test/sender/retriesAndDeadLetters.test.ts', // 21 s
  'test/sender/relayFailover.test.ts', // 20 s
  'test/architecture/bundleContents.test.ts', // 18 s (project pure)
  'test/sweeper/deadLetterWalk.test.ts', // 18 s
];

/**
 * vitest's order (projects apart, as it keeps them), with {@link SLOWEST_FILES} moved to the front of
 * their project in the list's order (vitest.config.ts `sequence.sequencer`).
 */
export class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = SLOWEST_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index === -1 ? SLOWEST_FILES.length : index;
    };
    const projects = [...new Set(sorted.map((spec) => spec.project.name))];
    return projects.flatMap((project) =>
      sorted
        .filter((spec) => spec.project.name === project)
        .map((spec, position) => ({ spec, position, rank: rank(spec) }))
        .sort((a, b) => a.rank - b.rank || a.position - b.position)
        .map(({ spec }) => spec),
    );
  }
}
