import { setTimeout as sleep } from 'node:timers/promises';

/** What `eventually()` waits for: a value, or `true`; `undefined` and `false` mean "not yet". */
type Probe<T> = () => T | undefined | false | Promise<T | undefined | false>;

export interface EventuallyOptions {
  /**
   * The deadline, from the first probe. @default 15000: a wait that crosses a process or the JVM
   * (the SQS emulator, DynamoDB Local, a sandbox) may lag seconds on the loaded CI machine.
   */
  readonly withinMs?: number;
  /** The pause between two probes. @default 25 */
  readonly everyMs?: number;
}

/**
 * Polls `probe` until it returns something other than `undefined` or `false`, and resolves with
 * that (a condition gives `true`, a lookup gives what it found). Past the deadline it throws
 * `waited N ms for {what}`; `what` may be a function, read then, to describe the state at the
 * deadline. An error the probe throws is not "not yet": it fails the wait at once.
 *
 * The one way a test waits for something that happens later (test/README.md): a deadline, never a
 * fixed sleep, and no timing asserted.
 */
export async function eventually<T>(
  what: string | (() => string),
  probe: Probe<T>,
  options: EventuallyOptions = {},
): Promise<T> {
  const withinMs = options.withinMs ?? 15_000;
  const everyMs = options.everyMs ?? 25;
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      throw new Error(`waited ${withinMs} ms for ${typeof what === 'function' ? what() : what}`);
    }
    await sleep(everyMs);
  }
}
