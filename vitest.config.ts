import { configDefaults, defineConfig } from 'vitest/config';
import { SlowestFirst } from './test/support/slowestFirst.js';

/**
 * Suites with no emulator, no process, no server and no module state: the pure core, the layer
 * rules and the CDK assertions. They share their worker's modules (`isolate: false`), so that
 * aws-cdk-lib and fast-check are imported once per worker, not once per file (test/README.md).
 */
const PURE = [
  'test/core/**/*.test.ts',
  'test/cdk/**/*.test.ts',
  'test/architecture/**/*.test.ts',
  // Files of the other areas that hold no more than the above: pure functions of lambdas/, bench/ and
  // the client, no emulator (`inject`), no server, no process, no module state set, and no spy or
  // stream hook left installed (costModel's and metricDimensions' stdout hooks restore the very
  // write they replaced) (docs/decisions/0276).
  'test/api/{openapiRequestSchemas,outboxExpiry,problem}.test.ts',
  'test/adapters/{composedMessageSize,mailboxSimulator,smtpCredentials,smtpCredentialsErrors}.test.ts',
  'test/bench/{burst,capacityModel,chart,costModel,goals,lateness,outageCounts,pipeline,stats}.test.ts',
  'test/client/{openapiTypes,retryPolicy}.test.ts',
  'test/local/stopSignals.test.ts',
  'test/relay/planRelay.test.ts',
  'test/store/streamRecord.test.ts',
];

/**
 * Suites on the run's emulators that share their worker's modules (`isolate: false`, project
 * `shared`): the SDK, the handlers' module graphs (api, sender, relay, sweeper, webhooks), the local
 * emulators, nodemailer and the OpenAPI document's compiled response checks load once per worker,
 * not once per file. Each makes its
 * own tables and queues, and stops in its own hooks the servers it starts (SMTP, Scheduler and S3
 * emulators, HTTP front ends); none sets `process.env`, spies, mocks, patches a prototype or starts a
 * process; what they import keeps no module state a test sets or reads. The files of these areas
 * that do stay in `parts` (docs/decisions/0276, 0298); among them api/outboxTemplateUnread, which
 * reads whether its process has loaded Handlebars.
 */
export const SHARED = [
  'test/api/{apiStorePut,attachmentUploads,attachments,authorizer,batch,batchAsSingles}.test.ts',
  'test/api/{batchAttachments,enqueue,failures,hostileInputs,idempotentRetries,immediateCopy}.test.ts',
  'test/api/{list,listPaging,listRightAfterEnqueue,localTime,newerWriters,openapi}.test.ts',
  'test/api/{openapiResponses,outbox,pastRetention,retryAttachments,templateDataNumbers}.test.ts',
  'test/api/{templateDataOwnKeys,templateHeads,templateMessageSize,templateRenderBounds}.test.ts',
  'test/api/{templates,templatesWhileMailIsQueued,testSideWalls,transitions,uploadsAsDeveloper}.test.ts',
  'test/api/{listingCursors,openapiWebhooks,retry,testKeys,unacceptedAttachments}.test.ts',
  'test/adapters/{awsClients,eventBridgeBus,eventBridgeScheduler,lazyS3AttachmentStore}.test.ts',
  'test/adapters/{mailerAttachments,mailerStalledLoop,nodemailerMailer,s3AttachmentStore}.test.ts',
  'test/adapters/{smtpSeam,smtpSessions,sqsCopyVisibility,sqsDispatchQueue,streamRecordFormat}.test.ts',
  'test/webhooks/{attachmentLifetimes,delivery,deliveryDefects,deliveryOperator,deliveryShards}.test.ts',
  'test/webhooks/{rotateSecret,ssrf,stalledEndpoint,testSideMetrics}.test.ts',
  'test/client/{batchRetries,clientInput,retries}.test.ts',
  'test/chaos/{checker,checkerSpec,checkerTwoRelays,relayOutageCut,smtpTap,throttleMiddleware}.test.ts',
  'test/chaos/webhookChecker.test.ts',
  'test/bench/redisServer.test.ts',
  'test/local/{atExpression,eventFilter,httpFrontEnd,s3EmulatorWrites,sqsServer,startSchedulerEmulator}.test.ts',
  'test/local/{streamBatchingWindow,throttleFault,webhookRecovery,webhookWarmUp}.test.ts',
  'test/cli/{attachments,discard,keys,messagesEnqueue}.test.ts',
  'test/iam/relaySecrets.test.ts',
  'test/support/awsLocal.smoke.test.ts',
  'test/store/{bodyContent,groupHead,groupHeadReplicas,indexShards,lifetimeRaces,sendingGateItems}.test.ts',
  'test/store/smallBodiesInline.test.ts',
  'test/relay/{handWrittenRecords,newerWriters,redrive,relay,relayFailure,streamRunner}.test.ts',
  'test/sweeper/{backlog,deadLetterRenewal,deadLetterWalk,newerWriters,pause,relayBreaker}.test.ts',
  'test/sweeper/{staleDeadLetters,strandedMessages,sweeper,timeBudget,waitingGauge}.test.ts',
  // With those on test/sender/breakerHarness.ts and outcomeRules: their gate's clock (`gateClock`,
  // 0297) is an object of the test, not module state (0300).
  'test/sender/{outcomeRules,relayBreaker,relayGate,relayFailover,relayFailoverInOrder,quietHours}.test.ts',
  'test/sender/{heldBackLateness,judgedAfterTheRateWait,takeoverHeldByTheGate,probeConfigErrors}.test.ts',
  'test/store/lifetimes.test.ts',
  'test/sender/{allowedSenders,attachments,attemptRecords,checksBeforeSending,compressedBodies}.test.ts',
  'test/sender/{deadLettersThroughTheBackstop,deliveryOutcomes,duplicatesAndLeases}.test.ts',
  'test/sender/{historyHoldsAttempts,newerLayouts,outcomeWrites,providerMessageId}.test.ts',
  'test/sender/{racesAgainstTheRev,recipients,relayTls,retriesAndDeadLetters,sendRateLimiter}.test.ts',
  'test/sender/{senderTransitions,suppressions,templates,testMode,timeBudget,whatTheUserReads}.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default on 2 cores is one worker, which leaves the second core idle while a suite waits
    // on the JVM, an SMTP timeout or a child process (docs/decisions/0092-two-test-workers.md). With
    // two, CI's 2-core machine was still idle a fifth of the time (75-80 % busy at 1,052 s of vitest,
    // 645b139): three (docs/decisions/0277-three-test-workers.md).
    maxWorkers: 3,
    // The slowest files first, so that none ends the run alone (test/support/slowestFirst.ts, 0263).
    sequence: { sequencer: SlowestFirst },
    // The SDK warns on Node 20 that releases after January 2027 need Node 22; the versions are pinned.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    projects: [
      { extends: true, test: { name: 'pure', include: PURE, isolate: false } },
      {
        extends: true,
        test: {
          name: 'shared',
          include: SHARED,
          isolate: false,
          testTimeout: 60_000,
          // The same emulators as `parts`: the setup starts them once for both (globalSetup.ts).
          globalSetup: ['test/support/globalSetup.ts'],
          // A file's tables are deleted after it (dropTables.ts, decision 0303).
          setupFiles: ['test/support/dropTables.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'parts',
          include: ['test/**/*.test.ts'],
          // A wait on real parts has its own deadline (test/support/eventually.ts, 15 s by default), and
          // a test may hold a few: 20 s let a loaded machine fail a test whose every wait was in time.
          testTimeout: 60_000,
          exclude: [...configDefaults.exclude, ...PURE, ...SHARED],
          // One DynamoDB Local and one SQS emulator for the run (test/support/globalSetup.ts).
          globalSetup: ['test/support/globalSetup.ts'],
          setupFiles: ['test/support/dropTables.ts'],
        },
      },
    ],
    coverage: {
      provider: 'v8',
      include: ['lambdas/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        'lambdas/core/**': { lines: 95 },
      },
    },
  },
});
