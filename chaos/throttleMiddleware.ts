import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';

/**
 * DynamoDB faults, injected as SDK middleware: the faults no local part can produce (DynamoDB Local
 * never throttles).
 *
 * - **Throttling**: a fraction of DynamoDB calls throw `ProvisionedThroughputExceededException` or
 *   `ThrottlingException` before the request is sent, *inside* the SDK's retry middleware, so the
 *   SDK's own retries with backoff see them exactly as they would see the service's answer; what the
 *   SDK gives up on reaches the handlers.
 * - **Outcome writes failing whole** (`outcomeWriteFailureRate`): for that fraction of messages, the
 *   first UpdateItem of the message's STATE item that moves it out of `sending` under the writer's
 *   own lease and records an attempt in its history (the sender's outcome write, e.g. after the
 *   relay said 250; a claim given back unused records none) throws a throttling error
 *   *above* the retry step, so every SDK attempt of that one logical write fails. Later writes of the
 *   message go through. The claim is told apart by its values (it moves the record *to* `sending`).
 * - **Reads failing whole after the claim** (`readFailureRate`): that fraction of the GetItems of a
 *   message's BODY item and of group HEAD items throw, above the retry step too.
 *
 * Each outcome-write and read fault is announced on stdout as one `CHAOS-FAULT {json}` line
 * (`{fault, id, atMs}`), which chaos/stackChild.ts collects from whichever process or worker
 * sandbox the handler runs in (a sandbox's stdout reaches its process's).
 *
 * The handlers build their clients at cold start and the local stack gives no way to hand them a
 * middleware, so the middleware is added to every DynamoDB client (and document client, which
 * shares its client's middleware stack) of this thread on its first `send`. Only the chaos runner's
 * processes and their sandboxes' preloads call this.
 */
export interface ThrottleStats {
  readonly calls: number;
  readonly throttled: number;
  readonly outcomeWritesFailed: number;
  readonly readsFailed: number;
}

/** The faults above the SDK's retry step. */
export interface WholeCallFaults {
  /** Fraction of messages whose first outcome write fails whole. @default 0 */
  readonly outcomeWriteFailureRate?: number;
  /** Fraction of BODY and group HEAD reads that fail whole. @default 0 */
  readonly readFailureRate?: number;
}

/** `CHAOS_OUTCOME_WRITE_FAILURE_RATE` and `CHAOS_READ_FAILURE_RATE`, validated. */
export function wholeCallFaultsFromEnv(env: Readonly<Record<string, string | undefined>>): WholeCallFaults {
  return {
    outcomeWriteFailureRate: rateOf(env, 'CHAOS_OUTCOME_WRITE_FAILURE_RATE'),
    readFailureRate: rateOf(env, 'CHAOS_READ_FAILURE_RATE'),
  };
}

/** The line a fault is announced with (see chaos/stackChild.ts). */
export const FAULT_LINE_PREFIX = 'CHAOS-FAULT ';

export type InjectedFault = 'outcome-write' | 'body-read' | 'group-read';

export interface FaultLine {
  readonly fault: InjectedFault;
  readonly id: string;
  readonly atMs: number;
}

const MIDDLEWARE_NAME = 'chaosDynamoDbThrottle';
const WHOLE_CALL_MIDDLEWARE_NAME = 'chaosDynamoDbWholeCallFaults';

interface MiddlewareStackLike {
  add(middleware: unknown, options: { step: string; priority?: string; name: string }): void;
}

interface CommandArgs {
  readonly input?: Record<string, unknown>;
}

interface HandlerContext {
  readonly commandName?: string;
}

/**
 * Installs the faults on every DynamoDB client of this thread. `faults` defaults to the
 * `CHAOS_*` variables of this thread's environment, so that a sandbox's preload that only knows the
 * throttle rate still injects the whole-call faults the run asked for.
 */
export function installDynamoDbThrottling(
  rate: number,
  random: () => number,
  faults: WholeCallFaults = wholeCallFaultsFromEnv(process.env),
  announce: (line: FaultLine) => void = (line) =>
    process.stdout.write(`${FAULT_LINE_PREFIX}${JSON.stringify(line)}\n`),
): ThrottleStats {
  const stats = { calls: 0, throttled: 0, outcomeWritesFailed: 0, readsFailed: 0 };
  const outcomeRate = faults.outcomeWriteFailureRate ?? 0;
  const readRate = faults.readFailureRate ?? 0;
  if (rate <= 0 && outcomeRate <= 0 && readRate <= 0) return stats;
  const base = Object.getPrototypeOf(DynamoDBClient.prototype) as {
    send: (
      this: { config?: { serviceId?: string }; middlewareStack: MiddlewareStackLike },
      ...args: unknown[]
    ) => unknown;
  };
  const originalSend = base.send;
  const patched = new WeakSet<object>();
  /** Messages whose first outcome write this thread has seen (and whether it was failed). */
  const outcomeSeen = new Set<string>();

  const throttleMiddleware =
    (next: (args: unknown) => Promise<unknown>) =>
    async (args: unknown): Promise<unknown> => {
      stats.calls += 1;
      if (rate > 0 && random() < rate) {
        stats.throttled += 1;
        throw throttlingError(random() < 0.5);
      }
      return next(args);
    };

  const wholeCallMiddleware =
    (next: (args: CommandArgs) => Promise<unknown>, context: HandlerContext) =>
    async (args: CommandArgs): Promise<unknown> => {
      const target = faultTarget(context.commandName, args.input);
      if (target?.kind === 'outcome-write' && !outcomeSeen.has(target.id)) {
        outcomeSeen.add(target.id);
        if (random() < outcomeRate) {
          stats.outcomeWritesFailed += 1;
          announce({ fault: 'outcome-write', id: target.id, atMs: Date.now() });
          throw throttlingError(true, 'outcome write failed on every attempt (chaos)');
        }
      } else if ((target?.kind === 'body-read' || target?.kind === 'group-read') && random() < readRate) {
        stats.readsFailed += 1;
        announce({ fault: target.kind, id: target.id, atMs: Date.now() });
        throw throttlingError(false, `${target.kind} failed on every attempt (chaos)`);
      }
      return next(args);
    };

  base.send = function sendWithThrottling(...args: unknown[]) {
    if (this.config?.serviceId === 'DynamoDB' && !patched.has(this.middlewareStack)) {
      patched.add(this.middlewareStack);
      if (rate > 0) {
        // The deserialize step is the innermost: after signing and inside the retry middleware.
        this.middlewareStack.add(throttleMiddleware, {
          step: 'deserialize',
          priority: 'high',
          name: MIDDLEWARE_NAME,
        });
      }
      if (outcomeRate > 0 || readRate > 0) {
        // The initialize step is the outermost: one logical call fails, whatever the SDK retries.
        this.middlewareStack.add(wholeCallMiddleware, {
          step: 'initialize',
          priority: 'high',
          name: WHOLE_CALL_MIDDLEWARE_NAME,
        });
      }
    }
    return originalSend.apply(this, args);
  };
  return stats;
}

/**
 * Which whole-call fault a DynamoDB call is a target of, from its input (plain values of a document
 * client command, or attribute values of a low-level one):
 * - an UpdateItem of `MSG#{id}`/`STATE` whose condition holds the writer's lease (a `lease_owner`
 *   equality) and requires `status = sending`, and that sets `status` to something else and sets
 *   `history` (an attempt): the outcome write (the claim sets `status` *to* `sending`; a release of
 *   an unused claim records no attempt);
 * - a GetItem of `MSG#{id}`/`BODY`: the body read;
 * - a GetItem of `GROUP#…`/`HEAD`: a group head read (its id is the group's key).
 */
export function faultTarget(
  commandName: string | undefined,
  input: Record<string, unknown> | undefined,
): { kind: InjectedFault; id: string } | undefined {
  if (!input) return undefined;
  const key = input.Key as Record<string, unknown> | undefined;
  const pk = plain(key?.pk);
  const sk = plain(key?.sk);
  if (typeof pk !== 'string' || typeof sk !== 'string') return undefined;
  if (commandName === 'GetItemCommand') {
    if (pk.startsWith('MSG#') && sk === 'BODY') return { kind: 'body-read', id: pk.slice(4) };
    if (pk.startsWith('GROUP#') && sk === 'HEAD') return { kind: 'group-read', id: pk.slice(6) };
    return undefined;
  }
  if (commandName !== 'UpdateItemCommand' || !pk.startsWith('MSG#') || sk !== 'STATE') return undefined;
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const nameOf = (placeholder: string) => names[placeholder] ?? placeholder;
  const assignments = (expression: string) =>
    [...expression.matchAll(/(#?[A-Za-z_][\w]*)\s*=\s*(:[\w]+)/g)].map((match) => ({
      attribute: nameOf(match[1] ?? ''),
      value: plain(values[match[2] ?? '']),
    }));
  const condition = assignments(String(input.ConditionExpression ?? ''));
  const setClause = /\bSET\b(.*?)(?:\bREMOVE\b|\bADD\b|\bDELETE\b|$)/s.exec(
    String(input.UpdateExpression ?? ''),
  );
  const sets = assignments(setClause?.[1] ?? '');
  const holdsLease = condition.some((entry) => entry.attribute === 'lease_owner');
  const fromSending = condition.some((entry) => entry.attribute === 'status' && entry.value === 'sending');
  const newStatus = sets.find((entry) => entry.attribute === 'status')?.value;
  const recordsAttempt = sets.some((entry) => entry.attribute === 'history');
  if (
    holdsLease &&
    fromSending &&
    recordsAttempt &&
    typeof newStatus === 'string' &&
    newStatus !== 'sending'
  ) {
    return { kind: 'outcome-write', id: pk.slice(4) };
  }
  return undefined;
}

/** A plain value, or the string of a `{ S: … }` attribute value. */
function plain(value: unknown): unknown {
  if (value !== null && typeof value === 'object' && 'S' in value) return (value as { S: unknown }).S;
  return value;
}

function rateOf(env: Readonly<Record<string, string | undefined>>, name: string): number {
  const value = Number(env[name] ?? '0');
  if (!Number.isFinite(value) || value < 0 || value > 1)
    throw new Error(`${name}: must be a number in [0, 1]`);
  return value;
}

function throttlingError(provisioned: boolean, note = 'chaos'): Error {
  const $metadata = { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 };
  if (provisioned) {
    return new ProvisionedThroughputExceededException({
      message: `The level of configured provisioned throughput for the table was exceeded (${note})`,
      $metadata,
    });
  }
  return Object.assign(new Error(`Rate of requests exceeds the allowed throughput (${note})`), {
    name: 'ThrottlingException',
    $fault: 'client',
    $metadata,
  });
}
