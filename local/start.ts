/**
 * `npm start`: the whole Postdate pipeline on loopback (DESIGN §7, docs/local-stack.md).
 * Every start-up failure a person can fix (a bad variable, no java, a busy port) is one line and
 * exit code 1; Ctrl-C or SIGTERM stops every part, the java child included.
 *
 * Unless mail leaves through relays elsewhere (`startsLocalSink`), it goes to MailDev
 * (local/smtp/maildevViewer.ts), reached as any relay is, through `SMTP_HOST`/`SMTP_PORT`; the
 * functions' logs are shown as `POSTDATE_LOG` says (local/startLog.ts).
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Config, ConfigError, loadConfig } from '../lambdas/core/config.js';
import { DynamoDbLocalError } from './dynamodbLocal.js';
import {
  checkLocalApiKey,
  checkLocalBackupRelay,
  checkLocalDataDir,
  claimPorts,
  DrawnPortsTakenError,
  type LocalPorts,
  loadLocalPorts,
  PortInUseError,
  smtpBesideRelaysWarning,
  startAgainWhenTaken,
  startingAgain,
  startsLocalSink,
} from './localEnv.js';
import type { LocalStack } from './localStack.js';
import { type MaildevViewer, startMaildevViewer } from './smtp/maildevViewer.js';
import { SIMULATED_MAIL_PRELOAD } from './smtp/simulatedMailViewer.js';
import { removeStackFile, STACK_FILE, writeStackFile } from './stackFile.js';
import { installLogFilter, type LocalLogMode, logModeOf } from './startLog.js';
import { stopRequest } from './stopSignals.js';

const HOST = '127.0.0.1';

function fail(line: string): never {
  process.stderr.write(`postdate: ${line}\n`);
  process.exit(1);
}

/**
 * The variables and the arguments, every one checked before anything starts: a bad one ends the
 * start with one line (exit 1).
 */
function readConfiguration(env: NodeJS.ProcessEnv = process.env): {
  config: Config;
  ports: LocalPorts;
  logMode: LocalLogMode;
  backupRelay: BackupRelay | undefined;
} {
  const argv = process.argv.slice(2);
  try {
    const config = loadConfig(env, 'local');
    checkLocalApiKey(config);
    checkLocalDataDir(config);
    const ports = loadLocalPorts(env, config);
    const logMode = logModeOf(
      argv.filter((arg) => !isBackupRelayFlag(arg)),
      env,
      ['--backup-relay[=PORT]'],
    );
    const backupRelay = backupRelayOf(argv);
    checkLocalBackupRelay(config, backupRelay);
    return { config, ports, logMode, backupRelay };
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
}

/** Whether the `maildev` package can be loaded (it is a devDependency; a bare install may lack it). */
function maildevInstalled(): boolean {
  try {
    import.meta.resolve('maildev');
    return true;
  } catch {
    return false;
  }
}

/**
 * MailDev's ports: the sink's and the viewer's, a 0 made concrete now, so that the functions'
 * SMTP_PORT is known before MailDev listens and both start side by side. None when mail leaves
 * through relays elsewhere (`startsLocalSink`: then there is no viewer) or MailDev is missing (then
 * the built-in sink stands in).
 */
async function viewerPortsOf(config: Config, ports: LocalPorts) {
  if (!startsLocalSink(config, ports.smtp)) return undefined;
  if (!maildevInstalled()) {
    process.stderr.write(
      'postdate: the maildev package is not installed (npm ci installs it); using the built-in SMTP sink and viewer\n',
    );
    return undefined;
  }
  // Every fixed port is checked here (the stack's own ports too): one taken stops the start, with the
  // one line naming each taken port's variable (another stack on the defaults holds them all).
  const claimed = await claimPorts(ports, HOST).catch((error: unknown) =>
    fail(error instanceof PortInUseError ? error.message : String(error)),
  );
  return { smtp: claimed.smtp, web: claimed.mailViewer };
}

function banner(
  stack: LocalStack,
  viewer: MaildevViewer | undefined,
  seconds: number,
  config: Pick<Config, 'dataDir' | 'relaysJson'>,
): string {
  const { dataDir } = config;
  // Without a viewer, mail leaves through a relay: POSTDATE_RELAYS's when set (SMTP_* is then ignored).
  const relay =
    config.relaysJson === undefined
      ? `SMTP_HOST=${process.env.SMTP_HOST ?? ''} is used as the relay`
      : 'mail leaves through the relays of POSTDATE_RELAYS';
  const notBuilt = Object.entries(stack.functions)
    .filter(([, state]) => state === 'not built')
    .map(([name]) => name);
  const curl = [
    `curl -sS -X POST ${stack.apiUrl}/v1/messages \\`,
    `    -H 'Authorization: Bearer ${stack.apiKey}' \\`,
    `    -H 'Content-Type: application/json' \\`,
    `    -H "Idempotency-Key: hello-$(date +%s)" \\`,
    `    -d '{"to":["ada@example.com"],"subject":"Hello from Postdate","text":"It works."}'`,
  ];
  return [
    '',
    `Postdate local stack ready in ${seconds.toFixed(1)} s`,
    `  API          ${stack.apiUrl}   (readiness: ${stack.apiUrl}/health)`,
    `  API key      ${stack.apiKey}`,
    `  Mail viewer  ${viewer ? `${viewer.url}/   (MailDev: rendered HTML, text, headers, search, attachments)` : (stack.mailViewerUrl ?? `none: ${relay}`)}`,
    `  Data         ${dataDir ? `kept in ${dataDir}` : 'in memory (set POSTDATE_DATA_DIR to keep it)'}`,
    `  DynamoDB     ${stack.dynamodbEndpoint}`,
    `  SQS          ${stack.sqsEndpoint}`,
    `  Scheduler    ${stack.schedulerEndpoint}`,
    `  S3           ${stack.s3Endpoint}   (attachments, bucket ${stack.attachmentBucket})`,
    ...(viewer
      ? [
          `  SMTP sink    ${viewer.smtpHost}:${viewer.smtpPort}   (MailDev's; ${config.relaysJson === undefined ? 'SMTP_HOST/SMTP_PORT of the functions' : 'a relay of POSTDATE_RELAYS'})`,
        ]
      : []),
    ...(stack.smtpSink ? [`  SMTP sink    ${stack.smtpSink.host}:${stack.smtpSink.port}`] : []),
    ...(stack.backupSink
      ? [
          `  Relays       primary (the sink above) → backup ${stack.backupSink.host}:${stack.backupSink.port}, viewer ${stack.backupMailViewerUrl ?? ''}`,
          '               (npx postdate relays status)',
        ]
      : []),
    `  (written to ${STACK_FILE}, where the CLI finds them)`,
    ...(notBuilt.length > 0 ? [`  Not built    ${notBuilt.join(', ')} (the stack runs without them)`] : []),
    '',
    'Enqueue a message:',
    `  ${curl.join('\n')}`,
    '',
    'Ctrl-C stops everything.',
    '',
  ].join('\n');
}

/** The backup relay `npm start` was asked for: on a free port, or on the one given. */
interface BackupRelay {
  readonly port?: number;
}

/**
 * `npm start -- --backup-relay` (docs/local-stack.md, "Two relays"): a second SMTP sink as the relay
 * `backup`, on a free port; `--backup-relay=PORT`, on that port.
 */
function backupRelayOf(argv: readonly string[]): BackupRelay | undefined {
  const flag = argv.find(isBackupRelayFlag);
  if (flag === undefined) return undefined;
  if (flag === '--backup-relay') return {};
  const raw = flag.slice('--backup-relay='.length);
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    fail(`--backup-relay takes a port from 1 to 65535, got "${raw}"`);
  }
  return { port };
}

function isBackupRelayFlag(arg: string): boolean {
  return arg === '--backup-relay' || arg.startsWith('--backup-relay=');
}

interface Started {
  config: Config;
  stack: LocalStack;
  viewer: MaildevViewer | undefined;
}

/**
 * MailDev (unless mail leaves through relays elsewhere) and the stack, side by side. A failure of either stops
 * the other and is thrown, so that the start can be tried again or end with one line.
 */
async function startParts(
  first: ReturnType<typeof readConfiguration>,
  running: Running,
  partReady: (part: string, detail: string) => void,
): Promise<Started> {
  const viewerPorts = await viewerPortsOf(first.config, first.ports);
  const viewerStarting = viewerPorts
    ? startMaildevViewer({
        smtpPort: viewerPorts.smtp,
        webPort: viewerPorts.web,
        host: HOST,
        ...(first.config.dataDir ? { mailDirectory: join(first.config.dataDir, 'maildev') } : {}),
      }).then((viewer) => {
        partReady('MailDev', `${viewer.url}/ (SMTP ${viewer.smtpHost}:${viewer.smtpPort})`);
        return viewer;
      })
    : Promise.resolve(undefined);
  // Awaited after the stack started; marked handled now so an early failure is not unhandled meanwhile.
  viewerStarting.catch(() => undefined);
  // With MailDev, the functions send to it as to any relay; the sink's and viewer's ports are its.
  const { config, ports } = viewerPorts
    ? {
        ...readConfiguration({ ...process.env, SMTP_HOST: HOST, SMTP_PORT: String(viewerPorts.smtp) }),
        ports: { ...first.ports, smtp: 0, mailViewer: 0 },
      }
    : first;
  let stack: LocalStack;
  try {
    // Loaded after the configuration is known to be good, so a bad variable fails at once.
    // Once: a drawn port taken meanwhile, the stack's or MailDev's, starts both again in `main`.
    const { startLocalStackOnce } = await import('./localStack.js');
    stack = await startLocalStackOnce({
      config,
      ports,
      onPartReady: partReady,
      // DynamoDB Local's java ended on its own: the stack has stopped its parts; MailDev and this process follow.
      onPartExit: (error) => running.stop(error.message, 1),
      ...(first.backupRelay ? { backupRelay: first.backupRelay } : {}),
      ...(viewerPorts
        ? {
            externalViewer: { smtpPort: viewerPorts.smtp, url: `http://${HOST}:${viewerPorts.web}` },
            // MailDev may not listen on them yet: no part of the stack may be handed one.
            takenPorts: [viewerPorts.smtp, viewerPorts.web],
            // Test messages shown in MailDev, never sent to it (local/smtp/simulatedMailViewer.ts).
            functionPreload: [SIMULATED_MAIL_PRELOAD],
          }
        : {}),
    });
  } catch (error) {
    await viewerStarting.then((viewer) => viewer?.stop()).catch(() => undefined);
    throw error;
  }
  try {
    return { config, stack, viewer: await viewerStarting };
  } catch (error) {
    await stack.stop().catch(() => undefined);
    throw new MaildevStartError(error);
  }
}

/** MailDev failed after the stack had started (the stack is stopped again). */
class MaildevStartError extends Error {
  override readonly name = 'MaildevStartError';
  constructor(cause: unknown) {
    super(`MailDev did not start: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** The one line a failed start ends with (exit 1). */
function failToStart(error: unknown): never {
  if (error instanceof MaildevStartError) {
    const cause = error.cause;
    fail(cause instanceof PortInUseError ? cause.message : (error.message.split('\n')[0] ?? error.message));
  }
  if (
    error instanceof DynamoDbLocalError ||
    error instanceof PortInUseError ||
    error instanceof DrawnPortsTakenError ||
    error instanceof ConfigError
  ) {
    fail(error.message.split('\n')[0] ?? error.message);
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  fail(`the local stack did not start: ${message.split('\n')[0]}`);
}

async function main(): Promise<void> {
  const began = performance.now();
  const running = stopOnEverySignal();
  // The SDK's "Node 22 soon" notice is noise on a developer's terminal; the versions are pinned.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const first = readConfiguration();
  // From the operator's variables: the second reading points SMTP_* at MailDev itself.
  const ignoredSmtp = smtpBesideRelaysWarning(process.env, first.config);
  if (ignoredSmtp !== undefined) process.stderr.write(`postdate: ${ignoredSmtp}\n`);
  const logs = installLogFilter(process.stdout, first.logMode);
  const partReady = (part: string, detail: string) =>
    process.stdout.write(
      `  up  ${part.padEnd(19)} ${detail}   (${((performance.now() - began) / 1000).toFixed(1)} s)\n`,
    );
  process.stdout.write('Starting the Postdate local stack…\n');
  // A port drawn for MailDev or for a part of the stack and taken meanwhile starts both again: three
  // starts in all, one line each time (the stack is started once a time: startLocalStackOnce).
  const backupPort = first.backupRelay?.port;
  const { config, stack, viewer } = await startAgainWhenTaken(
    () => startParts(first, running, partReady),
    first.ports,
    backupPort === undefined ? [] : [backupPort],
    (port) => process.stdout.write(`  ${startingAgain(port)}\n`),
  ).catch(failToStart);
  // One readiness check before saying "ready": it also warms the api function (its cold start).
  const health = await fetch(`${stack.apiUrl}/health`).catch(() => undefined);
  if (health?.status !== 200) {
    const detail = health
      ? ((await health.json().catch(() => ({}))) as { detail?: string }).detail
      : undefined;
    process.stderr.write(`postdate: GET /health is not 200 yet: ${detail ?? 'no answer'}\n`);
  }
  writeStackFile({
    pid: process.pid,
    startedAt: new Date().toISOString(),
    apiUrl: stack.apiUrl,
    mailViewerUrl: viewer ? `${viewer.url}/` : (stack.mailViewerUrl ?? null),
    dynamodbEndpoint: stack.dynamodbEndpoint,
    sqsEndpoint: stack.sqsEndpoint,
    schedulerEndpoint: stack.schedulerEndpoint,
    smtpPort: viewer?.smtpPort ?? stack.smtpSink?.port ?? null,
    s3Endpoint: stack.s3Endpoint,
    relayNames: stack.relayNames,
    messageIdDomain: stack.messageIdDomain,
  });
  process.stdout.write(banner(stack, viewer, (performance.now() - began) / 1000, config));
  logs.bannerShown();

  running.parts = { stack, viewer };
}

/** How long a graceful stop may take before the process exits anyway (java is killed at 3 s). */
const STOP_DEADLINE_MS = 15_000;
/** How often the stack checks that the process that started it is still there. */
const PARENT_WATCH_MS = 500;

interface Running {
  parts?: { stack: LocalStack; viewer: MaildevViewer | undefined };
  /** Stops every part in order and exits with `code`: 0 when asked to stop, 1 when a part failed. */
  stop(reason: string, code: 0 | 1): void;
}

/**
 * Any way of stopping stops every part and frees every port (DESIGN §7): Ctrl-C (SIGINT), SIGTERM,
 * a closed terminal (SIGHUP), the end of the parent (npm, when it is sent SIGTERM, ends without
 * passing it on through its shell: this process is orphaned), and the end of DynamoDB Local's java
 * (`running.stop(…, 1)`). The first signal stops the parts in order and exits 0 (a part that ended:
 * 1); a repeat is the same request or an exit at once (`stopRequest`, local/stopSignals.ts); a stop
 * past {@link STOP_DEADLINE_MS} exits at once (DynamoDB Local still ends: its stdin closes).
 */
function stopOnEverySignal(): Running {
  let firstAt: number | undefined;
  const say = (stream: NodeJS.WriteStream, line: string) => {
    // After a closed terminal a write fails (EIO); the stop goes on regardless.
    try {
      stream.write(line);
    } catch {}
  };
  const shutdown = (reason: string, code: 0 | 1 = 0) => {
    const request = stopRequest(firstAt, Date.now());
    if (request === 'same request') return;
    if (request === 'exit now') {
      say(process.stderr, `postdate: ${reason} again, exiting without waiting\n`);
      process.exit(1);
    }
    firstAt = Date.now();
    const { parts } = running;
    if (parts === undefined) {
      // Not ready yet: nothing to stop in order. The workers and MailDev end with this process,
      // DynamoDB Local when its stdin closes.
      say(process.stderr, `postdate: ${reason} before the stack was ready; exiting\n`);
      process.exit(1);
    }
    if (code === 0) say(process.stdout, `\npostdate: ${reason}: stopping every part…\n`);
    else say(process.stderr, `\npostdate: ${reason}: stopping every part…\n`);
    removeStackFile(process.pid);
    setTimeout(() => {
      say(process.stderr, `postdate: the parts did not stop within ${STOP_DEADLINE_MS / 1000} s; exiting\n`);
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    parts.stack
      .stop()
      .then(() => parts.viewer?.stop())
      .then(
        () => {
          say(code === 0 ? process.stdout : process.stderr, 'postdate: stopped; every port is free\n');
          process.exit(code);
        },
        (error: unknown) => {
          say(
            process.stderr,
            `postdate: stopping failed: ${error instanceof Error ? error.message : String(error)}\n`,
          );
          process.exit(1);
        },
      );
  };
  const running: Running = { stop: shutdown };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => shutdown(signal));
  // A closed terminal or a reader gone (`npm start | head`) must not crash the stop.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) shutdown(`its parent (pid ${parent}) ended`);
  }, PARENT_WATCH_MS).unref();
  return running;
}

await main();
