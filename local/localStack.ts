import { join } from 'node:path';
import { loadConfig } from '../lambdas/core/config.js';
import { startDynamoDbLocal } from './dynamodbLocal.js';
import { startEventSources } from './eventSources.js';
import { functionEnvironment } from './functionEnvironment.js';
import {
  importInProcessFunctions,
  inProcessFunctions,
  inProcessLoads,
  startApiFrontEnd,
} from './inProcessFunctions.js';
import {
  checkLocalApiKey,
  checkLocalBackupRelay,
  checkLocalDataDir,
  claimBackupPorts,
  claimPorts,
  LOCAL_PORT_DEFAULTS,
  type LocalPorts,
  startAgainWhenTaken,
  startingAgain,
  startsLocalSink,
} from './localEnv.js';
import {
  builtFunctions,
  describeKill,
  FUNCTIONS,
  type FunctionName,
  type FunctionTimeoutKill,
  functionTimeoutsMs,
} from './localFunctions.js';
import {
  createQueueResources,
  ensureTable,
  LOCAL_RESOURCES,
  localClients,
  seedApiKey,
} from './localResources.js';
import type { LocalStack, LocalStackOptions } from './localStackOptions.js';
import { DEFAULT_SWEEP_INTERVAL_MS, periodicSweep } from './periodicSweep.js';
import { stackReadiness } from './readiness.js';
import { startS3Emulator } from './s3Emulator.js';
import { describeWarmFunctions, sandboxedLoads, startSandboxedFunctions } from './sandboxedFunctions.js';
import { startSchedulerEmulator } from './scheduler/startSchedulerEmulator.js';
import { startMailViewer } from './smtp/mailViewer.js';
import { type SmtpSink, startSmtpSink } from './smtp/smtpSink.js';
import { startLocalSqs } from './sqsServer.js';
import { createWebhookQueue } from './webhookEventSources.js';

export { startSenderEventSource } from './eventSources.js';
export {
  FUNCTIONS,
  type FunctionName,
  type FunctionTimeoutKill,
  SANDBOXED_FUNCTIONS,
  type SandboxedFunctionName,
  SENDER_QUEUE,
  SWEEPER_TIMEOUT_MS,
} from './localFunctions.js';
export { LOCAL_RESOURCES } from './localResources.js';
export type { LocalStack, LocalStackOptions, LocalStreamDiscard } from './localStackOptions.js';

interface Stoppable {
  readonly name: string;
  stop(): Promise<void> | void;
}

const HOST = '127.0.0.1';

/**
 * Starts the whole local stack (DESIGN §7): DynamoDB Local, the SQS and Scheduler emulators, the
 * table, queues and schedule group from the shared definitions, a seeded API key, the handlers
 * behind their local event sources, the sweeper, the HTTP front end and the SMTP sink with its
 * viewer. `stop()` stops everything in reverse order. Every function is wired from the stack's
 * `functionEnvironment`, given explicitly: the relay, sender and sweeper run in worker sandboxes
 * (their worker's `env`), killed at their function timeouts; the api and authorizer run in this
 * process (their entries' argument). Nothing is written to `process.env`, so stacks in one process
 * never share a cold start.
 *
 * A part asked as 0 is given a port drawn seconds before it listens, and another program (another
 * test file's stack, in another worker) may draw and take it meanwhile: the start then stops what it
 * started and starts again on ports drawn anew, as `npm start` does (`startAgainWhenTaken`). A port
 * the caller fixed and finds taken is never drawn again: a PortInUseError naming its variable.
 */
export function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const backup = options.backupRelay;
  const backupFixed = [backup?.port ?? 0, backup?.viewerPort ?? 0].filter((port) => port !== 0);
  return startAgainWhenTaken(
    () => startLocalStackOnce(options),
    askedPorts(options),
    backupFixed,
    (port) => logOf(options)(startingAgain(port)),
  );
}

/** The ports asked of the stack: the defaults, the API's from the Config, and the caller's. */
function askedPorts(options: LocalStackOptions): LocalPorts {
  return { ...LOCAL_PORT_DEFAULTS, api: options.config.port, ...options.ports };
}

function logOf(options: LocalStackOptions): (line: string) => void {
  return options.quiet ? () => undefined : (options.log ?? ((line: string) => console.log(line)));
}

/**
 * One start of the stack; whatever it started is stopped again when it fails. Without
 * `startLocalStack`'s starting again: for a caller whose own retry starts more than the stack
 * (`npm start`, with MailDev's drawn ports: local/start.ts), so that a start is tried three times in
 * all, not three times inside each of the caller's three (decision 0302).
 */
export async function startLocalStackOnce(options: LocalStackOptions): Promise<LocalStack> {
  const { config } = options;
  const log = logOf(options);
  const progress = options.onPartReady ?? (() => undefined);
  const timeoutsMs = functionTimeoutsMs(config, options.functionTimeoutsMs);
  const reportKill = (kill: FunctionTimeoutKill) => {
    log(describeKill(kill, timeoutsMs[kill.functionName]));
    options.onFunctionTimeout?.(kill);
  };
  const dataDir = options.dataDir ?? config.dataDir;
  checkLocalApiKey(config);
  checkLocalDataDir(config);
  checkLocalBackupRelay(config, options.backupRelay);
  const started: Stoppable[] = [];
  // One stop, however many ask for it (the caller, a signal, a part that ended on its own).
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> => {
    stopping ??= (async () => {
      for (const part of started.reverse()) {
        try {
          await part.stop();
        } catch (error) {
          log(`stopping ${part.name} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      started.length = 0;
    })();
    return stopping;
  };
  // DESIGN §7: a process of the stack that ends on its own ends the stack. During the start the
  // start fails with it; after, every part stops and the caller hears of it.
  let ready = false;
  let partExit: Error | undefined;
  const partEnded = (error: Error) => {
    if (partExit !== undefined || stopping !== undefined) return;
    partExit = error;
    if (!ready) return;
    if (options.onPartExit === undefined) log(`${error.message}: stopping every part`);
    void stopAll().then(() => options.onPartExit?.(error));
  };

  // DynamoDB Local's JVM, from its start until it joins `started`: a part that fails before then
  // (a port taken meanwhile, say) must not leave it running beside the next start.
  let dynamodbUnlisted: Promise<{ stop(): Promise<void> }> | undefined;
  try {
    const asked = askedPorts(options);
    // Without a sink of its own (mail leaves through relays elsewhere) its two ports are any free
    // ones, held by nothing: one the user fixed, or another program holds, does not stop the start.
    const ownSink = startsLocalSink(config, asked.smtp);
    const ports = await claimPorts(
      ownSink ? asked : { ...asked, smtp: 0, mailViewer: 0 },
      HOST,
      options.takenPorts,
    );

    // The api and authorizer modules load while DynamoDB Local (the slow part: a JVM) starts.
    const modulesLoading = importInProcessFunctions();
    const dynamodbStarting = startDynamoDbLocal({
      port: ports.dynamodb,
      host: HOST,
      part: 'dynamodb',
      ...(dataDir ? { dataDir: join(dataDir, 'dynamodb') } : {}),
      ...(options.dynamodbJvm ? { jvm: options.dynamodbJvm } : {}),
      onUnexpectedExit: partEnded,
    });
    // Awaited below, after the in-process parts started; marked handled now so that an early
    // failure (no java) is not reported as an unhandled rejection meanwhile.
    dynamodbStarting.catch(() => undefined);
    dynamodbUnlisted = dynamodbStarting;
    // The emulator keeps its queues in memory: no copy sent before this is on them (decision 0180).
    const queueEmptiedAt = new Date();
    const sqs = await startLocalSqs({ port: ports.sqs, host: HOST });
    started.push({ name: 'the SQS emulator', stop: () => sqs.stop() });
    progress('SQS emulator', sqs.endpoint);
    const scheduler = await startSchedulerEmulator({
      port: ports.scheduler,
      host: HOST,
      part: 'scheduler',
      sqsEndpoint: sqs.endpoint,
      ...(dataDir ? { dataDir: join(dataDir, 'scheduler') } : {}),
      ...(options.schedulerFaults ? { faults: options.schedulerFaults } : {}),
      ...(options.onScheduleFire ? { onFire: options.onScheduleFire } : {}),
    });
    started.push({ name: 'the Scheduler emulator', stop: () => scheduler.stop() });
    progress('Scheduler emulator', scheduler.endpoint);
    const s3 = await startS3Emulator({
      port: ports.s3,
      host: HOST,
      part: 's3',
      ...(dataDir ? { dataDir: join(dataDir, 's3') } : {}),
    });
    started.push({ name: 'the S3 emulator', stop: () => s3.stop() });
    progress('S3 emulator', s3.endpoint);

    // DynamoDB Local's endpoint is known before it answers (its port is claimed): the clients are
    // made now, and the queues (which need only SQS and the Scheduler) at once.
    const dynamodbEndpoint = `http://${HOST}:${ports.dynamodb}`;
    const clients = localClients({
      dynamodb: dynamodbEndpoint,
      sqs: sqs.endpoint,
      scheduler: scheduler.endpoint,
    });
    started.push({ name: 'the AWS clients', stop: () => clients.destroy() });
    const queues = await createQueueResources(clients, {
      maxAttempts: config.maxAttempts,
      // The visibility follows the timeout the sender runs with (a test may shorten it).
      senderTimeoutSeconds: Math.ceil(timeoutsMs.sender / 1000),
    });
    const webhookQueue = await createWebhookQueue(clients.sqs, LOCAL_RESOURCES.queuePrefix);
    // Two relays (DESIGN §15): the backup sink's port is known before the functions start.
    const backupPorts =
      options.backupRelay === undefined
        ? undefined
        : await claimBackupPorts(options.backupRelay, ports, HOST, options.takenPorts);
    const environment = {
      ...functionEnvironment({
        config,
        host: HOST,
        ports,
        resources: { queues },
        quiet: options.quiet === true,
        backupSmtpPort: backupPorts?.smtp,
      }),
      POSTDATE_WEBHOOK_QUEUE_URL: webhookQueue.url,
    };
    // The environment is complete: every sandbox of each sandboxed function starts now (its cold
    // start), while the JVM starts, so that the stack says ready with warm functions (DESIGN §7).
    const { sandboxes, loading } = startSandboxedFunctions({
      environment,
      timeoutsMs,
      preload: options.functionPreload,
    });
    for (const [name, own] of Object.entries(sandboxes)) {
      if (own) started.push({ name: `the ${name} sandboxes`, stop: () => own.close() });
    }
    // Marked handled now; awaited below.
    loading.catch(() => undefined);

    let sink: SmtpSink | undefined;
    let mailViewerUrl: string | undefined;
    if (ownSink) {
      const smtpSink = await startSmtpSink({
        port: ports.smtp,
        host: HOST,
        part: 'smtp',
        ...(dataDir ? { dataDir: join(dataDir, 'mail') } : {}),
        ...(options.smtp?.maxBytes !== undefined ? { maxBytes: options.smtp.maxBytes } : {}),
      });
      sink = smtpSink;
      started.push({ name: 'the SMTP sink', stop: () => smtpSink.stop() });
      const viewer = await startMailViewer({
        port: ports.mailViewer,
        host: HOST,
        sink: smtpSink,
        part: 'mailViewer',
      });
      mailViewerUrl = viewer.url;
      started.push({ name: 'the mail viewer', stop: () => viewer.stop() });
      progress('SMTP sink', `${HOST}:${smtpSink.port}`);
    }
    let backupSink: SmtpSink | undefined;
    let backupMailViewerUrl: string | undefined;
    if (backupPorts !== undefined) {
      // No part: no POSTDATE_…_PORT sets these ports, so a taken one stays the listen's EADDRINUSE.
      const second = await startSmtpSink({
        port: backupPorts.smtp,
        host: HOST,
        ...(dataDir ? { dataDir: join(dataDir, 'mail-backup') } : {}),
      });
      backupSink = second;
      started.push({ name: 'the backup SMTP sink', stop: () => second.stop() });
      const viewer = await startMailViewer({ port: backupPorts.viewer, host: HOST, sink: second });
      backupMailViewerUrl = viewer.url;
      started.push({ name: 'the backup mail viewer', stop: () => viewer.stop() });
      progress('backup relay', `${HOST}:${second.port} (viewer ${viewer.url})`);
    }
    const dynamodb = await dynamodbStarting.catch(async (error: unknown) => {
      // The handler imports may still be running; let them settle before the caller exits.
      await Promise.all([modulesLoading.catch(() => undefined), loading.catch(() => undefined)]);
      throw error;
    });
    started.push({ name: 'DynamoDB Local', stop: () => dynamodb.stop() });
    dynamodbUnlisted = undefined;
    const table = await ensureTable(clients.dynamodb, LOCAL_RESOURCES.tableName);
    const resources = { table, queues };
    progress(
      'DynamoDB Local',
      dynamodb.listensOn === 'loopback'
        ? dynamodb.endpoint
        : `${dynamodb.endpoint}, on every interface: this Java has no jdk.compiler for the loopback launcher (install a JDK; local/EMULATORS.md)`,
    );
    const apiKey = await seedApiKey(clients.dynamodb, config.apiKey, dataDir);

    const inProcess = inProcessFunctions(await modulesLoading, environment);
    const built = builtFunctions({ ...inProcessLoads(inProcess), ...sandboxedLoads(await loading) }, log);
    progress('functions', describeWarmFunctions(sandboxes, built));
    const externalSender = options.sender === 'external';
    // An external sender runs in another process: this stack only checked that it loads.
    if (externalSender) await sandboxes.sender?.close();

    const eventSources = startEventSources({
      sqsEndpoint: sqs.endpoint,
      dynamodbEndpoint: dynamodb.endpoint,
      resources,
      relay: built.relay ? sandboxes.relay : undefined,
      sender: externalSender || !built.sender ? undefined : sandboxes.sender,
      senderMaxConcurrency: config.senderMaxConcurrency,
      onFunctionTimeout: reportKill,
      onStreamDiscard: options.onStreamDiscard,
      log,
      webhooks: {
        queue: webhookQueue,
        eventFailureQueueUrl: webhookQueue.eventFailureUrl,
        environment,
        retryBaseMs: options.webhookRetryBaseMs,
        ...(dataDir ? { checkpointFile: join(dataDir, 'stream-checkpoints', 'events.json') } : {}),
      },
    });
    started.push(...eventSources.started);

    const sweeper = built.sweeper ? sandboxes.sweeper : undefined;
    const sweep = periodicSweep(sweeper, log, (kill) => reportKill({ ...kill, functionName: 'sweeper' }), {
      queueEmptiedAt,
    });
    if (sweeper) {
      started.push({ name: 'the sweeper', stop: () => sweep.stop() });
      // A kept table (a restart on POSTDATE_DATA_DIR) is swept at once, not awaited: ready does not
      // wait for it (about 1 s of the start, issue 32). Nothing asked of a ready stack needs it done:
      // a caller's `sweep()` is a run that starts after the ask, and a told run replaces a lost copy
      // with the delay left (0264). A kill or a throw is reported as every run's; stop() waits for
      // it. A table this start made holds nothing to sweep: its first run comes with the interval, so
      // that it takes no CPU from the first messages (decision 0279).
      if (table.existed) {
        sweep.runOnce().catch((error: unknown) => {
          log(`sweeper: ${error instanceof Error ? error.message : String(error)}`);
        });
      }
      sweep.start(options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
    }

    const readiness = stackReadiness({
      clients,
      sendQueueUrl: queues.urls.send,
      host: HOST,
      smtpPort: sink?.port ?? options.externalViewer?.smtpPort,
      mailViewerUrl: mailViewerUrl ?? options.externalViewer?.url,
      relayEventSource: eventSources.relay ? 'up' : 'not built',
      senderEventSource: externalSender ? 'external' : eventSources.sender ? 'up' : 'not built',
      built,
    });
    const frontEnd = await startApiFrontEnd({
      port: ports.api,
      host: HOST,
      functions: inProcess,
      readiness,
      log,
      ...(options.authorizerCacheTtlMs === undefined
        ? {}
        : { authorizerCacheTtlMs: options.authorizerCacheTtlMs }),
    });
    started.push({ name: 'the HTTP front end', stop: () => frontEnd.stop() });
    // The event producer and the delivery function warmed beside the sweep and the front end, and
    // the relay's place in the stream taken (LATEST on a reused table: what is accepted once the
    // stack says ready is relayed, not left to the sweeper).
    await Promise.all([eventSources.warmed, eventSources.relay?.started()]);
    progress('webhooks', 'warm: events, webhooks');
    progress('API', frontEnd.url);
    if (partExit !== undefined) throw partExit;
    ready = true;

    const functionConfig = loadConfig(environment, 'local');
    return {
      apiUrl: frontEnd.url,
      apiKey,
      mailViewerUrl,
      smtpSink: sink,
      backupSink,
      backupMailViewerUrl,
      dynamodbEndpoint: dynamodb.endpoint,
      sqsEndpoint: sqs.endpoint,
      schedulerEndpoint: scheduler.endpoint,
      eventFailureQueueUrl: webhookQueue.eventFailureUrl,
      s3Endpoint: s3.endpoint,
      attachmentBucket: s3.bucket,
      tableName: LOCAL_RESOURCES.tableName,
      // As the functions read them from the environment they are given.
      relayNames: functionConfig.relays.map((relay) => relay.name),
      messageIdDomain: functionConfig.messageIdDomain,
      streamArn: table.streamArn,
      queueUrls: queues.urls,
      queueArns: queues.arns,
      ports,
      functions: Object.fromEntries(
        FUNCTIONS.map((name) => [name, built[name] ? 'loaded' : 'not built']),
      ) as Record<FunctionName, 'loaded' | 'not built'>,
      functionTimeoutsMs: timeoutsMs,
      functionEnvironment: environment,
      readiness,
      coldInvocations: () => ({
        relay: sandboxes.relay?.coldInvocations ?? 0,
        sender: sandboxes.sender?.coldInvocations ?? 0,
        sweeper: sandboxes.sweeper?.coldInvocations ?? 0,
        ...eventSources.coldInvocations(),
      }),
      sweep: () => sweep.runOnce(),
      idle: () => eventSources.idle(),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    await dynamodbUnlisted?.then(
      (dynamodb) => dynamodb.stop(),
      () => undefined,
    );
    // A part that ended is why a later step failed: say so rather than the step's error.
    throw partExit ?? error;
  }
}
