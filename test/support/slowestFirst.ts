import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (CI of 2026-12-06 at 6a2da89, 3 workers, one run: the ms of each file
 * in vitest's summary), slowest first. Started first, they run beside the many short files instead of
 * ending the run alone: on a fresh checkout (CI: no vitest cache) vitest orders by file size, which
 * put a 98 s file 99th of 325 and a 34 s one 177th (decision 0263). A file not listed keeps vitest's
 * own order after these; a listed file that no longer exists is ignored. Update the list when a
 * file's time changes by much (decision 0298: from a CI log, the files of 15 s and more).
 */
export const SLOWEST_FILES = [
  'test/chaos/chaos.test.ts', // 94 s
  'test/local/localStackRestart.test.ts', // 81 s
  'test/local/localStack.test.ts', // 72 s
  'test/local/startStopping.test.ts', // 61 s
  'test/local/npmStartNewcomer.test.ts', // 50 s
  'test/runbook/outcomeWriteFailures.test.ts', // 50 s alone here: a stack, the write reserve run out (0293)
  'test/runbook/sweeperUnderSchedulerThrottling.test.ts', // 41 s
  'test/runbook/webhookCopiesGone.test.ts', // 41 s
  'test/runbook/webhookDeadLetters.test.ts', // 40 s
  'test/runbook/schedulerThrottling.test.ts', // 35 s
  'test/package/installable.test.ts', // 34 s
  'test/runbook/suppressedRecipients.test.ts', // 25–38 s alone here (0295)
  'test/sender/relayBreaker.test.ts', // 33 s
  'test/sender/outcomeRules.test.ts', // 32 s
  'test/runbook/scheduleDeliveryFailures.test.ts', // 30 s
  'test/webhooks/webhookPromises.test.ts', // 22–37 s alone here at load 2–13: 8 + 3 generated scenarios (0319)
  'test/runbook/relayFailover.test.ts', // 28–35 s alone here: a stack, two relays (0294)
  'test/sweeper/timeBudget.test.ts', // 30 s
  'test/iam/permissions.test.ts', // 29 s
  'test/docs/examples.test.ts', // 22 s
  'test/sender/relayFailover.test.ts', // 22 s
  'test/cli/interrupt.test.ts', // 22 s
  'test/webhooks/testSideMetrics.test.ts', // 21 s
  'test/adapters/smtpSeam.test.ts', // 16–24 s alone here: 100 generated relay scripts (0315)
  'test/api/enqueuePromises.test.ts', // 17–24 s alone here: five properties on the api handler
  'test/webhooks/deliveryShards.test.ts', // 20 s
  'test/sweeper/sweepPromises.test.ts', // 15–23 s alone here: 5 fixed and 25 generated runs of sender, sweeper and relay (0320)
  'test/sender/failoverPromises.test.ts', // 15–17 s alone here: 14 model runs on three relays (0322)
  'test/client/batchOnTheLocalStack.test.ts', // 20 s
  'test/sender/deadLettersThroughTheBackstop.test.ts', // 20 s
  'test/webhooks/stalledEndpoint.test.ts', // 20 s
  'test/local/localStackWebhookReceiver.test.ts', // 19 s
  'test/local/localStackFaults.test.ts', // 18 s
  'test/local/stackFilePerStart.test.ts', // 15–20 s alone here: two stacks at once (0299)
  'test/sender/relayFailoverInOrder.test.ts', // 18 s
  'test/runbook/relayFailures.test.ts', // 16 s
  'test/cli/reconcile.test.ts', // 16 s
  'test/sweeper/deadLetterRenewal.test.ts', // 16 s
  'test/sender/suppressions.test.ts', // 16 s
  'test/sweeper/pause.test.ts', // 15 s
  'test/sweeper/newerWriters.test.ts', // 15 s
];

/**
 * The projects in the order they run (vitest.config.ts): `shared` first, whose workers keep their
 * modules only while the next file is of the same project, then `parts`, whose slowest files then
 * start at once, and `pure`, the many short files that fill the end. vitest's own order is by name.
 */
const PROJECT_ORDER = ['shared', 'parts', 'pure'];

/**
 * vitest's order within a project, the projects in {@link PROJECT_ORDER}, with {@link SLOWEST_FILES}
 * moved to the front of their project in the list's order (vitest.config.ts `sequence.sequencer`).
 */
export class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = SLOWEST_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index === -1 ? SLOWEST_FILES.length : index;
    };
    const place = (project: string) => {
      const index = PROJECT_ORDER.indexOf(project);
      return index === -1 ? PROJECT_ORDER.length : index;
    };
    const projects = [...new Set(sorted.map((spec) => spec.project.name))].sort(
      (a, b) => place(a) - place(b),
    );
    return projects.flatMap((project) =>
      sorted
        .filter((spec) => spec.project.name === project)
        .map((spec, position) => ({ spec, position, rank: rank(spec) }))
        .sort((a, b) => a.rank - b.rank || a.position - b.position)
        .map(({ spec }) => spec),
    );
  }
}
