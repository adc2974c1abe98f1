import type { Config } from '../lambdas/core/config.js';
import type { QueueArns, QueueUrls } from './createResources.js';
import type { Readiness } from './http/httpFrontEnd.js';
import type { LocalPart, LocalPorts } from './localEnv.js';
import type { FunctionName, FunctionTimeoutKill, SandboxedFunctionName } from './localFunctions.js';
import type { StreamDiscard } from './runners/streamRunner.js';
import type { FireEvent, SchedulerFaults } from './scheduler/startSchedulerEmulator.js';
import type { SmtpSink } from './smtp/smtpSink.js';

/** What `startLocalStack()` takes and what it gives back (local/localStack.ts). */

/** A stream batch given up on, and whose runner gave up on it. */
export type LocalStreamDiscard = StreamDiscard & { readonly source: 'relay' | 'events' };

export interface LocalStackOptions {
  /** From `loadConfig(env, 'local')`; the handlers see exactly these values. */
  readonly config: Config;
  /** Overrides `config.dataDir`: DynamoDB under `dynamodb/`, schedules under `scheduler/`, mail under `mail/`. */
  readonly dataDir?: string;
  /** Ports of the parts (defaults in localEnv.ts, the API's from `config.port`); 0 picks a free port. */
  readonly ports?: Partial<Record<LocalPart, number>>;
  /** Ports something beside the stack has claimed and will listen on (MailDev's): a 0 never becomes one. */
  readonly takenPorts?: readonly number[];
  /** Options of the SMTP sink; ignored when `config.smtp.host` points at a real relay. */
  readonly smtp?: { readonly maxBytes?: number };
  /**
   * Two relays, so failover can be watched (DESIGN §15, docs/local-stack.md): a second built-in SMTP
   * sink (`backup`, with its own viewer) after the first (`primary`: the sink, MailDev or the relay
   * of `config.smtp`), listed in POSTDATE_RELAYS. Stop the first and the mail leaves through the
   * second. Not with POSTDATE_RELAYS set. `port`/`viewerPort` 0 or absent: free ports.
   */
  readonly backupRelay?: { readonly port?: number; readonly viewerPort?: number };
  /**
   * A mail viewer run beside the stack that `config.smtp` points at (npm start's MailDev): `GET
   * /health` probes its SMTP greeting and its page as it would the built-in sink's.
   */
  readonly externalViewer?: { readonly smtpPort: number; readonly url: string };
  /** JVM tuning of DynamoDB Local: `fast-start` (default) or `peak` for long benchmark runs. */
  readonly dynamodbJvm?: 'fast-start' | 'peak';
  /** How often the sweeper runs after the one at start (which ready does not wait for). */
  readonly sweepIntervalMs?: number;
  /**
   * The front end's authorizer cache, as API Gateway's `resultsCacheTtl` (0: the authorizer at every
   * request, as the cost benchmark bills a lone message). @default AUTHORIZER_CACHE_TTL_MS (30 s)
   */
  readonly authorizerCacheTtlMs?: number;
  /**
   * The webhook delivery's retry backoff base in place of WEBHOOK_BACKOFF.baseMs (5 s): a test that
   * waits for retries passes a short one (decision 0273). @default WEBHOOK_BACKOFF.baseMs
   */
  readonly webhookRetryBaseMs?: number;
  /**
   * Fault hooks of the Scheduler emulator (chaos runs): fire a schedule twice, or late, or fail a
   * delivery attempt. See `SchedulerFaults`.
   */
  readonly schedulerFaults?: SchedulerFaults;
  /** Called after every invocation of a schedule (chaos runs count the double and late firings). */
  readonly onScheduleFire?: (event: FireEvent) => void;
  /**
   * `external`: this stack runs no event source for the sender; another process does, against the
   * same emulators, with `functionEnvironment` and `startSenderEventSource` (so that a chaos run can
   * SIGKILL the sender alone). @default 'in-process'
   */
  readonly sender?: 'in-process' | 'external';
  /**
   * Function timeouts (ms) in place of the deployed ones (sender: `config.senderTimeoutSeconds`;
   * relay and sweeper: lib/eventSourceLayout.ts, lib/postdateProps.ts), e.g. short ones in tests.
   */
  readonly functionTimeoutsMs?: Readonly<Partial<Record<SandboxedFunctionName, number>>>;
  /**
   * Called once per invocation killed at its function timeout (times in epoch ms; `records` is the
   * size of the killed batch, 0 for the sweeper). The stack also logs each kill as one line.
   */
  readonly onFunctionTimeout?: (kill: FunctionTimeoutKill) => void;
  /**
   * Called once per stream batch the relay's or the event producer's runner gave up on after its
   * retries (the stack also logs each; the relay's go to the relay failure queue, the producer's
   * to the event failure queue, as in AWS).
   */
  readonly onStreamDiscard?: (discard: LocalStreamDiscard) => void;
  /**
   * Modules (absolute paths) every relay, sender and sweeper sandbox imports before its handler,
   * as a layer would (a chaos run's fault-injecting SDK middleware). The api and authorizer run in
   * this process and need none.
   */
  readonly functionPreload?: readonly string[];
  /** No progress lines on stdout, and the functions log only warnings (tests). */
  readonly quiet?: boolean;
  /**
   * Called as each part comes up (`npm start` prints a line for each): the part's name and where it
   * listens, or, for `functions`, which are warm and in how many sandboxes.
   */
  readonly onPartReady?: (part: string, detail: string) => void;
  /**
   * Called once if a part that is a process of its own (DynamoDB Local's java, the one the stack
   * spawns) ends on its own after the start: the stack has then stopped every part (DESIGN §7).
   * Without it the stack logs one line. A part that ends during the start fails the start instead.
   */
  readonly onPartExit?: (error: Error) => void;
  readonly log?: (line: string) => void;
}

export interface LocalStack {
  readonly apiUrl: string;
  readonly apiKey: string;
  /** Undefined when SMTP_HOST points at a real relay (no sink, no viewer). */
  readonly mailViewerUrl: string | undefined;
  readonly smtpSink: SmtpSink | undefined;
  /** With `backupRelay`: the second relay's sink (`backup`) and its viewer. */
  readonly backupSink: SmtpSink | undefined;
  readonly backupMailViewerUrl: string | undefined;
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly schedulerEndpoint: string;
  /** The S3 emulator (attachments, DESIGN §13) and its bucket. */
  readonly s3Endpoint: string;
  readonly attachmentBucket: string;
  readonly tableName: string;
  /** The relays the functions have, in order (POSTDATE_RELAYS, or the one relay `default`). */
  readonly relayNames: readonly string[];
  /** POSTDATE_MESSAGE_ID_DOMAIN as the senders read it: the Message-IDs they write end with it. */
  readonly messageIdDomain: string;
  readonly streamArn: string;
  readonly queueUrls: QueueUrls;
  /** The event producer's on-failure queue (`postdate event-failures redrive`, runbook procedure 4b). */
  readonly eventFailureQueueUrl: string;
  readonly queueArns: QueueArns;
  readonly ports: LocalPorts;
  /** Each function: loaded, or why not. */
  readonly functions: Readonly<Record<FunctionName, 'loaded' | 'not built'>>;
  /** Each sandboxed function's timeout (ms), as enforced. */
  readonly functionTimeoutsMs: Readonly<Record<SandboxedFunctionName, number>>;
  /**
   * The environment the handlers are wired from at cold start (configuration, endpoints, resource
   * names, SMTP): what each function sandbox and the in-process api and authorizer are given, and
   * what a process that runs a function outside the stack must be given.
   */
  readonly functionEnvironment: Readonly<Record<string, string>>;
  readiness(): Promise<Readiness>;
  /**
   * Per sandboxed function, the invocations so far that had to start their sandbox first (a cold
   * start on a message's path); per in-process function behind an event source (the event producer
   * `events`, the delivery function `webhooks`), the real batches that were its first invocation.
   * 0 after start: the stack says ready with every one warm.
   */
  coldInvocations(): Readonly<Record<SandboxedFunctionName | 'events' | 'webhooks', number>>;
  /** Resolves once the relay's stream and the send queue have nothing visible left to hand over. */
  idle(): Promise<void>;
  /**
   * Resolves once a whole sweeper run that started after this call has ended (what its timer does
   * every `sweepIntervalMs`): now, or after the run under way (the start's own is not awaited before
   * ready), so it reads everything written before the call.
   */
  sweep(): Promise<void>;
  stop(): Promise<void>;
}
