import { setTimeout as sleep } from 'node:timers/promises';
import type { LocalStreamDiscard } from '../local/localStack.js';
import type { KillRecord } from './checker.js';
import {
  type SenderChild,
  type SenderStats,
  type StackChild,
  type StackStats,
  startSenderChild,
  startStackChild,
  type TimeoutKill,
} from './stackChild.js';
import type { FaultLine } from './throttleMiddleware.js';

/** The stack process that is up now; requests wait for it across kills and restarts. */
export class CurrentStack {
  private child: StackChild | undefined;
  private ready: Promise<StackChild> | undefined;
  private sender: SenderChild | undefined;
  /** The sender process being started (after a sender kill, or with a new stack). */
  private senderStarting: Promise<void> | undefined;
  private readonly retired: StackStats[] = [];
  private readonly retiredSenders: SenderStats[] = [];
  private readonly retiredFaults: FaultLine[] = [];
  /** Every SIGKILL this run dealt, timed just before the signal went. */
  readonly kills: KillRecord[] = [];

  /**
   * @param senderEnv when given, the sender runs in its own process (`chaos/senderProcess.ts`) with
   *   the stack's function environment plus these variables, so that it can be SIGKILLed alone.
   * @param openSessions the relays' taps' sessions open now, recorded with each SIGKILL (KillRecord).
   */
  constructor(
    private readonly env: () => Record<string, string>,
    private readonly senderEnv?: () => Record<string, string>,
    private readonly openSessions: () => NonNullable<KillRecord['openSessions']> = () => [],
  ) {}

  /** Starts a stack process; a failed start (e.g. a handler mid-edit in a shared checkout) is tried again. */
  async start(): Promise<StackChild> {
    for (let attempt = 1; ; attempt += 1) {
      this.ready = (async () => {
        const child = await startStackChild({
          ...this.env(),
          ...(this.senderEnv ? { CHAOS_SENDER: 'external' } : {}),
        });
        if (this.senderEnv) {
          try {
            this.sender = await this.startSender(child);
          } catch (error) {
            await child.kill();
            throw error;
          }
        }
        return child;
      })();
      try {
        this.child = await this.ready;
        return this.child;
      } catch (error) {
        this.ready = undefined;
        if (attempt >= 3) throw error;
        await sleep(2000);
      }
    }
  }

  private startSender(stack: StackChild): Promise<SenderChild> {
    return startSenderChild({
      ...stack.endpoints.functionEnvironment,
      ...(this.senderEnv?.() ?? {}),
    });
  }

  async get(): Promise<StackChild> {
    for (;;) {
      if (this.child) return this.child;
      if (this.ready) return this.ready;
      await sleep(100);
    }
  }

  /** SIGKILL the stack's whole process group (and the sender process), as a crash would. */
  kill(): Promise<void> {
    return this.retire('kill');
  }

  stop(): Promise<void> {
    return this.retire('stop');
  }

  /**
   * SIGKILL the sender process alone — the signal is sent before this returns, so a caller can
   * place it at an exact moment of an SMTP transaction — then start a new one against the same
   * stack. False when no sender process is up (one is starting, or the stack is down).
   */
  killSender(onRestarted: (error?: unknown) => void): boolean {
    const sender = this.sender;
    const stack = this.child;
    if (!sender || !stack || this.senderStarting) return false;
    this.sender = undefined;
    this.kills.push({ kind: 'sender-sigkill', atMs: Date.now(), openSessions: this.openSessions() });
    const dying = sender.kill();
    this.senderStarting = (async () => {
      await dying;
      this.retiredSenders.push(sender.stats());
      this.retiredFaults.push(...sender.faults());
      try {
        // The stack may have been killed meanwhile: then its restart brings its own sender.
        if (this.child === stack) this.sender = await this.startSender(stack);
        onRestarted();
      } catch (error) {
        onRestarted(error);
      } finally {
        this.senderStarting = undefined;
      }
    })();
    return true;
  }

  private async retire(how: 'kill' | 'stop'): Promise<void> {
    const child = this.child;
    const sender = this.sender;
    this.child = undefined;
    this.ready = undefined;
    this.sender = undefined;
    await this.senderStarting;
    const lateSender = this.sender as SenderChild | undefined;
    this.sender = undefined;
    // One entry per stack kill, timed at its first signal: the sender (its own process or the
    // stack's) dies with that one.
    if (how === 'kill' && (sender || lateSender || child))
      this.kills.push({ kind: 'stack-sigkill', atMs: Date.now(), openSessions: this.openSessions() });
    for (const process of [sender, lateSender]) {
      if (!process) continue;
      await process[how]();
      this.retiredSenders.push(process.stats());
      this.retiredFaults.push(...process.faults());
    }
    if (!child) return;
    await child[how]();
    this.retired.push(child.stats());
    this.retiredFaults.push(...child.faults());
  }

  /** The whole-call DynamoDB faults injected in every process so far. */
  faults(): FaultLine[] {
    return [
      ...this.retiredFaults,
      ...(this.child ? this.child.faults() : []),
      ...(this.sender ? this.sender.faults() : []),
    ];
  }

  /** Sender invocations the local runners killed at their function timeout, in every process so far. */
  timeoutKills(): TimeoutKill[] {
    const all = [...this.retired, ...(this.child ? [this.child.stats()] : [])];
    const senders = [...this.retiredSenders, ...(this.sender ? [this.sender.stats()] : [])];
    return [...all, ...senders].flatMap((stats) => stats.timeoutKills ?? []);
  }

  /** Stream batches the stacks' runners gave up on, in every stack process so far. */
  streamDiscards(): LocalStreamDiscard[] {
    const all = [...this.retired, ...(this.child ? [this.child.stats()] : [])];
    return all.flatMap((stats) => stats.streamDiscards ?? []);
  }

  totals() {
    const all = [...this.retired, ...(this.child ? [this.child.stats()] : [])];
    const senders = [...this.retiredSenders, ...(this.sender ? [this.sender.stats()] : [])];
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    return {
      throttled: sum(all.map((stats) => stats.throttled)) + sum(senders.map((stats) => stats.throttled)),
      dynamodbCalls:
        sum(all.map((stats) => stats.dynamodbCalls)) + sum(senders.map((stats) => stats.dynamodbCalls)),
      replayedBatches: sum(all.map((stats) => stats.replays.batches)),
      replayedRecords: sum(all.map((stats) => stats.replays.records)),
      scheduleFires: sum(all.map((stats) => stats.scheduler?.fires ?? 0)),
      scheduleFiredTwice: sum(all.map((stats) => stats.scheduler?.firedTwice ?? 0)),
      scheduleLate: sum(all.map((stats) => stats.scheduler?.late ?? 0)),
    };
  }
}
