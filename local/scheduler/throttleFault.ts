/**
 * The Scheduler emulator's throttling fault: what EventBridge Scheduler answers a caller past a
 * request-rate quota (the CreateSchedule request rate above all, docs/capacity.md), switched on and
 * off on a running emulator by its control route (`/local-faults/throttle`, schedulerHttpServer.ts),
 * by an operator of the local stack with curl as by a test with fetch.
 *
 * The answer is the service's `ThrottlingException`: HTTP 429, `x-amzn-errortype:
 * ThrottlingException`, `{"Message": …}`, as @aws-sdk/client-scheduler's model has it. The SDK's
 * standard retry strategy classifies it as a throttle (by the status and the name) and retries it
 * with its throttling backoff, as it would on AWS; what it gives up on reaches the caller.
 */

/** The operations the fault can refuse, by the API's names. */
export const THROTTLEABLE_OPERATIONS = [
  'CreateSchedule',
  'UpdateSchedule',
  'DeleteSchedule',
  'GetSchedule',
  'ListSchedules',
] as const;

export type ThrottleableOperation = (typeof THROTTLEABLE_OPERATIONS)[number];

/** The service's text for a throttled request (the API reference's ThrottlingException). */
export const THROTTLING_MESSAGE = 'The request was denied due to request throttling.';

/** What the control route answers: the fault as it stands, and how many requests it refused. */
export interface ThrottleView {
  /** The operations refused now; empty: the fault is off. */
  readonly operations: readonly ThrottleableOperation[];
  /** How many more requests it refuses before it switches itself off; null: until switched off. */
  readonly remaining: number | null;
  /** Requests refused since the emulator started (every switching on counts on). */
  readonly throttled: number;
}

/** A switching on the control route did not take: the field and why. */
export class ThrottleSettingError extends Error {
  override readonly name = 'ThrottleSettingError';
}

/**
 * The fault's state. `set` takes the control route's JSON body: `operations` (default
 * `["CreateSchedule"]`) and `count`, the number of requests to refuse before it switches itself off
 * (absent: until `clear`).
 */
export class ThrottleFault {
  #operations = new Set<ThrottleableOperation>();
  #remaining: number | null = null;
  #throttled = 0;

  set(body: Record<string, unknown>): ThrottleView {
    const operations = body.operations ?? ['CreateSchedule'];
    if (
      !Array.isArray(operations) ||
      operations.length === 0 ||
      !operations.every((op) => (THROTTLEABLE_OPERATIONS as readonly unknown[]).includes(op))
    ) {
      throw new ThrottleSettingError(
        `operations must be a non-empty list of ${THROTTLEABLE_OPERATIONS.join(', ')}.`,
      );
    }
    const count = body.count;
    if (count !== undefined && (typeof count !== 'number' || !Number.isInteger(count) || count < 1)) {
      throw new ThrottleSettingError('count must be a whole number of at least 1.');
    }
    this.#operations = new Set(operations as ThrottleableOperation[]);
    this.#remaining = count ?? null;
    return this.view();
  }

  clear(): ThrottleView {
    this.#operations.clear();
    this.#remaining = null;
    return this.view();
  }

  /** Whether this request is refused; a refusal counts down `count`, and the last one switches it off. */
  refuses(operation: ThrottleableOperation): boolean {
    if (!this.#operations.has(operation)) return false;
    this.#throttled += 1;
    if (this.#remaining !== null) {
      this.#remaining -= 1;
      if (this.#remaining === 0) this.clear();
    }
    return true;
  }

  view(): ThrottleView {
    return {
      operations: THROTTLEABLE_OPERATIONS.filter((op) => this.#operations.has(op)),
      remaining: this.#remaining,
      throttled: this.#throttled,
    };
  }
}
