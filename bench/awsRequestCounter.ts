import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import type { _Record as SdkStreamRecord } from '@aws-sdk/client-dynamodb-streams';
import { Client } from '@smithy/core/client';
import { toLambdaRecord } from '../lambdas/adapters/streamRecordFormat.js';
import {
  deriveStatusChange,
  EVENT_SOURCE,
  type MessageEventType,
  messageEvent,
} from '../lambdas/core/messageEvents.js';
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../lambdas/core/postdateFunctions.js';
import { fromLambdaRecord as eventRecordOf } from '../lambdas/events/eventRecords.js';
import { messageView } from '../lambdas/store/messageView.js';
import { RELAY_STREAM_FILTER } from '../lambdas/store/tableLayout.js';
import { EVENTS_STREAM_FILTER } from '../lib/webhookLayout.js';
import { matchesFilter } from '../local/runners/eventFilter.js';

/**
 * Counts every AWS request made in this process, with the DynamoDB units it consumed.
 *
 * How it reaches every client without touching the handlers: the handlers build their clients
 * inside `wire()` (lambdas/<fn>/handler.ts) and offer no hook, so the counter wraps
 * `Client.prototype.send` of `@smithy/core/client`, the base class of every AWS SDK v3 client
 * (DynamoDB, SQS, Scheduler, Streams, and lib-dynamodb's document client, which shares its
 * DynamoDB client's middleware stack). On a stack's first use it adds one ordinary SDK middleware
 * (`initialize` step) to that stack; the middleware does the counting. The wrapper only remembers
 * who called `send` (from the call stack: `lambdas/…` is a function, `local/…` is the emulated AWS
 * platform: event-source pollers, the scheduler's target delivery) in an AsyncLocalStorage.
 *
 * DynamoDB: the code under test does not ask for consumed capacity, so the middleware sets
 * `ReturnConsumedCapacity: 'TOTAL'` on every DynamoDB data-plane command (a field that changes
 * nothing but the response) and sums `ConsumedCapacity` from the answer.
 */

/** A function of Postdate (lambdas/core/postdateFunctions.ts), or who else sent the request. */
export type Origin = PostdateFunctionName | 'function' | 'platform' | 'other';

/**
 * One stream record a GetRecords returned, as the two readers of the stream see it. Both local
 * stream runners (the relay's and the event producer's) read every record, so a record is counted
 * once by its sequence number, not once per GetRecords.
 */
export interface SeenStreamRecord {
  readonly sequenceNumber: string;
  /** It passes the relay's event filter (RELAY_STREAM_FILTER): the relay is invoked for it. */
  readonly relay: boolean;
  /** It passes the event producer's filter (EVENTS_STREAM_FILTER): the producer is invoked for it. */
  readonly producer: boolean;
  /**
   * The PutEvents entry the producer makes of it, in the bytes EventBridge bills (Time 14 + Source +
   * DetailType + Detail); absent when the change is no event. The local stack has no bus
   * (local/EMULATORS.md), so the entry is built here with the producer's own functions.
   */
  readonly eventEntryBytes?: number;
  /** That event's type (with eventEntryBytes): whether the stack puts it on the bus (core/busEvents.ts). */
  readonly eventType?: MessageEventType;
}

export interface CountedRequest {
  readonly origin: Origin;
  /** The file that called `send` (relative to the repository), e.g. `lambdas/store/apiStore.ts`. */
  readonly caller: string;
  readonly service: string;
  readonly command: string;
  readonly ok: boolean;
  readonly writeUnits: number;
  readonly readUnits: number;
  /** Bytes of the input as JSON (SQS bills each 64 KB chunk of payload as a request). */
  readonly inputBytes: number;
  /** For calls that carry messages or records: how many (ReceiveMessage, GetRecords, SendMessageBatch). */
  readonly items: number;
  /** GetRecords only: the records it returned. */
  readonly streamRecords: readonly SeenStreamRecord[];
  /** SQS only: the queue's name (the last part of QueueUrl), to tell the send queue from the webhook queue. */
  readonly queue: string;
  /** EventBridge PutEvents only: each entry's billed bytes. */
  readonly eventEntryBytes: readonly number[];
  /** Wall time from this middleware to the answer (serialization, signing, the round trip, parsing). */
  readonly ms: number;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CAPACITY_COMMANDS = new Set([
  'GetItemCommand',
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'BatchWriteItemCommand',
  'TransactGetItemsCommand',
  'TransactWriteItemsCommand',
]);

type SendFunction = (this: Client<never, never, never, never>, ...args: unknown[]) => unknown;
interface Patchable {
  prototype: { send: SendFunction };
}

export interface AwsRequestCounter {
  /** Requests recorded since the last `take()`, emptied. */
  take(): CountedRequest[];
  uninstall(): void;
}

/**
 * The relay, sender and sweeper run in worker sandboxes (local/runners/functionSandbox.ts), whose
 * SDK clients this thread's patch never sees: bench/sandboxRequestCounter.ts, preloaded into each
 * sandbox (benchStack.ts, `countSandboxRequests`), counts there and posts every request on this
 * channel, and the counter of the main thread adds them to its own.
 */
export const SANDBOX_REQUESTS_CHANNEL = 'postdate-bench-aws-requests';

/** Installs the counter; call before the local stack starts (clients made earlier are counted too). */
export function installAwsRequestCounter(
  options: { forward?: { channel: BroadcastChannel; origin: Origin } } = {},
): AwsRequestCounter {
  const callers = new AsyncLocalStorage<{ origin: Origin; caller: string }>();
  const recorded: CountedRequest[] = [];
  const { forward } = options;
  // In a sandbox every request is posted to the main thread, attributed to the sandbox's function
  // when the call stack (cut at an await) names none.
  const sink: Pick<CountedRequest[], 'push'> = forward
    ? {
        push: (...requests: CountedRequest[]) => {
          for (const request of requests) {
            const origin =
              request.origin === 'function' || request.origin === 'other' ? forward.origin : request.origin;
            forward.channel.postMessage({ ...request, origin });
          }
          return 0;
        },
      }
    : recorded;
  const listener = forward ? undefined : new BroadcastChannel(SANDBOX_REQUESTS_CHANNEL);
  if (listener) {
    listener.onmessage = (event) => {
      recorded.push((event as { data: CountedRequest }).data);
    };
    listener.unref();
  }
  const instrumented = new WeakSet<object>();
  const middleware = counting(callers, sink);

  // The SDK may be loaded both as ESM and as CommonJS in one process: patch each copy of the class.
  const classes = new Set<Patchable>([Client as unknown as Patchable]);
  try {
    const cjs = createRequire(import.meta.url)('@smithy/core/client') as { Client?: Patchable };
    if (cjs.Client) classes.add(cjs.Client);
  } catch {
    // No CommonJS build: the ESM class is the only one.
  }
  const originals = new Map<Patchable, SendFunction>();
  for (const cls of classes) {
    const original = cls.prototype.send;
    originals.set(cls, original);
    cls.prototype.send = function countedSend(this: Client<never, never, never, never>, ...args: unknown[]) {
      const stack = (this as unknown as { middlewareStack: MiddlewareStackLike }).middlewareStack;
      if (!instrumented.has(stack)) {
        instrumented.add(stack);
        stack.add(middleware, { step: 'initialize', priority: 'high', name: 'postdateBenchCounter' });
      }
      return callers.run(callerOf(new Error().stack ?? ''), () => original.apply(this, args));
    };
  }
  return {
    take: () => recorded.splice(0, recorded.length),
    uninstall() {
      listener?.close();
      for (const [cls, original] of originals) cls.prototype.send = original;
    },
  };
}

interface MiddlewareStackLike {
  add(middleware: unknown, options: Record<string, unknown>): void;
}

type Next = (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>;
interface HandlerContext {
  clientName?: string;
  commandName?: string;
}

function counting(
  callers: AsyncLocalStorage<{ origin: Origin; caller: string }>,
  recorded: Pick<CountedRequest[], 'push'>,
) {
  return (next: Next, context: HandlerContext) =>
    async function countRequest(args: { input: Record<string, unknown> }) {
      const service = (context.clientName ?? 'unknown').replace(/Client$/, '');
      const command = (context.commandName ?? 'unknown').replace(/Command$/, '');
      const who = callers.getStore() ?? { origin: 'other' as const, caller: 'unknown' };
      const isCapacityCommand = service === 'DynamoDB' && CAPACITY_COMMANDS.has(context.commandName ?? '');
      const input =
        isCapacityCommand && args.input.ReturnConsumedCapacity === undefined
          ? { ...args.input, ReturnConsumedCapacity: 'TOTAL' }
          : args.input;
      const inputBytes = safeJsonLength(input);
      const t0 = performance.now();
      try {
        const result = await next({ ...args, input });
        const units = consumedUnits(result.output.ConsumedCapacity, command);
        recorded.push({
          ...who,
          service,
          command,
          ok: true,
          writeUnits: units.write,
          readUnits: units.read,
          inputBytes,
          items: itemCount(command, input, result.output),
          streamRecords: command === 'GetRecords' ? streamRecordsOf(result.output.Records) : [],
          queue: queueOf(input),
          eventEntryBytes: command === 'PutEvents' ? putEventsEntryBytes(input) : [],
          ms: performance.now() - t0,
        });
        return result;
      } catch (error) {
        const units = consumedUnits((error as { ConsumedCapacity?: unknown }).ConsumedCapacity, command);
        recorded.push({
          ...who,
          service,
          command,
          ok: false,
          writeUnits: units.write,
          readUnits: units.read,
          inputBytes,
          items: 0,
          streamRecords: [],
          queue: queueOf(input),
          eventEntryBytes: [],
          ms: performance.now() - t0,
        });
        throw error;
      }
    };
}

function callerOf(stack: string): { origin: Origin; caller: string } {
  const files = [...stack.matchAll(/\(?(?:file:\/\/)?(\/[^\s():]+\.(?:ts|js|mjs)):\d+:\d+\)?/g)]
    .map((match) => match[1] ?? '')
    .filter((file) => file.startsWith(ROOT) && !file.includes('/node_modules/'))
    .map((file) => file.slice(ROOT.length))
    .filter((file) => !file.startsWith('bench/'));
  const caller = files[0] ?? 'unknown';
  if (caller.startsWith('local/')) return { origin: 'platform', caller };
  const fn = files
    .map((file) => /^lambdas\/([a-z]+)\//.exec(file)?.[1])
    .find((name): name is PostdateFunctionName => POSTDATE_FUNCTIONS.includes(name as PostdateFunctionName));
  if (fn) return { origin: fn, caller };
  return { origin: caller.startsWith('lambdas/') ? 'function' : 'other', caller };
}

const READ_COMMANDS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);

function consumedUnits(capacity: unknown, command: string): { write: number; read: number } {
  const list = Array.isArray(capacity) ? capacity : capacity ? [capacity] : [];
  let write = 0;
  let read = 0;
  for (const entry of list as {
    CapacityUnits?: number;
    WriteCapacityUnits?: number;
    ReadCapacityUnits?: number;
  }[]) {
    if (entry.WriteCapacityUnits !== undefined || entry.ReadCapacityUnits !== undefined) {
      write += entry.WriteCapacityUnits ?? 0;
      read += entry.ReadCapacityUnits ?? 0;
    } else {
      // Only the total came back (TOTAL): a read command consumed read units, any other write units.
      if (READ_COMMANDS.has(command)) read += entry.CapacityUnits ?? 0;
      else write += entry.CapacityUnits ?? 0;
    }
  }
  return { write, read };
}

function itemCount(command: string, input: Record<string, unknown>, output: Record<string, unknown>): number {
  if (command === 'ReceiveMessage') return Array.isArray(output.Messages) ? output.Messages.length : 0;
  if (command === 'GetRecords') return Array.isArray(output.Records) ? output.Records.length : 0;
  if (command === 'SendMessageBatch' || command === 'DeleteMessageBatch')
    return Array.isArray(input.Entries) ? input.Entries.length : 0;
  if (command === 'TransactWriteItems' || command === 'TransactGetItems')
    return Array.isArray(input.TransactItems) ? input.TransactItems.length : 0;
  if (command === 'BatchWriteItem' || command === 'BatchGetItem') {
    const perTable = Object.values((input.RequestItems ?? {}) as Record<string, unknown>);
    return perTable.reduce<number>(
      (sum, value) =>
        sum + (Array.isArray(value) ? value.length : ((value as { Keys?: unknown[] }).Keys?.length ?? 0)),
      0,
    );
  }
  return 1;
}

/** Each stream record with what its two readers make of it, exactly as the local stream runner filters. */
function streamRecordsOf(records: unknown): SeenStreamRecord[] {
  if (!Array.isArray(records)) return [];
  return (records as SdkStreamRecord[]).map((record) => {
    const lambdaRecord = toLambdaRecord(record, 'counted');
    const producer = matchesFilter(EVENTS_STREAM_FILTER, lambdaRecord);
    const event = producer ? eventEntryOf(lambdaRecord) : undefined;
    return {
      sequenceNumber: record.dynamodb?.SequenceNumber ?? '',
      relay: matchesFilter(RELAY_STREAM_FILTER, lambdaRecord),
      producer,
      ...(event === undefined ? {} : { eventEntryBytes: event.bytes, eventType: event.type }),
    };
  });
}

/** Time (billed as 14 bytes), Source, DetailType and Detail: EventBridge's entry size. */
const entryBytes = (detailType: string, detail: string): number =>
  14 + Buffer.byteLength(EVENT_SOURCE) + Buffer.byteLength(detailType) + Buffer.byteLength(detail);

/** The event the producer derives from a record (lambdas/events/produceEvents.ts): its type, and its entry's bytes. */
function eventEntryOf(
  record: ReturnType<typeof toLambdaRecord>,
): { readonly type: MessageEventType; readonly bytes: number } | undefined {
  const read = eventRecordOf(record);
  const change = deriveStatusChange(read.change);
  if (change === null || read.state === null) return undefined;
  const { history: _history, ...view } = messageView(read.state, { withHistory: false });
  const event = messageEvent(change, view);
  return { type: change.type, bytes: entryBytes(event.type, JSON.stringify(event)) };
}

function putEventsEntryBytes(input: Record<string, unknown>): number[] {
  const entries = (input.Entries ?? []) as { DetailType?: string; Detail?: string }[];
  return entries.map((entry) => entryBytes(entry.DetailType ?? '', entry.Detail ?? ''));
}

function queueOf(input: Record<string, unknown>): string {
  return typeof input.QueueUrl === 'string' ? (input.QueueUrl.split('/').pop() ?? '') : '';
}

function safeJsonLength(value: unknown): number {
  try {
    return Buffer.byteLength(
      JSON.stringify(value, (_key, v: unknown) =>
        v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v,
      ),
    );
  } catch {
    return 0;
  }
}
