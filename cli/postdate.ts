import { readFileSync } from 'node:fs';
/**
 * `postdate`: the operator CLI (DESIGN §6). This file is only the commander wiring: it parses the
 * arguments, opens the target stack (cli/target.ts), builds each command's dependencies and maps the
 * outcome to an exit code. The commands themselves live in one file per group and take their
 * clients and an output sink as arguments, so tests call them directly.
 *
 * Run it with `npx postdate …` (package.json "bin", via cli/postdate.mjs) or `npm run cli -- …`.
 */
import { pathToFileURL } from 'node:url';
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EventBridgeBus } from '../lambdas/adapters/EventBridgeBus.js';
import { createPostdateClient } from '../lambdas/client/index.js';
import { ConfigError, loadConfig } from '../lambdas/core/config.js';
import { relayBreakerSettings } from '../lambdas/core/relayBreaker.js';
import type { AttachmentStore } from '../lambdas/ports/AttachmentStore.js';
import { DynamoApiStore } from '../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../lambdas/store/dueIndex.js';
import { registerAttachmentsCommands } from './attachmentsCommands.js';
import {
  CliError,
  type CliErrorKind,
  EXIT,
  type ExitCode,
  errorDocument,
  errorDocumentOf,
  fromClientError,
  isCredentialsError,
  type MissingProfile,
  missingProfile,
  UsageError,
} from './cliErrors.js';
import { type CliConfig, type CommandContext, tenantName } from './commandAction.js';
import { assertMessageIds } from './deadLetters/chosenIds.js';
import { MAX_SAMPLE } from './deadLetters/queueSample.js';
import {
  assertDropIds,
  assertRedriveOptions,
  dlqDrop,
  dlqRedrive,
  dlqShow,
  redriveSucceeded,
} from './dlqCommands.js';
import { eventFailureDeps, eventFailuresCleared, eventFailuresRedrive } from './eventFailuresCommand.js';
import { keysCreate, keysList, keysRevoke, knownTenants } from './keysCommands.js';
import {
  type MessagesDeps,
  messagesCancel,
  messagesDiscard,
  messagesList,
  messagesRetry,
  messagesShow,
  type TransitionReport,
} from './messagesCommands.js';
import { messagesEnqueue, readLinesFile } from './messagesEnqueue.js';
import { type ExportOptions, messagesExport, openLineSink } from './messagesExport.js';
import { memoryOutput, type Output, terminalOutput } from './output.js';
import { reconcile, reconcileClean } from './reconcileCommand.js';
import { relayFailureDeps, relayFailuresCleared, relayFailuresRedrive } from './relayFailuresCommand.js';
import { readGates, registerRelaysCommands, relaysDepsOf } from './relaysCommands.js';
import {
  scheduleFailuresCleared,
  scheduleFailuresRedrive,
} from './scheduleFailures/scheduleFailuresRedrive.js';
import { scheduleFailuresShow } from './scheduleFailures/scheduleFailuresShow.js';
import { registerSendingCommands } from './sendingCommands.js';
import { openTargetWithStack } from './stackTarget.js';
import { registerSuppressionsCommands } from './suppressionsCommands.js';
import { apiOf, type Env, queueArnOf, queueUrlOf, type Target, type TargetOptions } from './target.js';
import { registerTemplatesCommands } from './templatesCommands.js';
import { registerWebhooksCommands } from './webhooksCommands.js';

interface GlobalOptions extends TargetOptions {
  readonly json?: boolean;
}

/** What one command action gets: the open target, the output sink and the configuration. */
type Context = CommandContext;

/**
 * Opens the target (`--stack`, `--local` or the environment) and reads the settings from the
 * environment it was opened with. `cloudFormation` builds the `--stack` client (tests can it).
 */
export async function openContext(
  options: TargetOptions,
  out: Output,
  env: Env = process.env,
  cloudFormation?: (region: string | undefined) => CloudFormationClient,
): Promise<Context> {
  const target = await openTargetWithStack(options, env, cloudFormation);
  try {
    for (const warning of target.warnings) out.warn(`postdate: ${warning}`);
    return { target, out, config: readConfig(target.env), now: () => new Date() };
  } catch (error) {
    target.dynamodb.destroy();
    target.sqs.destroy();
    throw error;
  }
}

/**
 * Runs an action with an open target; turns every failure into one line and an exit code. A command
 * that prints JSON Lines (`jsonLines`) gets a sink that prints every document as one line, so its
 * error document ends the stream as one more line.
 */
function action<Args extends unknown[]>(
  run: (context: Context & { readonly interruption: Interruption }, ...args: Args) => Promise<ExitCode>,
  shape: { readonly jsonLines?: boolean } = {},
): (...args: [...Args, Command]) => Promise<void> {
  return async (...args) => {
    const command = args[args.length - 1] as Command;
    const options = command.optsWithGlobals<GlobalOptions>();
    const out = terminalOutput({ json: options.json === true, jsonLines: shape.jsonLines === true });
    let target: Target | undefined;
    const interruption = interruptible(out);
    try {
      const context = await openContext(options, out);
      target = context.target;
      process.exitCode = await run({ ...context, interruption }, ...(args.slice(0, -1) as Args));
    } catch (error) {
      process.exitCode = await report(error, out, target);
    } finally {
      interruption.stop();
      target?.dynamodb.destroy();
      target?.sqs.destroy();
    }
  };
}

/** What a command has done so far, told when a signal stops it. */
interface SoFar {
  /** For the line: `after 240 lines written to audit.jsonl`. */
  readonly said: string;
  /** For the error document (snake_case, as every document's keys): `{ lines_written: 240 }`. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** A running command's hold on SIGINT and SIGTERM. */
interface Interruption {
  /** What the command has done so far, read when the signal comes (an export's lines: decision 0248). */
  tell(soFar: () => SoFar): void;
  /** Removes the handlers once the command is done. */
  stop(): void;
}

/**
 * A long run (an export, `dlq redrive --all`, an enqueue) stopped by SIGINT or SIGTERM ends as a
 * failure would: one line on stderr, with `--json` the error document (the last line of a JSON Lines
 * stream, so every line parses), and exit 130 for either signal (one code for "interrupted"). What
 * it did before stands, and each of these commands is safe to run again (decision 0238); a command
 * that told what it has done so far has it said in both (decision 0248).
 */
function interruptible(out: Output): Interruption {
  let soFar: (() => SoFar) | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const done = soFar?.();
    const detail = `interrupted (${signal})${done === undefined ? '' : ` ${done.said}`}: what it did before stands; run it again to finish`;
    out.warn(`postdate: ${detail}`);
    if (out.json) {
      const document = errorDocument('interrupted', detail, EXIT.interrupted);
      out.data({ error: { ...document.error, ...done?.fields } });
    }
    process.exit(EXIT.interrupted);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    tell(told) {
      soFar = told;
    },
    stop() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

async function report(thrown: unknown, out: Output, target: Target | undefined): Promise<ExitCode> {
  const error = fromClientError(thrown);
  const document =
    error instanceof CliError
      ? errorDocumentOf(error)
      : errorDocument(
          ...described(error, target, isCredentialsError(error) ? await missingProfile() : undefined),
        );
  out.warn(`postdate: ${error instanceof CliError ? error.message : document.error.detail}`);
  for (const { field, message, line } of document.error.errors ?? []) {
    out.warn(`postdate:   ${line === undefined ? '' : `line ${line} `}${field} ${message}`);
  }
  if (out.json) out.data(document);
  if (process.env.POSTDATE_DEBUG && error instanceof Error && error.stack) out.warn(error.stack);
  return document.error.exit_code;
}

/**
 * An error that is no CliError: no usable credentials (a profile no AWS file has, or AWS refusing
 * them), no region, or an unexpected one (`internal`).
 */
function described(
  error: unknown,
  target: Target | undefined,
  unknownProfile: MissingProfile | undefined,
): [CliErrorKind, string, ExitCode, string | undefined] {
  if (isCredentialsError(error)) {
    const name = (error as Error).name;
    if (unknownProfile !== undefined) {
      const { profile, configFile, credentialsFile } = unknownProfile;
      return [
        'credentials',
        `AWS_PROFILE names ${profile}, a profile in neither ${configFile} nor ${credentialsFile}: ` +
          'list the profiles with aws configure list-profiles and set AWS_PROFILE to one',
        EXIT.unreachable,
        name,
      ];
    }
    return [
      'credentials',
      `AWS refused the credentials (${name}): sign in (aws sso login) or set AWS_PROFILE`,
      EXIT.unreachable,
      name,
    ];
  }
  // The SDK's words when neither --region, AWS_REGION nor the profile names a region: the shell's to fix.
  if (error instanceof Error && /^Region is missing/.test(error.message)) {
    return [
      'usage',
      'no AWS region: pass --region, set AWS_REGION, or use an AWS_PROFILE that names one',
      EXIT.usage,
      undefined,
    ];
  }
  const where = target
    ? ` (${target.mode}: DynamoDB ${target.endpoints.dynamodb}, SQS ${target.endpoints.sqs})`
    : '';
  const name = error instanceof Error ? error.name : undefined;
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return ['internal', `${text}${where}`, EXIT.failed, name];
}

/** The service settings the CLI shares with the functions (retention, attempts, grace, delays). */
function readConfig(env: Env): CliConfig {
  try {
    // 'local' only relaxes the AWS-required variables (SMTP_HOST, senders) the CLI never uses.
    return loadConfig(env, 'local');
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

export function messagesDeps(context: Pick<Context, 'target' | 'config' | 'now'>): MessagesDeps {
  const { target, config } = context;
  const tableName = target.refs.tableName;
  return {
    documents: target.documents,
    tableName,
    store: new DynamoApiStore(target.documents, tableName),
    attachments: attachmentStoreOf(target),
    now: context.now,
    tenants: () => knownTenants({ documents: target.documents, tableName }),
    retentionDays: config.retentionDays,
    maxAttempts: config.maxAttempts,
    relays: () => relaysDepsOf(context),
    // The domain the senders wrote is known from the local stack's file, with --stack (its Settings),
    // or from the shell; else a default would name a Message-ID the relay never saw (0282).
    messageIdDomain:
      target.stackMessageIdDomain ??
      (target.mode === 'local' || (target.env.POSTDATE_MESSAGE_ID_DOMAIN ?? '') !== ''
        ? config.messageIdDomain
        : undefined),
  };
}

/**
 * The attachments' bucket when the target knows it (the stack's output AttachmentBucketName with
 * `--stack`, else POSTDATE_ATTACHMENT_BUCKET; locally the local stack's): `messages retry` then
 * refuses a message whose files are gone, as the API does (decision 0130); without it, a message
 * with attachments (cli/messagesCommands.ts `messagesRetry`).
 */
function attachmentStoreOf(target: Target): AttachmentStore | undefined {
  const bucket = target.refs.attachmentBucket;
  return bucket === undefined ? undefined : target.attachments(bucket);
}

const ok = (success: boolean): ExitCode => (success ? EXIT.ok : EXIT.failed);

/** `messages cancel|retry|discard`: 4 when no id names a message, 1 when any other did not move. */
function transitionExit(report: TransitionReport): ExitCode {
  if (report.ok) return EXIT.ok;
  return report.results.every((row) => row.outcome === 'not-found') ? EXIT.notFound : EXIT.failed;
}

/** The shape of `messages export` and `messages enqueue`: one JSON document per line. */
const JSON_LINES = { jsonLines: true } as const;

function integer(name: string, min: number, max?: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || (max !== undefined && Number(value) > max)) {
      throw new InvalidArgumentError(
        max === undefined
          ? `${name} must be a whole number of at least ${min}`
          : `${name} must be a whole number from ${min} to ${max}`,
      );
    }
    return Number(value);
  };
}

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new InvalidArgumentError('must be a positive number');
  return number;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];
/** `--ids a b c` and `--ids a,b,c` both work. */
const splitIds = (values: readonly string[]) =>
  values
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');

/** The version in the package.json beside this CLI (one directory up from cli/). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

export function buildProgram(): Command {
  const program = new Command('postdate')
    .version(packageVersion(), '-V, --version', 'print the version of Postdate this CLI belongs to')
    .description(
      'Operate Postdate: messages, the DLQ, relay, event and schedule failures, reconciliation and API keys. ' +
        'Talks to the local stack (npm start) unless --stack or a resource name (--table, --queue-url, --dlq-url, ' +
        '--relay-failures-url, --event-failures-url, --schedule-dlq-url or POSTDATE_TABLE_NAME) selects AWS with the usual credential chain. ' +
        'Exit codes: 0 done, 1 failed or partly failed, 2 bad usage, 3 stack unreachable or credentials refused, 4 not found, ' +
        '130 interrupted (what was done stands; run it again).',
    )
    .option('--json', 'print one JSON document instead of tables')
    .option('--local', 'force the local stack even when POSTDATE_TABLE_NAME is set')
    .option('--table <name>', 'the outbox table (env POSTDATE_TABLE_NAME)')
    .option('--queue-url <url>', 'the send queue (env POSTDATE_SEND_QUEUE_URL)')
    .option('--dlq-url <url>', "the send queue's dead-letter queue (env POSTDATE_SEND_DLQ_URL)")
    .option('--relay-failures-url <url>', 'the relay failure queue (env POSTDATE_RELAY_FAILURE_QUEUE_URL)')
    .option(
      '--event-failures-url <url>',
      "the event producer's failure queue (env POSTDATE_EVENT_FAILURE_QUEUE_URL; stack output EventFailureQueueUrl)",
    )
    .option(
      '--schedule-dlq-url <url>',
      "the schedules' dead-letter queue (env POSTDATE_SCHEDULE_DLQ_URL; stack output ScheduleDeadLetterQueueUrl)",
    )
    .addOption(
      new Option('--stack <name>', 'read the names from the outputs of a deployed CloudFormation stack'),
    )
    .option('--region <region>', 'AWS region (env AWS_REGION)')
    .option('--dynamodb-endpoint <url>', 'DynamoDB endpoint (env AWS_ENDPOINT_URL_DYNAMODB)')
    .option('--sqs-endpoint <url>', 'SQS endpoint (env AWS_ENDPOINT_URL_SQS)')
    .option('--scheduler-endpoint <url>', 'EventBridge Scheduler endpoint (env AWS_ENDPOINT_URL_SCHEDULER)')
    .showHelpAfterError()
    .exitOverride();

  /** `--tenant` of the commands that read every tenant unless told one: listing, export, reconcile. */
  const everyTenantOption = [
    '--tenant <tenant>',
    'one tenant (default: every tenant that has an API key)',
    tenantName,
  ] as const;

  // ------------------------------------------------------------------------------------------ messages
  const messages = program
    .command('messages')
    .description('list, show, export, enqueue, cancel, retry and discard messages');
  messages
    .command('list')
    .description('list messages, newest first (through the by_status / by_tenant indexes)')
    .option(
      '--status <status>',
      'scheduled|sending|retrying|sent|failed|dead|cancelled|superseded|expired|unknown|suppressed',
    )
    .option('--since <time>', 'created at or after: ISO time, or 30m / 6h / 2d ago')
    .option('--tag <key=value>', 'only messages with this tag (repeatable)', collect)
    .option(...everyTenantOption)
    .option('--limit <n>', 'at most this many', integer('--limit', 1), 50)
    .action(
      action(
        async (
          context,
          options: { status?: string; since?: string; tag?: string[]; tenant?: string; limit: number },
        ) => {
          await messagesList(messagesDeps(context), { ...options, tags: options.tag ?? [] }, context.out);
          return EXIT.ok;
        },
      ),
    );
  messages
    .command('export')
    .description(
      'messages created in a time range, as JSON Lines: state, attempts, replies (bodies: --with-bodies)',
    )
    .requiredOption('--since <time>', 'created at or after: ISO time, or 30m / 6h / 2d ago')
    .option('--until <time>', 'created before: ISO time, or 30m / 6h / 2d ago (default: now)')
    .option('--status <statuses>', 'only these statuses, comma-separated')
    .option(...everyTenantOption)
    .option('--with-bodies', "include each message's body (recipients and content: personal data)")
    .option('--out <file>', 'write the lines to this file instead of stdout')
    .action(
      action(async (context, options: ExportOptions & { out?: string }) => {
        const lines = openLineSink(options.out);
        context.interruption.tell(() => {
          const written = lines.written();
          return {
            said: `after ${written} line${written === 1 ? '' : 's'} written to ${options.out ?? 'stdout'}`,
            fields: { lines_written: written },
          };
        });
        try {
          await messagesExport(messagesDeps(context), options, lines.sink, context.out);
        } finally {
          await lines.close();
        }
        return EXIT.ok;
      }, JSON_LINES),
    );
  messages
    .command('enqueue')
    .description(
      'enqueue the messages of a JSON Lines file (one body with its idempotency_key per line) through POST /v1/messages/batch, 100 at a time; safe to run again',
    )
    .requiredOption('--file <path>', 'the JSON Lines file (- for stdin)')
    .option(
      '--mode <mode>',
      'permissive (default) or strict (nothing is sent if a line is invalid: the API judges every batch first)',
    )
    .option(
      '--api-url <url>',
      "the API's base URL (env POSTDATE_API_URL; --stack's ApiUrl; the local stack's)",
    )
    .option('--api-key <key>', 'an API key of the tenant (env POSTDATE_API_KEY)')
    .action(
      action(async (context, options: { file: string; mode?: string; apiUrl?: string; apiKey?: string }) => {
        if (options.mode !== undefined && options.mode !== 'permissive' && options.mode !== 'strict')
          throw new UsageError('--mode is permissive or strict');
        const client = createPostdateClient(apiOf(context.target, options));
        const text = readLinesFile(options.file);
        const report = await messagesEnqueue(
          client,
          { text, ...(options.mode === undefined ? {} : { mode: options.mode }) },
          context.out,
        );
        return ok(report.ok);
      }, JSON_LINES),
    );
  messages
    .command('show')
    .description('status, history and last error (in words) of one message')
    .argument('<id>')
    .action(
      action(async (context, id: string) => {
        await messagesShow(messagesDeps(context), id, context.out);
        return EXIT.ok;
      }),
    );
  messages
    .command('cancel')
    .description('cancel scheduled or retrying messages (as DELETE /v1/messages/{id})')
    .argument('<id...>')
    .action(
      action(async (context, ids: string[]) =>
        transitionExit(await messagesCancel(messagesDeps(context), ids, context.out)),
      ),
    );
  messages
    .command('retry')
    .description('retry failed, dead or unknown messages now (rev + 1, as POST /v1/messages/{id}/retry)')
    .argument('<id...>')
    .action(
      action(async (context, ids: string[]) =>
        transitionExit(await messagesRetry(messagesDeps(context), ids, context.out)),
      ),
    );

  messages
    .command('discard')
    .description(
      'leave failed, dead or unknown messages as they are: they stop waiting for an operator (their alarm clears) and expire with the retention',
    )
    .argument('<id...>')
    .action(
      action(async (context, ids: string[]) =>
        transitionExit(await messagesDiscard(messagesDeps(context), ids, context.out)),
      ),
    );

  // ----------------------------------------------------------------------------------------------- dlq
  const dlq = program.command('dlq').description("the send queue's dead-letter queue");
  dlq
    .command('show')
    .description(
      'the counts of the DLQ and its dead messages from the table; --peek n receives copies (SQS has no true peek)',
    )
    .option(
      '--peek <n>',
      'receive up to n copies to show them (0–100; each receive counts)',
      integer('--peek', 0, MAX_SAMPLE),
      0,
    )
    .addOption(new Option('--sample <n>').argParser(integer('--sample', 0, MAX_SAMPLE)).hideHelp())
    .action(
      action(async (context, options: { peek: number; sample?: number }) => {
        const { target, out, now } = context;
        const dlqUrl = await queueUrlOf(target.sqs, target.refs.deadLetterQueue, 'dead-letter queue');
        await dlqShow(
          {
            sqs: target.sqs,
            dlqUrl,
            now,
            table: { documents: target.documents, tableName: target.refs.tableName },
            deadMessages: () =>
              messagesList(messagesDeps(context), { status: 'dead', limit: 20 }, memoryOutput()),
          },
          { sample: options.sample ?? options.peek },
          out,
        );
        return EXIT.ok;
      }),
    );
  dlq
    .command('redrive')
    .description('move copies from the DLQ back to the send queue: chosen ids, or all (StartMessageMoveTask)')
    .option('--ids <id...>', 'message ids (the id in the {v,id,rev} body), space- or comma-separated')
    .option('--all', 'every copy, with SQS StartMessageMoveTask')
    .option('--rate <n>', 'at most this many messages per second', positiveNumber)
    .option('--dry-run', 'say what would move, move nothing')
    .option('--no-wait', '--all: return once the move task has started')
    .action(
      action(
        async (
          { target, out, now },
          options: { ids?: string[]; all?: boolean; rate?: number; dryRun?: boolean; wait: boolean },
        ) => {
          const choice = {
            ids: splitIds(options.ids ?? []),
            all: options.all === true,
            dryRun: options.dryRun === true,
            wait: options.wait,
            ...(options.rate !== undefined ? { rate: options.rate } : {}),
          };
          // Bad flags are bad usage (exit 2) whether or not the stack answers.
          assertRedriveOptions(choice);
          const dlqUrl = await queueUrlOf(target.sqs, target.refs.deadLetterQueue, 'dead-letter queue');
          const sendQueueUrl = await queueUrlOf(target.sqs, target.refs.sendQueue, 'send queue');
          const report = await dlqRedrive(
            {
              sqs: target.sqs,
              dlqUrl,
              sendQueueUrl,
              now,
              table: { documents: target.documents, tableName: target.refs.tableName },
            },
            choice,
            out,
          );
          return ok(redriveSucceeded(report));
        },
      ),
    );

  dlq
    .command('drop')
    .description(
      'give up on chosen dead messages: each stops waiting and expires with the retention (as messages discard), then its copy leaves the DLQ unsent; a stale copy is only deleted',
    )
    .requiredOption('--ids <id...>', 'message ids (the id in the {v,id,rev} body), space- or comma-separated')
    .option('--dry-run', 'say what would be dropped, drop nothing')
    .action(
      action(async ({ target, out, now, config }, options: { ids: string[]; dryRun?: boolean }) => {
        const ids = splitIds(options.ids);
        assertDropIds(ids);
        const dlqUrl = await queueUrlOf(target.sqs, target.refs.deadLetterQueue, 'dead-letter queue');
        const tableName = target.refs.tableName;
        const report = await dlqDrop(
          {
            sqs: target.sqs,
            dlqUrl,
            now,
            table: { documents: target.documents, tableName },
            store: new DynamoApiStore(target.documents, tableName),
            retentionDays: config.retentionDays,
          },
          { ids, dryRun: options.dryRun === true },
          out,
        );
        return ok(report.ok);
      }),
    );

  // ------------------------------------------------------------------------------------ relay-failures
  program
    .command('relay-failures')
    .description('the stream batches the relay gave up on')
    .command('redrive')
    .description('replay them from the stream, or sweep when the stream no longer holds them')
    .option('--max <n>', 'stop after this many failure messages', integer('--max', 1), 1000)
    .action(
      action(async (context, options: { max: number }) => {
        const { target, out, now, config } = context;
        const { refs, sqs } = target;
        // The sweep's gate holds what the senders hold: every relay of the stack, checked as `relays` checks them.
        const relays = relaysDepsOf(context);
        await readGates(relays);
        const sendQueueUrl = await queueUrlOf(sqs, refs.sendQueue, 'send queue');
        const dead = refs.scheduleDeadLetter;
        if (refs.scheduleGroup === undefined || refs.schedulerRoleArn === undefined || dead === undefined) {
          throw new UsageError(
            'relay-failures redrive needs POSTDATE_SCHEDULE_GROUP, POSTDATE_SCHEDULER_ROLE_ARN and POSTDATE_SCHEDULE_DLQ_ARN (or --schedule-dlq-url)',
          );
        }
        const deps = relayFailureDeps({
          sqs,
          documents: target.documents,
          streams: target.streams(),
          scheduler: target.scheduler(),
          tableName: refs.tableName,
          relayFailureQueueUrl: await queueUrlOf(sqs, refs.relayFailureQueue, 'relay failure queue'),
          sendQueueUrl,
          sendQueueArn: await queueArnOf(sqs, sendQueueUrl),
          scheduleGroup: refs.scheduleGroup,
          schedulerRoleArn: refs.schedulerRoleArn,
          scheduleDeadLetterArn:
            'arn' in dead
              ? dead.arn
              : await queueArnOf(sqs, await queueUrlOf(sqs, dead, 'schedule dead-letter queue')),
          directDelayMaxSeconds: config.directDelayMaxSeconds,
          scheduleLeadSeconds: config.scheduleLeadSeconds,
          relayNames: relays.names,
          breaker: relayBreakerSettings(config),
          now,
        });
        return ok(relayFailuresCleared(await relayFailuresRedrive(deps, options, out)));
      }),
    );

  // ------------------------------------------------------------------------------------ event-failures
  program
    .command('event-failures')
    .description('the stream batches the event producer gave up on (their events reached no webhook)')
    .command('redrive')
    .description('replay them from the stream while it holds them (24 h), once per delivery id')
    .option('--max <n>', 'stop after this many failure messages', integer('--max', 1), 1000)
    .option(
      '--discard-gone',
      'delete the failure messages whose batch the stream no longer holds (listed first)',
    )
    .action(
      action(async ({ target, out, now, config }, options: { max: number; discardGone?: boolean }) => {
        const { refs, sqs } = target;
        const eventFailureQueueUrl = await queueUrlOf(sqs, refs.eventFailureQueue, 'event failure queue');
        // A replay without the bus or the bucket would be a partial one: events on no bus, attachments
        // untagged. The local stack has no bus (its producer puts on none): only the bucket there.
        const busMissing = refs.eventBusName === undefined && target.mode === 'aws';
        if (busMissing || refs.attachmentBucket === undefined) {
          throw new UsageError(
            'event-failures redrive needs POSTDATE_EVENT_BUS_NAME and POSTDATE_ATTACHMENT_BUCKET (or --stack NAME)',
          );
        }
        const deps = eventFailureDeps({
          sqs,
          documents: target.documents,
          streams: target.streams(),
          tableName: refs.tableName,
          eventFailureQueueUrl,
          webhookQueueUrl: await queueUrlOf(sqs, refs.webhookQueue, 'webhook queue'),
          bus:
            refs.eventBusName === undefined
              ? undefined
              : new EventBridgeBus(target.eventBridge(), refs.eventBusName),
          busEvents: config.busEvents,
          attachments:
            refs.attachmentBucket === undefined ? undefined : target.attachments(refs.attachmentBucket),
          retryHours: config.webhookRetryHours,
          retentionDays: config.retentionDays,
          now,
        });
        return ok(eventFailuresCleared(await eventFailuresRedrive(deps, options, out)));
      }),
    );

  // --------------------------------------------------------------------------------- schedule-failures
  const scheduleFailures = program
    .command('schedule-failures')
    .description('the schedules EventBridge Scheduler could not deliver to the send queue (its DLQ)');
  const scheduleDlqUrl = (target: Target) =>
    queueUrlOf(target.sqs, target.refs.scheduleDeadLetterQueue, 'schedule dead-letter queue');
  scheduleFailures
    .command('show')
    .description('count, oldest age and a sample: message id, rev, error code, schedule name, age')
    .option('--sample <n>', 'how many to peek at (0–100)', integer('--sample', 0, MAX_SAMPLE), 10)
    .action(
      action(async ({ target, out, now }, options: { sample: number }) => {
        await scheduleFailuresShow(
          { sqs: target.sqs, scheduleDlqUrl: await scheduleDlqUrl(target), now },
          { sample: options.sample },
          out,
        );
        return EXIT.ok;
      }),
    );
  scheduleFailures
    .command('redrive')
    .description(
      "put each live message's copy (its current rev) on the send queue; drop those already finished",
    )
    .option('--ids <id...>', 'only these message ids, space- or comma-separated (default: all)')
    .option('--dry-run', 'say what would be redriven and dropped, change nothing')
    .action(
      action(async ({ target, out, now }, options: { ids?: string[]; dryRun?: boolean }) => {
        const ids = splitIds(options.ids ?? []);
        assertMessageIds(ids);
        const report = await scheduleFailuresRedrive(
          {
            sqs: target.sqs,
            scheduleDlqUrl: await scheduleDlqUrl(target),
            sendQueueUrl: await queueUrlOf(target.sqs, target.refs.sendQueue, 'send queue'),
            table: { documents: target.documents, tableName: target.refs.tableName },
            now,
          },
          { ids, dryRun: options.dryRun === true },
          out,
        );
        return ok(scheduleFailuresCleared(report));
      }),
    );

  // ---------------------------------------------------------------------------------------- reconcile
  program
    .command('reconcile')
    .description('accepted vs dispatched vs terminal, by status and tag; index check; stuck messages')
    .option('--since <time>', 'created at or after: ISO time, or 30m / 6h / 2d ago', '24h')
    .option(...everyTenantOption)
    .option(
      '--grace <seconds>',
      'overdue beyond this is stuck (default POSTDATE_SWEEP_GRACE_SECONDS)',
      integer('--grace', 0),
    )
    .action(
      action(async (context, options: { since: string; tenant?: string; grace?: number }) => {
        const { target, config } = context;
        const tableName = target.refs.tableName;
        const result = await reconcile(
          {
            documents: target.documents,
            tableName,
            dueIndex: new DynamoDueIndex(target.documents, tableName),
            now: context.now,
            tenants: () => knownTenants({ documents: target.documents, tableName }),
            graceSeconds: options.grace ?? config.sweepGraceSeconds,
            retentionDays: config.retentionDays,
            relays: relaysDepsOf(context),
          },
          { since: options.since, ...(options.tenant !== undefined ? { tenant: options.tenant } : {}) },
          context.out,
        );
        return ok(reconcileClean(result));
      }),
    );

  registerSendingCommands(program, action);
  registerRelaysCommands(program, action);

  // --------------------------------------------------------------------------------------------- keys
  const keys = program.command('keys').description('per-tenant API keys');
  const keysDeps = ({ target, now }: Context) => ({
    documents: target.documents,
    tableName: target.refs.tableName,
    now,
  });
  keys
    .command('create')
    .description('create a key for a tenant; the secret is shown once')
    .requiredOption('--tenant <tenant>', 'the tenant the key belongs to')
    .option('--test', "a test key (pd_test_…): the tenant's test side, never sent to the relay")
    .action(
      action(async (context, options: { tenant: string; test?: boolean }) => {
        await keysCreate(keysDeps(context), options, context.out);
        return EXIT.ok;
      }),
    );
  keys
    .command('list')
    .description('every key, without secrets')
    .option('--tenant <tenant>', 'one tenant', tenantName)
    .action(
      action(async (context, options: { tenant?: string }) => {
        await keysList(keysDeps(context), options, context.out);
        return EXIT.ok;
      }),
    );
  keys
    .command('revoke')
    .description('revoke a key by its id')
    .argument('<key-id>')
    .action(
      action(async (context, keyId: string) => {
        await keysRevoke(keysDeps(context), keyId, context.out);
        return EXIT.ok;
      }),
    );
  registerTemplatesCommands(program, action);

  registerSuppressionsCommands(program, action);
  registerWebhooksCommands(program, action);
  registerAttachmentsCommands(program, action);
  return program;
}

/** Parses and runs; resolves with the exit code (commander's own usage errors are exit code 2). */
export async function main(argv: readonly string[]): Promise<number> {
  // The SDK's "Node 22 soon" notice is noise on an operator's terminal; the versions are pinned.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help asked for (--help, `help`) exits 0; help shown because of an error, or a usage error, 2.
      if (error.exitCode === 0) return EXIT.ok;
      if (argv.includes('--json')) {
        const detail = error.message.replace(/^error: /, '');
        // One line: also the whole stream of a command that prints JSON Lines.
        process.stdout.write(`${JSON.stringify(errorDocument('usage', detail, EXIT.usage))}\n`);
      }
      return EXIT.usage;
    }
    throw error;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
}

// Run when executed directly (`tsx cli/postdate.ts`); the bin shim (cli/postdate.mjs) and tests call main().
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess(process.argv.slice(2));
}

/** Runs main and sets the process's exit code; a failure that escaped every handler is one line too. */
export function runAsProcess(argv: readonly string[]): void {
  exitQuietlyWhenTheReaderGoes();
  main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`postdate: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = EXIT.failed;
    },
  );
}

/**
 * `postdate … | head`: once the reader has what it wants it closes the pipe, and the next write
 * fails with EPIPE. That is the reader's choice, not a failure: stop at once, without a stack.
 */
function exitQuietlyWhenTheReaderGoes(): void {
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok);
  };
  process.stdout.on('error', onError);
  process.stderr.on('error', onError);
}
