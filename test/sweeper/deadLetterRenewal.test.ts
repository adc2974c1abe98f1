import { ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { SqsDeadLetterCopies } from '../../lambdas/adapters/SqsDeadLetterCopies.js';
import { deadLetterPayload, encodeDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import type { Log } from '../../lambdas/ports/Log.js';
import type { SweepRecords } from '../../lambdas/ports/SweepRecords.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import type { MessageStateRecord } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { KEY } from '../../lambdas/store/tableLayout.js';
import { wireSweeper } from '../../lambdas/sweeper/handler.js';
import { removeStaleDeadLetters } from '../../lambdas/sweeper/staleDeadLetters.js';
import { wholeSecondNow } from '../relay/relayParts.js';
import {
  documentClient,
  freshQueues,
  freshTable,
  LOCAL_AWS,
  queueDepth,
  sqsClient,
} from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { senderOutcomes } from './waitingMessages.js';

/**
 * DESIGN §2: `dead` waits for an operator with no end — "its copy sits in the DLQ … until redrive";
 * §5: "A DLQ redrive (console or CLI) sends it again". The DLQ keeps a copy 14 days (SQS's maximum),
 * so the sweeper keeps each waiting dead message's copy alive: one near that age is replaced by a
 * fresh identical copy, a message that has none gets one from its record, and a second copy of one
 * message (a renewal cut between its send and its delete) goes (decision 0148). The sweeper is wired
 * as its Lambda entry wires it; its clock runs ahead of SQS's to age the copies.
 */
const DAY_MS = 86_400_000;

async function setUp() {
  const t0 = wholeSecondNow();
  const { tableName } = await freshTable('dlq-renew');
  const { urls } = await freshQueues();
  const sqs = sqsClient();
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const record = (level: string) => (message: string, fields?: unknown) =>
    void lines.push({ level, message, fields });
  const log: Log = { info: record('info'), warn: record('warn'), error: record('error') };
  const env = {
    AWS_REGION: LOCAL_AWS.region,
    AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    POSTDATE_LOCAL: 'true',
    POSTDATE_TABLE_NAME: tableName,
    POSTDATE_SEND_QUEUE_URL: urls.send,
    POSTDATE_SEND_DLQ_URL: urls.sendDeadLetter,
  };
  /** The sweeper as one Lambda environment runs it, its clock `aheadMs` past SQS's. */
  const sweeperAhead = (aheadMs: number) =>
    wireSweeper(env, log as never, { count: () => undefined }, () => new Date(Date.now() + aheadMs));
  const api = new DynamoApiStore(documentClient(), tableName);
  const sender = new DynamoSenderStore(documentClient(), tableName);
  /** A copy in the DLQ as the sender moves one there (the put, then its record); answers its SQS message id. */
  const parked = async (message: { id: string; rev: number; attempts: number }) => {
    const letter = deadLetterPayload(message);
    const { MessageId } = await sqs.send(
      new SendMessageCommand({ QueueUrl: urls.sendDeadLetter, MessageBody: encodeDispatchPayload(letter) }),
    );
    await sender.recordDeadLetter(letter);
    return MessageId as string;
  };
  const settled = (count: number) => {
    let last: Awaited<ReturnType<typeof queueDepth>> | undefined;
    return eventually(
      // What was seen last, and what the sweeper said, so that a miss tells which way it went.
      () =>
        `${count} visible and none in flight on the DLQ (last seen ${JSON.stringify(last)}; the sweeper said ${JSON.stringify(lines.map((entry) => [entry.message, entry.fields]))})`,
      async () => {
        last = await queueDepth(sqs, urls.sendDeadLetter);
        return last.visible === count && last.inFlight === 0;
      },
      // A walk hides the copies it receives until its end plus 10 s (decision 0167): on a loaded
      // machine the walk itself takes seconds, so the deadline leaves room for both (45 s ran out once
      // in a CI run twice as slow as usual; the wait ends as soon as the queue is as expected).
      { withinMs: 90_000 },
    );
  };
  /** An operator's redrive of a dead message, whose fresh attempts fail too: it is dead again. */
  const diesAgain = async (dead: MessageStateRecord): Promise<MessageStateRecord> => {
    const now = new Date();
    const claimed = await sender.claim({
      observed: dead,
      owner: 'redriven',
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      attemptLimit: dead.attempts + 1,
    });
    if (claimed.outcome !== 'applied') throw new Error('the redrive did not claim');
    const attempt = {
      at: now.toISOString(),
      outcome: 'transient' as const,
      code: '451',
      enhanced_code: null,
    };
    const again = await sender.recordOutcome({
      claimed: claimed.record,
      owner: 'redriven',
      to: 'dead',
      now,
      attempt: { ...attempt, reply: null, duration_ms: 5 },
      joinsHistory: true,
      lastError: null,
      retentionDays: 30,
      attempts: dead.attempts + 1,
      recipients: { accepted: [], rejected: [] },
    });
    if (again.outcome !== 'applied') throw new Error('the second death did not apply');
    return again.record;
  };
  return {
    sqs,
    urls,
    api,
    endedAs: senderOutcomes(tableName, t0),
    diesAgain,
    sweeperAhead,
    parked,
    settled,
    lines,
    log,
    sender,
    tableName,
  };
}

/** Every copy in the DLQ: its SQS message id and its body (received once, hidden a minute). */
async function copiesIn(sqs: SQSClient, queueUrl: string): Promise<{ messageId: string; body: unknown }[]> {
  const copies: { messageId: string; body: unknown }[] = [];
  for (let empty = 0; empty < 2; ) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    if (Messages.length === 0) empty++;
    for (const message of Messages)
      copies.push({ messageId: message.MessageId ?? '', body: JSON.parse(message.Body ?? '') });
  }
  return copies;
}

/** The copy the sender moves to the DLQ: marked, and naming the death by the attempts it died with. */
const markedCopy = (message: { id: string; rev: number; attempts: number }) => ({
  v: 1,
  id: message.id,
  rev: message.rev,
  dlq: true,
  death: message.attempts,
});

describe("the sweeper keeps a waiting dead message's copy in the DLQ", { timeout: 180_000 }, () => {
  it('replaces a copy that reached the renewal age by a fresh identical one, once', async () => {
    const t = await setUp();
    const dead = [await t.endedAs('dead'), await t.endedAs('dead')];
    const old = [];
    for (const message of dead) old.push(await t.parked(message));
    const sweepOnce = t.sweeperAhead(13 * DAY_MS);

    await sweepOnce();
    await t.settled(2);
    // The same Lambda environment's next run knows the copies are fresh: it does not walk again.
    await sweepOnce();
    await t.settled(2);

    const after = await copiesIn(t.sqs, t.urls.sendDeadLetter);
    expect(after.map((copy) => copy.body)).toEqual(expect.arrayContaining(dead.map(markedCopy)));
    expect(after).toHaveLength(2);
    for (const copy of after) expect(old).not.toContain(copy.messageId);
    const walks = t.lines.filter((entry) => /DLQ/.test(entry.message));
    expect(walks.map((entry) => entry.fields)).toEqual([expect.objectContaining({ renewed: 2, removed: 0 })]);
    for (const message of dead) expect(JSON.stringify(t.lines)).not.toContain(message.id);
  });

  it('makes a copy from the record for a waiting dead message that has none; not for a discarded one, nor a second for one that has its copy', async () => {
    const t = await setUp();
    const lost = await t.endedAs('dead');
    const kept = await t.endedAs('dead');
    const discarded = await t.endedAs('dead');
    const keptCopy = await t.parked(kept);
    const result = await t.api.discard({
      tenant: discarded.tenant,
      id: discarded.id,
      now: new Date(),
      expiresAt: Math.floor(Date.now() / 1000) + 86_400,
    });
    expect(result.kind).toBe('updated');

    await t.sweeperAhead(60 * 60_000)();

    await t.settled(2);
    const after = await copiesIn(t.sqs, t.urls.sendDeadLetter);
    expect(after.map((copy) => copy.body)).toEqual(
      expect.arrayContaining([markedCopy(lost), markedCopy(kept)]),
    );
    expect(after).toHaveLength(2);
    expect(after.map((copy) => copy.messageId)).toContain(keptCopy);
  });

  it('makes no copy for a message dead for less than the settle time (the sender’s own move may be under way)', async () => {
    const t = await setUp();
    await t.endedAs('dead');

    await t.sweeperAhead(0)();

    await t.settled(0);
  });

  it('takes a second copy of one dead message off the DLQ (a renewal cut between its send and its delete) and keeps one', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    await t.parked(dead);
    await t.parked(dead);

    await t.sweeperAhead(0)();

    await t.settled(1);
    expect((await copiesIn(t.sqs, t.urls.sendDeadLetter)).map((copy) => copy.body)).toEqual([
      markedCopy(dead),
    ]);
  });

  it('takes the copy of an earlier death off the DLQ once its message died again, and keeps the copy of its death (decision 0149)', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    // A leftover of the first death (a redrive cut between its send and its delete left it), met first.
    await t.parked(dead);
    const again = await t.diesAgain(dead);
    expect(again).toMatchObject({ status: 'dead', attempts: 2, death: 2 });
    await t.parked(again);

    await t.sweeperAhead(0)();

    await t.settled(1);
    expect((await copiesIn(t.sqs, t.urls.sendDeadLetter)).map((copy) => copy.body)).toEqual([
      markedCopy(again),
    ]);
  });

  it('renews a copy parked before deaths were named (decision 0149) as one naming its death', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    // A death written before decision 0149: no name on the record, none on its copy.
    await documentClient().send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: { [KEY.partition]: dead.pk, [KEY.sort]: dead.sk },
        UpdateExpression: 'REMOVE #death',
        ExpressionAttributeNames: { '#death': 'death' },
      }),
    );
    await t.sqs.send(
      new SendMessageCommand({
        QueueUrl: t.urls.sendDeadLetter,
        MessageBody: encodeDispatchPayload({ id: dead.id, rev: dead.rev, dlq: true }),
      }),
    );

    await t.sweeperAhead(13 * DAY_MS)();

    await t.settled(1);
    expect((await copiesIn(t.sqs, t.urls.sendDeadLetter)).map((copy) => copy.body)).toEqual([
      markedCopy(dead),
    ]);
  });
  it("takes off the plain copy the queue's backstop parked at a first death, once the death's own copy is made, and keeps that one (decision 0167)", async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    // Every move of the copy that died was refused; the backstop moved it as it was: `{v, id, rev}`.
    await t.sqs.send(
      new SendMessageCommand({
        QueueUrl: t.urls.sendDeadLetter,
        MessageBody: encodeDispatchPayload({ id: dead.id, rev: dead.rev }),
      }),
    );

    const sweepOnce = t.sweeperAhead(20 * 60_000);
    await sweepOnce();
    await t.settled(1);
    // The counts are equal now: the next run does not walk, and nothing is left to take off.
    await sweepOnce();
    await t.settled(1);

    expect((await copiesIn(t.sqs, t.urls.sendDeadLetter)).map((copy) => copy.body)).toEqual([
      markedCopy(dead),
    ]);
    const walks = t.lines.filter((entry) => /DLQ/.test(entry.message));
    expect(walks.map((entry) => entry.fields)).toEqual([expect.objectContaining({ made: 1, removed: 1 })]);
  });

  it('makes the copy of a death whose move to the DLQ was never recorded, once the sender had time for it, and takes off the copy the backstop parked instead (decision 0159)', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const again = await t.diesAgain(dead);
    // The queue's backstop moved the copy that carried the message on: the first redrive's, as it was.
    await t.sqs.send(
      new SendMessageCommand({
        QueueUrl: t.urls.sendDeadLetter,
        MessageBody: encodeDispatchPayload(deadLetterPayload(dead)),
      }),
    );

    // Within the settle time the sender's own move may still come: nothing is made.
    await t.sweeperAhead(60_000)();
    await t.settled(1);
    const made = () => t.lines.filter((entry) => /made copies/.test(entry.message));
    expect(made()).toEqual([]);

    const sweepOnce = t.sweeperAhead(20 * 60_000);
    await sweepOnce();
    await t.settled(1);
    // The next run finds the copy's put recorded: nothing more is made, nothing taken off.
    await sweepOnce();
    await t.settled(1);
    expect((await copiesIn(t.sqs, t.urls.sendDeadLetter)).map((copy) => copy.body)).toEqual([
      markedCopy(again),
    ]);
    expect(made().map((entry) => entry.fields)).toEqual([expect.objectContaining({ made: 1, removed: 1 })]);
  });
});

describe('a copy the sweeper makes for a death left owed (decision 0159)', { timeout: 180_000 }, () => {
  it("says so when the record's put could not be recorded because the record moved on meanwhile", async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const records = new DynamoSweepRecords(documentClient(), t.tableName);
    // The sender records its own move of this death between the sweeper's read and its record.
    const racing: SweepRecords = {
      read: (ids) => records.read(ids),
      recordRedispatch: (input) => records.recordRedispatch(input),
      recordDeadLetter: async (letter) => {
        await t.sender.recordDeadLetter(letter);
        return records.recordDeadLetter(letter);
      },
    };

    const swept = await removeStaleDeadLetters({
      deadLetters: new SqsDeadLetterCopies(t.sqs, t.urls.sendDeadLetter),
      records: racing,
      waitingDead: 1,
      uncopiedDead: [{ id: dead.id, rev: dead.rev, status: 'dead', due_at: dead.due_at ?? '' }],
      listWaitingDead: async () => [],
      now: () => new Date(Date.now() + 20 * 60_000),
      renewal: {},
      log: t.log,
    });

    expect(swept.made).toBe(1);
    expect(t.lines.filter((line) => line.level === 'warn')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/moved on/),
        fields: expect.objectContaining({ messageId: dead.id, rev: dead.rev }),
      }),
    ]);
  });
});
