import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A schedule's target as the Scheduler API describes it (the SQS subset the emulator delivers to). */
export interface ScheduleTarget {
  readonly Arn: string;
  readonly RoleArn: string;
  readonly Input?: string;
  readonly RetryPolicy?: {
    readonly MaximumEventAgeInSeconds?: number;
    readonly MaximumRetryAttempts?: number;
  };
  readonly DeadLetterConfig?: { readonly Arn?: string };
  readonly SqsParameters?: { readonly MessageGroupId?: string };
}

/** One stored schedule: the API fields plus the emulator's bookkeeping. */
export interface StoredSchedule {
  readonly Name: string;
  readonly GroupName: string;
  readonly Arn: string;
  readonly ScheduleExpression: string;
  readonly ScheduleExpressionTimezone?: string;
  readonly Description?: string;
  readonly State: 'ENABLED' | 'DISABLED';
  readonly ActionAfterCompletion: 'NONE' | 'DELETE';
  readonly FlexibleTimeWindow: {
    readonly Mode: 'OFF' | 'FLEXIBLE';
    readonly MaximumWindowInMinutes?: number;
  };
  readonly Target: ScheduleTarget;
  readonly StartDate?: number;
  readonly EndDate?: number;
  readonly KmsKeyArn?: string;
  /** Epoch seconds, as on the wire. */
  readonly CreationDate: number;
  readonly LastModificationDate: number;
  /** Epoch ms the at() expression names; null for rate()/cron() (stored, never fired). */
  readonly fireAtMs: number | null;
  /** Epoch ms when the schedule completed its one invocation (kept only with ActionAfterCompletion NONE). */
  readonly completedAtMs: number | null;
}

export interface StoredGroup {
  readonly Name: string;
  readonly Arn: string;
  readonly CreationDate: number;
  readonly LastModificationDate: number;
}

interface FileContent {
  readonly version: 1;
  readonly groups: StoredGroup[];
  readonly schedules: StoredSchedule[];
}

/** The key of a schedule: names are unique per group. */
export function scheduleKey(groupName: string, name: string): string {
  return `${groupName}/${name}`;
}

/**
 * Schedules and groups in memory, mirrored to `{dataDir}/scheduler.json` after every change when a
 * data directory is given. Writes are atomic (temp file + rename), so a crash leaves the old or the
 * new file, never half of one.
 */
export class ScheduleStore {
  readonly #schedules = new Map<string, StoredSchedule>();
  readonly #groups = new Map<string, StoredGroup>();
  readonly #file: string | undefined;

  constructor(dataDir: string | undefined) {
    if (dataDir) {
      mkdirSync(dataDir, { recursive: true });
      this.#file = join(dataDir, 'scheduler.json');
      this.#load(this.#file);
    }
  }

  getSchedule(groupName: string, name: string): StoredSchedule | undefined {
    return this.#schedules.get(scheduleKey(groupName, name));
  }

  getByKey(key: string): StoredSchedule | undefined {
    return this.#schedules.get(key);
  }

  putSchedule(schedule: StoredSchedule): void {
    this.#schedules.set(scheduleKey(schedule.GroupName, schedule.Name), schedule);
    this.#save();
  }

  deleteSchedule(groupName: string, name: string): boolean {
    const deleted = this.#schedules.delete(scheduleKey(groupName, name));
    if (deleted) this.#save();
    return deleted;
  }

  /** Every schedule, sorted by group then name (the order ListSchedules pages through). */
  schedules(): StoredSchedule[] {
    return [...this.#schedules.values()].sort((a, b) =>
      scheduleKey(a.GroupName, a.Name).localeCompare(scheduleKey(b.GroupName, b.Name)),
    );
  }

  getGroup(name: string): StoredGroup | undefined {
    return this.#groups.get(name);
  }

  putGroup(group: StoredGroup): void {
    this.#groups.set(group.Name, group);
    this.#save();
  }

  #load(file: string): void {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return;
    }
    let content: FileContent;
    try {
      content = JSON.parse(text) as FileContent;
    } catch (error) {
      throw new Error(
        `the Scheduler emulator's data file ${file} is not valid JSON; move it away to start empty`,
        {
          cause: error,
        },
      );
    }
    for (const group of content.groups) this.#groups.set(group.Name, group);
    for (const schedule of content.schedules) {
      this.#schedules.set(scheduleKey(schedule.GroupName, schedule.Name), schedule);
    }
  }

  #save(): void {
    if (!this.#file) return;
    const content: FileContent = {
      version: 1,
      groups: [...this.#groups.values()],
      schedules: [...this.#schedules.values()],
    };
    const temp = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(content, null, 2));
    renameSync(temp, this.#file);
  }
}
