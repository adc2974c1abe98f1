import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqsCopyVisibility } from '../../lambdas/adapters/SqsCopyVisibility.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { encodeDispatchPayload, parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { SWEEP_MAX_INTERVAL_SECONDS } from '../../lambdas/core/sweepDecision.js';
import type { CopyVisibility } from '../../lambdas/ports/CopyVisibility.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import type { DueIndex } from '../../lambdas/ports/DueIndex.js';
import type { Mailer } from '../../lambdas/ports/Mailer.js';
import type { SenderStore } from '../../lambdas/ports/SenderStore.js';
import { createSenderHandler } from '../../lambdas/sender/createSenderHandler.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { shardOf } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { INDEX_SHARDS } from '../../lambdas/store/tableLayout.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { sweep } from '../../lambdas/sweeper/sweep.js';
import { toLambdaSqsRecord } from '../../local/runners/sqsRecordFormat.js';
import type { SmtpBehaviour } from '../../local/smtp/controllableSmtpServer.js';
import {
  cancelThroughApi,
  contextWithRemaining,
  enqueueThroughApi,
  RecordingLog,
  RecordingMetrics,
  rescheduleThroughApi,
  retryThroughApi,
  type SenderWorld,
  smtpMailer,
  startSenderWorld,
  storeWith,
  TEST_SETTINGS,
  TEST_TIMEOUT_SECONDS,
  TestClock,
} from '../sender/senderHarness.js';
import { freshQueues, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { refusedPort } from '../support/refusedPort.js';

/**
 * DESIGN §5a: the anti-entropy sweeper re-dispatches what is not moving with its current `rev`, and
 * "because stale or duplicate copies are dropped by the `rev` and status rules, the sweeper can never
 * cause a double send"; §5: a lease that expired while `sending` is ambiguous and follows the
 * message's policy (`retry`: sent again; `hold`: `unknown`); §2: reschedule and manual retry bump
 * the `rev`, a cancelled message is never sent.
 *
 * A model-based test: fast-check generates interleavings of what the world does — enqueue (now or
 * later, `retry` or `hold`, its copy delivered or lost), reschedule, cancel and manual retry through
 * the real api handler, an extra copy of the current rev (a duplicate) or of the one before (stale),
 * a queue copy delivered to a sender (any of those on the queue; or one delivered to two senders at
 * once; or sent with a slow 250 while the test goes on at the same clock) while the relay answers
 * 250, 451, 550, drops the connection after the dot, or is down, a
 * sender killed after its claim or after the relay's reply but before its outcome write, a sweeper
 * run at the clock, the clock moved past a lease or the grace — through the REAL sender and sweeper
 * on DynamoDB Local, the SQS emulator and a real smtp-server. Then it quiesces: sweeps past every
 * grace and drains the queue with a healthy relay.
 *
 * It judges only from what the relay received and what the test itself did: never from a record.
 * A delivery is a message body the relay took in full and accepted or dropped (it may have passed
 * it on); a 451 or 550 after the dot is a refusal.
 *
 * - A `hold` message is delivered at most once (between two manual retries, each of which is an
 *   operator's decision to send again); a `retry` message at most once more than the ambiguities
 *   injected for it (a drop after the dot, a kill after the relay's reply).
 * - A message the api cancelled gets no delivery after the cancel.
 * - No delivery before the message's send time as the test last set it (a stale copy of a message
 *   rescheduled later sends nothing early).
 * - Once quiet, every message is delivered at least once unless the test cancelled it, the relay
 *   refused it for good (550), its attempts may have run out (451s, drops and kills), or it is a
 *   `hold` message an ambiguity may have made `unknown`.
 *
 * The SQS emulator keeps real time and the senders and the sweeper the test's clock, so the queue's
 * delays and visibility timeouts are cut to nothing: every copy on the queue may come at any moment,
 * which is more than SQS allows, never less (a copy early is re-delayed; one whose lease is live
 * waits). Copies of the messages of one run stay on that run's queue.
 *
 * A few fixed scenarios (`SCENARIOS`) run first, through the same model and judge: the situations
 * of the breaks the generated runs met only by chance (decision 0320), met on every run.
 */

const GRACE_SECONDS = 300;
const LEASE_SECONDS = TEST_SETTINGS.leaseSeconds;
const MAX_ATTEMPTS = TEST_SETTINGS.maxAttempts;
/** Longer than any wait the sweeper or a sender may set: a lease, a backoff, the sweeper's longest interval. */
const QUIET_STEP_SECONDS = SWEEP_MAX_INTERVAL_SECONDS + GRACE_SECONDS + LEASE_SECONDS + 1;
/** Runs of the model (about 0.6 s each); SWEEP_MODEL_SEED replays one, SWEEP_MODEL_SHRINK=1 shrinks a failure. */
const RUNS = Number(process.env.SWEEP_MODEL_RUNS ?? 25);

type RelayAnswer = 'accept' | 'defer' | 'reject' | 'drop' | 'down';
type Kill = 'none' | 'after-claim' | 'after-reply';
type Policy = 'retry' | 'hold';

type Action =
  | { readonly kind: 'enqueue'; readonly policy: Policy; readonly dueIn: number; readonly lost: boolean }
  | { readonly kind: 'reschedule'; readonly message: number; readonly dueIn: number; readonly lost: boolean }
  | { readonly kind: 'cancel'; readonly message: number }
  | { readonly kind: 'retry'; readonly message: number; readonly lost: boolean }
  | { readonly kind: 'copy'; readonly message: number; readonly stale: boolean }
  | {
      readonly kind: 'deliver';
      readonly pick: number;
      readonly relay: RelayAnswer;
      readonly kill: Kill;
      /** `twin`: the copy goes to two senders at once; `background`: the test goes on while it is sent (slowly). */
      readonly mode: 'once' | 'twin' | 'background';
    }
  | { readonly kind: 'sweep' }
  | { readonly kind: 'advance'; readonly seconds: number }
  /**
   * Waits until the last sender in the background is mid-send: the relay has read its body in full,
   * its slow 250 still to come (so its claim and live lease are in). Only the fixed scenarios use it.
   */
  | { readonly kind: 'mid-send' };

const dueIn = fc.constantFrom(0, 0, 0, 20, 600, 3600);
const message = fc.nat(7);
const enqueueArbitrary = fc.record({
  kind: fc.constant('enqueue' as const),
  policy: fc.constantFrom<Policy>('retry', 'hold'),
  dueIn,
  lost: fc.boolean(),
});
const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  {
    arbitrary: enqueueArbitrary,
    weight: 2,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('reschedule' as const), message, dueIn, lost: fc.boolean() }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('cancel' as const), message }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('retry' as const), message, lost: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('copy' as const), message, stale: fc.boolean() }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('deliver' as const),
      pick: fc.nat(9),
      relay: fc.constantFrom<RelayAnswer>('accept', 'accept', 'defer', 'reject', 'drop', 'drop', 'down'),
      kill: fc.constantFrom<Kill>('none', 'none', 'after-claim', 'after-reply'),
      mode: fc.constantFrom('once' as const, 'once' as const, 'twin' as const, 'background' as const),
    }),
    weight: 8,
  },
  { arbitrary: fc.record({ kind: fc.constant('sweep' as const) }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      seconds: fc.constantFrom(
        1,
        30,
        LEASE_SECONDS + 1,
        GRACE_SECONDS + 1,
        LEASE_SECONDS + GRACE_SECONDS + 1,
      ),
    }),
    weight: 2,
  },
);

const ACCEPT_NOW = { kind: 'deliver', pick: 0, relay: 'accept', kill: 'none', mode: 'once' } as const;

/**
 * Runs every property run starts with: the breaks decision 0320 found only by chance (a generated
 * run met their situation at run 16 or 18 of 25, or never), each met for sure before the generated
 * ones. Each keeps one copy on the queue at a time unless any copy will do.
 */
const SCENARIOS: readonly Action[][] = [
  // A takeover of a `hold` message whose sender died after the relay's 250: `unknown`, not sent again (§5).
  [
    { kind: 'enqueue', policy: 'hold', dueIn: 0, lost: false },
    { ...ACCEPT_NOW, kill: 'after-reply' },
    { kind: 'advance', seconds: LEASE_SECONDS + 1 },
    ACCEPT_NOW,
  ],
  // A drop after the dot of a `hold` message: `unknown`, not sent again (§5).
  [
    { kind: 'enqueue', policy: 'hold', dueIn: 0, lost: false },
    { ...ACCEPT_NOW, relay: 'drop' },
    { kind: 'advance', seconds: LEASE_SECONDS + 1 },
    ACCEPT_NOW,
  ],
  // A copy of an `unknown` message, then of a `sent` one: neither claims (§2: only `cancelled` is not all).
  [
    { kind: 'enqueue', policy: 'hold', dueIn: 0, lost: false },
    { ...ACCEPT_NOW, relay: 'drop' },
    { kind: 'copy', message: 0, stale: false },
    ACCEPT_NOW,
    { kind: 'enqueue', policy: 'retry', dueIn: 0, lost: false },
    ACCEPT_NOW,
    { kind: 'copy', message: 1, stale: false },
    ACCEPT_NOW,
  ],
  // The sweeper re-dispatches a `sending` message whose sender died after the 250: it stays `sending`
  // for the takeover, which holds it (§5a).
  [
    { kind: 'enqueue', policy: 'hold', dueIn: 0, lost: false },
    { ...ACCEPT_NOW, kill: 'after-reply' },
    { kind: 'advance', seconds: LEASE_SECONDS + GRACE_SECONDS + 1 },
    { kind: 'sweep' },
    ACCEPT_NOW,
    ACCEPT_NOW,
  ],
  // A second copy while the first is mid-send under a live lease: it waits, it does not send (§5).
  [
    { kind: 'enqueue', policy: 'retry', dueIn: 0, lost: false },
    { kind: 'copy', message: 0, stale: false },
    { ...ACCEPT_NOW, mode: 'background' },
    { kind: 'mid-send' },
    ACCEPT_NOW,
  ],
];

/** What the test knows of one message: what it asked for and what it injected, never the record. */
interface Modelled {
  readonly id: string;
  readonly policy: Policy;
  rev: number;
  /** The send time the test last set (enqueue, reschedule; a manual retry's is now). */
  sendAtMs: number;
  /** Where in the relay's list the current episode starts (enqueue, or the last manual retry). */
  episodeFrom: number;
  /** Kills after the relay's reply in this episode: ambiguities the relay's list does not show. */
  killsAfterReply: number;
  /** Kills after the claim in this episode: each costs an attempt (the takeover counts it). */
  killsAfterClaim: number;
  /** The relay's list length when the api cancelled it. */
  cancelledAt?: number;
  /** What the test did to it, for the failure message. */
  readonly story: string[];
}

/**
 * What the runs generated, printed with SWEEP_MODEL_STATS=1 (decision 0320 quotes one): the
 * situations the rules are about, counted as they happened.
 */
const seen = {
  runs: 0,
  messages: 0,
  copiesToASender: 0,
  staleCopies: 0,
  twins: 0,
  inTheBackground: 0,
  killedAfterClaim: 0,
  killedAfterReply: 0,
  sweeperRedispatches: 0,
  cancelled: 0,
  rescheduled: 0,
  retriedByHand: 0,
  deliveries: 0,
  deliveredTwiceAfterAnAmbiguity: 0,
  holdAmbiguousDeliveredOnce: 0,
};

/** A promise that never settles: what a killed process's next step is. */
const never = <T>(): Promise<T> => new Promise<T>(() => {});

let world: SenderWorld;
let downMailer: Mailer;

beforeAll(async () => {
  world = await startSenderWorld();
  downMailer = smtpMailer({ host: '127.0.0.1', port: await refusedPort() });
}, 60_000);

afterAll(async () => {
  if (process.env.SWEEP_MODEL_STATS) console.info('sweepPromises generated', seen);
  await downMailer?.close();
  await world?.close();
});

/** One run of the model: a fresh queue, the shared table and relay, the test's clock. */
async function runModel(actions: readonly Action[]): Promise<void> {
  const sqs = sqsClient();
  // The emulator's backstop far above the receives a run makes (the sender's own is from its settings).
  const { urls, arns } = await freshQueues(300);
  const clock = new TestClock();
  const relay = world.smtp;
  const models: Modelled[] = [];
  /** The relay's list as the run found it: deliveries of earlier runs are not this run's. */
  const runFrom = relay.received.length;
  const trace: string[] = [];
  /** Senders at work in the background. */
  const inFlight: Promise<unknown>[] = [];
  /** The last one: the relay's list length when it started, and whether it ended. */
  let background: { readonly from: number; ended: boolean } | undefined;

  // Delays and visibility timeouts cut to nothing (the header): every copy may come at any moment.
  const sendQueue = new SqsDispatchQueue(sqs, urls.send);
  const queue: DispatchQueue = {
    enqueue: (copies) => sendQueue.enqueue(copies.map((copy) => ({ ...copy, delaySeconds: 0 }))),
  };
  const sqsVisibility = new SqsCopyVisibility(sqs, urls.send);
  const visibility: CopyVisibility = { change: (receipt) => sqsVisibility.change(receipt, 0) };
  const store = new DynamoSenderStore(world.documents, world.tableName, {
    suppressionLookups: { now: clock.now },
  });
  const templates = new DynamoTemplateStore(world.documents, world.tableName);
  const deadLetters = new SqsDispatchQueue(sqs, urls.sendDeadLetter);

  const handlerWith = (mailer: Mailer, senderStore: SenderStore) =>
    createSenderHandler({
      store: senderStore,
      templates,
      mailer,
      queue,
      deadLetters,
      visibility,
      settings: TEST_SETTINGS,
      timeoutSeconds: TEST_TIMEOUT_SECONDS,
      now: clock.now,
      random: () => 0,
      sleep: async (milliseconds) => clock.advance(milliseconds),
      log: new RecordingLog(),
      metrics: new RecordingMetrics(),
    });
  const healthy = handlerWith(world.mailer, store);

  /**
   * A sender that dies at `kill`: after its claim landed, or when it comes to write the outcome of
   * the relay's reply. From then on none of its calls returns (nothing of it runs again).
   */
  const killable = (kill: Exclude<Kill, 'none'>, onKill: () => void) => {
    let dead = false;
    const die = <T>(): Promise<T> => {
      dead = true;
      onKill();
      return never<T>();
    };
    return handlerWith(
      world.mailer,
      storeWith(store, {
        readState: (id) => (dead ? never() : store.readState(id)),
        claim: async (input) => {
          if (dead) return never();
          const claimed = await store.claim(input);
          return kill === 'after-claim' && claimed.outcome === 'applied' ? die() : claimed;
        },
        recordOutcome: (input) =>
          dead ? never() : kill === 'after-reply' ? die() : store.recordOutcome(input),
        release: (input) => (dead ? never() : store.release(input)),
        settleUnsent: (input) => (dead ? never() : store.settleUnsent(input)),
      }),
    );
  };

  const receiveAll = async (): Promise<SQSRecord[]> => {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: urls.send,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        AttributeNames: ['All'],
      }),
    );
    return (Messages ?? []).map((received) => toLambdaSqsRecord(received, arns.send));
  };
  const showAgain = (records: readonly SQSRecord[]) =>
    Promise.all(
      records.map((record) =>
        sqs
          .send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: urls.send,
              ReceiptHandle: record.receiptHandle,
              VisibilityTimeout: 0,
            }),
          )
          .catch(() => undefined),
      ),
    );
  /** Runs a batch as Lambda would, then deletes what the handler did not keep; kept copies are visible at once. */
  const runBatch = async (records: SQSRecord[], handler: typeof healthy) => {
    const response = await handler({ Records: records }, contextWithRemaining(60_000));
    const kept = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    for (const record of records) {
      if (kept.has(record.messageId)) continue;
      // A twin's delete may find the copy gone already.
      await sqs
        .send(new DeleteMessageCommand({ QueueUrl: urls.send, ReceiptHandle: record.receiptHandle }))
        .catch(() => undefined);
    }
    await showAgain(records.filter((record) => kept.has(record.messageId)));
  };
  const put = (payload: { id: string; rev: number }) =>
    sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: encodeDispatchPayload(payload) }));
  /**
   * The due index as the sweeper reads it, but only the shards of this run's messages and only their
   * entries: earlier runs' messages are not this run's, and an empty shard needs no query (a run
   * sweeps often). The gauge of messages waiting for an operator is not under test here.
   */
  const realIndex = new DynamoDueIndex(world.documents, world.tableName);
  const dueIndex: DueIndex = {
    async overdue(query) {
      const ours = new Set(models.map((model) => model.id));
      if (!models.some((model) => shardOf(model.id, INDEX_SHARDS.due) === query.shard))
        return { entries: [], cursor: undefined };
      const page = await realIndex.overdue(query);
      return { ...page, entries: page.entries.filter((entry) => ours.has(entry.id)) };
    },
    countWaiting: async () => 0,
    waiting: async () => [],
    uncopiedDead: async () => [],
  };
  const sweeper = () =>
    sweep({
      dueIndex,
      records: new DynamoSweepRecords(world.documents, world.tableName),
      queue,
      now: clock.now,
      graceSeconds: GRACE_SECONDS,
      sleep: async () => {},
    });
  const pickModel = (index: number) => (models.length === 0 ? undefined : models[index % models.length]);
  const start = clock.ms;
  const at = () => `t+${Math.round((clock.ms - start) / 1000)}s`;

  /** The relay's deliveries (accepted or dropped) and refusals of one message, from `from` on. */
  const relayed = (model: Modelled, from = model.episodeFrom) =>
    relay.received.slice(Math.max(from, runFrom)).filter((received) => received.postdateId === model.id);
  const deliveries = (model: Modelled, from?: number) =>
    relayed(model, from).filter(
      (received) => received.outcome === 'accepted' || received.outcome === 'dropped',
    );

  const explain = (model: Modelled, rule: string) =>
    [
      `${rule}: message ${model.id} (on_ambiguous ${model.policy})`,
      `what the test did to it: ${model.story.join('; ')}`,
      `what the relay received of it: ${
        relayed(model, runFrom)
          .map((received) => `${received.outcome}${received.label ? ` (${received.label})` : ''}`)
          .join(', ') || 'nothing'
      }`,
      `the run: ${trace.join(' | ')}`,
    ].join('\n');

  /** The safety rules, after every step. */
  const judge = (lengthBefore: number) => {
    for (const model of models) {
      const episode = deliveries(model);
      const ambiguities =
        episode.filter((received) => received.outcome === 'dropped').length + model.killsAfterReply;
      const allowed = model.policy === 'hold' ? 1 : 1 + ambiguities;
      if (episode.length > allowed)
        throw new Error(
          explain(
            model,
            `delivered ${episode.length} times, ${ambiguities} ambiguities injected (at most ${allowed})`,
          ),
        );
      if (model.cancelledAt !== undefined && deliveries(model, model.cancelledAt).length > 0)
        throw new Error(explain(model, 'delivered after the api cancelled it'));
      const fresh = relay.received
        .slice(Math.max(lengthBefore, runFrom))
        .filter((received) => received.postdateId === model.id);
      if (fresh.length > 0 && clock.ms < model.sendAtMs)
        throw new Error(
          explain(
            model,
            `sent at ${at()}, before its send time t+${Math.round((model.sendAtMs - start) / 1000)}s`,
          ),
        );
    }
  };

  const deliver = async (action: Extract<Action, { kind: 'deliver' }>) => {
    const records = await receiveAll();
    const chosen = records[action.pick % Math.max(1, records.length)];
    if (chosen === undefined) return 'nothing on the queue';
    await showAgain(records.filter((record) => record !== chosen));
    const parsed = parseDispatchPayload(chosen.body);
    const copyId = parsed.ok ? parsed.payload.id : '?';
    const model = models.find((candidate) => candidate.id === copyId);
    seen.copiesToASender += 1;
    if (parsed.ok && model !== undefined && parsed.payload.rev < model.rev) seen.staleCopies += 1;
    if (action.mode === 'twin') seen.twins += 1;
    if (action.mode === 'background' && action.kill === 'none') seen.inTheBackground += 1;
    const label = (what: string) => `${what}@${at()}`;
    const answer: Record<Exclude<RelayAnswer, 'down'>, SmtpBehaviour> = {
      accept:
        action.mode === 'background'
          ? { afterData: { acceptAfterMs: 100 }, label: label('slow accept') }
          : { label: label('accept') },
      defer: { afterData: { code: 451, message: '4.3.0 Try again later' }, label: label('defer') },
      reject: { afterData: { code: 550, message: '5.1.1 User unknown' }, label: label('reject') },
      drop: { afterData: 'drop', label: label('drop') },
    };
    const copyName = `copy ${parsed.ok ? `${copyId.slice(-4)}@${parsed.payload.rev}` : '?'}`;
    if (action.kill !== 'none') {
      // The relay answers 250: the kill is what is ambiguous.
      relay.script({ label: label('accept') });
      const kill = action.kill;
      let killed: () => void = () => {};
      const dies = new Promise<'killed'>((resolve) => {
        killed = () => resolve('killed');
      });
      const handler = killable(kill, () => {
        killed();
        if (model === undefined) return;
        if (kill === 'after-reply') model.killsAfterReply += 1;
        else model.killsAfterClaim += 1;
        if (kill === 'after-reply') seen.killedAfterReply += 1;
        else seen.killedAfterClaim += 1;
        model.story.push(`sender killed ${kill} at ${at()}`);
      });
      // Killed, it never answers: its copy stays in flight and comes back when its visibility ends (now).
      const end = await Promise.race([runBatch([chosen], handler).then(() => 'done' as const), dies]);
      if (end === 'killed') await showAgain([chosen]);
      return `${copyName} to a sender ${end === 'killed' ? `killed ${kill}` : `to be killed ${kill}, done before`}`;
    }
    if (action.relay !== 'down') relay.script(answer[action.relay]);
    const sender = () => (action.relay === 'down' ? handlerWith(downMailer, store) : healthy);
    const runs = action.mode === 'twin' ? [sender(), handlerWith(world.mailer, store)] : [sender()];
    if (action.relay === 'down' && action.mode === 'twin') runs[1] = handlerWith(downMailer, store);
    const sending = Promise.all(runs.map((handler) => runBatch([chosen], handler)));
    // In the background: the test goes on meanwhile at the same clock (an invocation ends before its
    // lease: moving the clock waits for it, see `advance`).
    if (action.mode === 'background') {
      const started = { from: relay.received.length, ended: false };
      background = started;
      const ended = () => {
        started.ended = true;
      };
      sending.then(ended, ended);
      inFlight.push(sending);
    } else await sending;
    return `${copyName}${action.mode === 'once' ? '' : ` (${action.mode})`}, relay ${action.relay}`;
  };

  const step = async (action: Action): Promise<string> => {
    switch (action.kind) {
      case 'enqueue': {
        const sendAtMs = clock.ms + action.dueIn * 1000;
        const answer = await enqueueThroughApi(
          world,
          `model-${Math.random()}`,
          {
            from: 'ops@example.com',
            to: ['ada@example.org'],
            subject: 'Your order shipped',
            text: 'It is on its way.',
            on_ambiguous: action.policy,
            ...(action.dueIn > 0 ? { send_at: new Date(sendAtMs).toISOString() } : {}),
          },
          clock.now,
        );
        expect(answer.status).toBe(202);
        const id = String(answer.json.id);
        models.push({
          id,
          policy: action.policy,
          rev: 1,
          sendAtMs,
          episodeFrom: relay.received.length,
          killsAfterReply: 0,
          killsAfterClaim: 0,
          story: [`enqueued at ${at()} due +${action.dueIn}s${action.lost ? ', its copy lost' : ''}`],
        });
        if (!action.lost) await put({ id, rev: 1 });
        return `enqueue ${id.slice(-4)} ${action.policy} +${action.dueIn}s${action.lost ? ' (copy lost)' : ''}`;
      }
      case 'reschedule': {
        const model = pickModel(action.message);
        if (model === undefined) return 'reschedule: no message';
        const sendAtMs = clock.ms + action.dueIn * 1000;
        const answer = await rescheduleThroughApi(world, model.id, clock.now, {
          send_at: new Date(sendAtMs).toISOString(),
        });
        if (answer.status !== 200) return `reschedule ${model.id.slice(-4)}: ${answer.status}`;
        model.rev = Number(answer.json.rev ?? model.rev + 1);
        model.sendAtMs = sendAtMs;
        seen.rescheduled += 1;
        model.story.push(`rescheduled at ${at()} to +${action.dueIn}s (rev ${model.rev})`);
        if (!action.lost) await put({ id: model.id, rev: model.rev });
        return `reschedule ${model.id.slice(-4)} +${action.dueIn}s rev ${model.rev}`;
      }
      case 'cancel': {
        const model = pickModel(action.message);
        if (model === undefined) return 'cancel: no message';
        const answer = await cancelThroughApi(world, model.id, clock.now);
        if (answer.status !== 200) return `cancel ${model.id.slice(-4)}: ${answer.status}`;
        model.cancelledAt = relay.received.length;
        seen.cancelled += 1;
        model.story.push(`cancelled at ${at()}`);
        return `cancel ${model.id.slice(-4)}`;
      }
      case 'retry': {
        const model = pickModel(action.message);
        if (model === undefined) return 'retry: no message';
        const answer = await retryThroughApi(world, model.id, clock.now);
        if (answer.status >= 300) return `retry ${model.id.slice(-4)}: ${answer.status}`;
        // An operator's decision to send again: a new episode.
        model.rev = Number(answer.json.rev ?? model.rev + 1);
        model.sendAtMs = clock.ms;
        model.episodeFrom = relay.received.length;
        model.killsAfterReply = 0;
        model.killsAfterClaim = 0;
        seen.retriedByHand += 1;
        model.story.push(`retried by hand at ${at()} (rev ${model.rev})`);
        if (!action.lost) await put({ id: model.id, rev: model.rev });
        return `retry ${model.id.slice(-4)} rev ${model.rev}`;
      }
      case 'copy': {
        const model = pickModel(action.message);
        if (model === undefined) return 'copy: no message';
        const rev = action.stale ? Math.max(1, model.rev - 1) : model.rev;
        await put({ id: model.id, rev });
        return `extra copy ${model.id.slice(-4)}@${rev}`;
      }
      case 'deliver':
        return deliver(action);
      case 'sweep': {
        const report = await sweeper();
        seen.sweeperRedispatches += report.redispatched;
        return `sweep at ${at()}: ${report.redispatched} re-dispatched`;
      }
      case 'advance':
        // A sender's invocation ends within its timeout, which is shorter than its lease.
        await Promise.all(inFlight.splice(0));
        clock.advance(action.seconds * 1000);
        return `clock +${action.seconds}s`;
      case 'mid-send': {
        const started = background;
        if (started === undefined) return 'mid-send: nothing in the background';
        await eventually(
          'the relay to read the body of the sender in the background',
          () => relay.received.length > started.from || started.ended,
        );
        return `mid-send at ${at()}`;
      }
    }
  };

  for (const action of actions) {
    const before = relay.received.length;
    trace.push(await step(action));
    judge(before);
  }

  // Quiet: past every lease, backoff and grace, the sweeper runs and the queue is drained with a healthy relay.
  const lastBefore = relay.received.length;
  await Promise.all(inFlight.splice(0));
  judge(lastBefore);
  relay.script();
  for (let round = 0; round < 6; round += 1) {
    trace.push(`quiet round ${round}`);
    clock.advance(QUIET_STEP_SECONDS * 1000);
    const report = await sweeper();
    seen.sweeperRedispatches += report.redispatched;
    let drained = 0;
    for (let batch = 0; batch < 10; batch += 1) {
      const before = relay.received.length;
      const records = await receiveAll();
      if (records.length === 0) break;
      drained += records.length;
      await runBatch(records, healthy);
      judge(before);
    }
    trace.push(`${report.redispatched} re-dispatched, ${drained} delivered`);
    if (report.redispatched === 0 && drained === 0) break;
  }

  seen.runs += 1;
  seen.messages += models.length;
  for (const model of models) {
    const delivered = deliveries(model, runFrom).length;
    seen.deliveries += delivered;
    if (deliveries(model).length > 1) seen.deliveredTwiceAfterAnAmbiguity += 1;
    const ambiguities =
      relayed(model).filter((received) => received.outcome === 'dropped').length + model.killsAfterReply;
    if (model.policy === 'hold' && ambiguities > 0 && deliveries(model).length === 1)
      seen.holdAmbiguousDeliveredOnce += 1;
  }

  // Nothing lost: every message the test did not cancel, and whose end the relay or a kill did not excuse.
  for (const model of models) {
    if (model.cancelledAt !== undefined) continue;
    const episode = relayed(model);
    if (episode.some((received) => received.outcome === 'refused' && received.label?.startsWith('reject')))
      continue;
    const spent =
      episode.filter((received) => received.outcome !== 'accepted').length +
      model.killsAfterClaim +
      model.killsAfterReply;
    if (spent >= MAX_ATTEMPTS) continue;
    const ambiguous =
      episode.some((received) => received.outcome === 'dropped') ||
      model.killsAfterClaim + model.killsAfterReply > 0;
    if (model.policy === 'hold' && ambiguous) continue;
    if (deliveries(model).length === 0) throw new Error(explain(model, 'never delivered once quiet (lost)'));
  }
}

describe('the sweeper and takeovers never cause a second send (DESIGN §5, §5a), judged from the relay', () => {
  it(
    'holds for the fixed scenarios, then generated interleavings of enqueues, copies, relay answers, kills, sweeps and the clock',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.tuple(
            fc.array(enqueueArbitrary, { minLength: 1, maxLength: 3 }),
            fc.array(actionArbitrary, { minLength: 10, maxLength: 30 }),
          ),
          ([enqueues, actions]) => runModel([...enqueues, ...actions]),
        ),
        {
          // The fixed scenarios first, then RUNS generated runs.
          examples: SCENARIOS.map((actions): [[Action[], Action[]]] => [[[], actions]]),
          numRuns: SCENARIOS.length + RUNS,
          ...(process.env.SWEEP_MODEL_SEED === undefined
            ? {}
            : { seed: Number(process.env.SWEEP_MODEL_SEED) }),
          endOnFailure: process.env.SWEEP_MODEL_SHRINK === undefined,
        },
      );
    },
    Math.max(120_000, (SCENARIOS.length + RUNS) * 3000),
  );
});
