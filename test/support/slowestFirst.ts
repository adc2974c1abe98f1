import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (CI of 2026-12-05 at 58335ce, 2 workers, one run, less what decisions
 * 0271-0276 cut), slowest first. Started first, they run beside the many short files instead of ending the run alone: on a fresh checkout
 * (CI: no vitest cache) vitest orders by file size, which put a 98 s file 99th of 325 and a 34 s one
 * 177th (decision 0263). A file not listed keeps vitest's own order after these; a listed file that
 * no longer exists is ignored. Update the list when a file's time changes by much.
 */
export const SLOWEST_FILES = [
  'test/local/localStack.test.ts', // 50 s in CI at 58335ce, and now the quiet-hours window (51 s) and the warm start (0272)
  'test/local/startStopping.test.ts', // 93 s: nine starts of the whole stack through npm (0271)
  'test/chaos/chaos.test.ts', // 92 s: the chaos run
  'test/local/localStackRestart.test.ts', // 132 s at 58335ce; four whole starts, was eight (0272)
  'test/local/npmStartNewcomer.test.ts', // 63 s; two busy-port starts through npm, was fourteen (0271)
  'test/package/installable.test.ts', // 46 s: build, npm pack and install
  'test/sender/outcomeRules.test.ts', // 39 s
  'test/docs/examples.test.ts', // 33 s
  'test/sender/relayBreaker.test.ts', // 32 s
  'test/iam/permissions.test.ts', // 31 s
  'test/cli/reconcile.test.ts', // 30 s
  'test/runbook/relayFailover.test.ts', // 28 s alone beside other helpers' runs: a stack, two relays, the walk (0294)
  'test/sweeper/deadLetterRenewal.test.ts', // 20 s
  'test/sweeper/strandedMessages.test.ts', // 19 s
  'test/sender/relayFailover.test.ts', // 22 s
  'test/sender/deadLettersThroughTheBackstop.test.ts', // 22 s
  'test/local/localStackWebhookReceiver.test.ts', // 24 s
  'test/runbook/providerOutage.test.ts', // 18 s
  'test/cli/messagesEnqueue.test.ts', // 18 s
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
