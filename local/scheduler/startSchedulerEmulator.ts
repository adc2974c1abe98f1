import { SQSClient } from '@aws-sdk/client-sqs';
import { type LocalPart, listenAs } from '../localEnv.js';
import { type DeliveryOutcome, deliverScheduleInput } from './deliverScheduleInput.js';
import { FireTimers } from './fireTimers.js';
import { createSchedulerHttpServer } from './schedulerHttpServer.js';
import { SchedulerService } from './schedulerService.js';
import { ScheduleStore, type StoredSchedule, scheduleKey } from './scheduleStore.js';
import { ThrottleFault } from './throttleFault.js';

/** What a test or the local stack can see of a stored schedule. */
export interface ScheduleView {
  readonly name: string;
  readonly groupName: string;
  readonly arn: string;
  readonly scheduleExpression: string;
  /** The instant at() names; null for rate()/cron(), which the emulator never fires. */
  readonly fireAt: Date | null;
  readonly state: 'ENABLED' | 'DISABLED';
  readonly actionAfterCompletion: 'NONE' | 'DELETE';
  readonly targetArn: string;
  /** When it completed its one invocation (only kept with ActionAfterCompletion NONE). */
  readonly completedAt: Date | null;
}

/** One invocation of a schedule, reported after its delivery finished. */
export interface FireEvent {
  readonly name: string;
  readonly groupName: string;
  /** The instant the schedule's at() names. */
  readonly scheduledAtMs: number;
  /** When the emulator's timer actually fired (Date.now()). */
  readonly firedAtMs: number;
  readonly outcome: DeliveryOutcome;
  /** Delivery attempts of this copy (1 + retries). */
  readonly attempts: number;
  /** 1, or 2 for the duplicate copy injected by `faults.fireTwice`. */
  readonly copy: number;
}

/**
 * Fault hooks for the chaos suite. Each is asked per schedule name when it fires:
 * - `fireTwice`: deliver the Input twice (Scheduler is at-least-once);
 * - `delayMs`: fire this many ms late (Scheduler's precision is about a minute);
 * - `failAttempt`: make delivery attempt `attempt` (1-based) fail, exercising RetryPolicy and the DLQ.
 * The API's own fault, throttling, is switched on a running emulator by its control route
 * (throttleFault.ts), not here.
 */
export interface SchedulerFaults {
  readonly fireTwice?: (name: string) => boolean;
  readonly delayMs?: (name: string) => number;
  readonly failAttempt?: (name: string, attempt: number) => boolean;
}

export interface SchedulerEmulatorOptions {
  readonly port: number;
  readonly host?: string;
  /** The part whose variable a taken port's PortInUseError names (the stack's); unset, the listen's own error is kept. */
  readonly part?: LocalPart;
  /** The SQS endpoint targets and dead-letter queues are reached through. */
  readonly sqsEndpoint: string;
  /** Keeps schedules in `{dataDir}/scheduler.json`; memory only when absent. */
  readonly dataDir?: string;
  readonly faults?: SchedulerFaults;
  /** Called after every invocation (tests measure firing precision with `firedAtMs`). */
  readonly onFire?: (event: FireEvent) => void;
  /** First delay between delivery retries, doubling up to 60 s (default 1000). */
  readonly retryBaseDelayMs?: number;
}

export interface SchedulerEmulator {
  readonly endpoint: string;
  stop(): Promise<void>;
  schedules(): readonly ScheduleView[];
}

/**
 * Starts a local EventBridge Scheduler: the REST-JSON API `@aws-sdk/client-scheduler` calls
 * (with `endpoint` set), and a precise timer per enabled one-time schedule that delivers its Input
 * to the SQS target at its at() time. With `dataDir`, schedules survive a restart, and those
 * whose time passed while it was down fire at start-up. See local/EMULATORS.md for differences from AWS.
 */
export async function startSchedulerEmulator(options: SchedulerEmulatorOptions): Promise<SchedulerEmulator> {
  const host = options.host ?? '127.0.0.1';
  const store = new ScheduleStore(options.dataDir);
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: options.sqsEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const stopping = new AbortController();
  const inFlight = new Map<string, Promise<void>>();
  const faults = options.faults ?? {};

  const fire = async (key: string): Promise<void> => {
    const schedule = store.getByKey(key);
    if (!schedule || !isArmable(schedule) || inFlight.has(key) || stopping.signal.aborted) return;
    const firedAtMs = Date.now();
    const copies = faults.fireTwice?.(schedule.Name) ? 2 : 1;
    const run = (async () => {
      for (let copy = 1; copy <= copies; copy += 1) {
        const result = await deliverScheduleInput(schedule, firedAtMs, {
          sqs,
          retryBaseDelayMs: options.retryBaseDelayMs ?? 1000,
          signal: stopping.signal,
          ...(faults.failAttempt
            ? { failAttempt: (attempt: number) => faults.failAttempt?.(schedule.Name, attempt) ?? false }
            : {}),
        });
        if (result.outcome === 'stopped') return;
        options.onFire?.({
          name: schedule.Name,
          groupName: schedule.GroupName,
          scheduledAtMs: schedule.fireAtMs ?? firedAtMs,
          firedAtMs,
          outcome: result.outcome,
          attempts: result.attempts,
          copy,
        });
      }
      complete(schedule, firedAtMs);
    })();
    inFlight.set(key, run);
    try {
      await run;
    } finally {
      inFlight.delete(key);
    }
  };

  /** ActionAfterCompletion, unless the schedule was changed or deleted while it was delivering. */
  const complete = (fired: StoredSchedule, firedAtMs: number): void => {
    const current = store.getSchedule(fired.GroupName, fired.Name);
    if (!current || current.LastModificationDate !== fired.LastModificationDate) return;
    if (current.ActionAfterCompletion === 'DELETE') store.deleteSchedule(current.GroupName, current.Name);
    else store.putSchedule({ ...current, completedAtMs: firedAtMs });
  };

  const timers = new FireTimers((key) => void fire(key));
  const arm = (key: string): void => {
    const schedule = store.getByKey(key);
    if (schedule && isArmable(schedule) && schedule.fireAtMs !== null) {
      timers.arm(key, schedule.fireAtMs + Math.max(0, faults.delayMs?.(schedule.Name) ?? 0));
    } else {
      timers.disarm(key);
    }
  };

  const service = new SchedulerService(store, Date.now, arm);
  const server = createSchedulerHttpServer(service, new ThrottleFault());
  const port = await listenAs(options.part, server, options.port, host).catch((error: unknown) => {
    sqs.destroy();
    throw error;
  });
  // Schedules restored from dataDir: those already due fire now, the others at their time.
  for (const schedule of store.schedules()) arm(scheduleKey(schedule.GroupName, schedule.Name));

  return {
    endpoint: `http://${host}:${port}`,
    schedules: () => store.schedules().map(toView),
    async stop() {
      stopping.abort();
      timers.clear();
      await Promise.allSettled(inFlight.values());
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      sqs.destroy();
    },
  };
}

function isArmable(schedule: StoredSchedule): boolean {
  return schedule.State === 'ENABLED' && schedule.fireAtMs !== null && schedule.completedAtMs === null;
}

function toView(schedule: StoredSchedule): ScheduleView {
  return {
    name: schedule.Name,
    groupName: schedule.GroupName,
    arn: schedule.Arn,
    scheduleExpression: schedule.ScheduleExpression,
    fireAt: schedule.fireAtMs === null ? null : new Date(schedule.fireAtMs),
    state: schedule.State,
    actionAfterCompletion: schedule.ActionAfterCompletion,
    targetArn: schedule.Target.Arn,
    completedAt: schedule.completedAtMs === null ? null : new Date(schedule.completedAtMs),
  };
}
