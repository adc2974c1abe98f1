import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { expiresAtAfter } from '../../lambdas/core/messageLifetime.js';
import { isTerminal, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import { isRefused } from '../../lambdas/core/recordLayout.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { bodyUpdatesFailing } from '../support/failingBodyWrites.js';
import { senderOutcomes } from '../sweeper/waitingMessages.js';

/**
 * DESIGN §2: "No TTL deletes a message that is not terminal, or its body". An operator's discard
 * sets both TTLs and changes neither `rev` nor `status`, so a write that takes a message back (a DLQ
 * redrive's claim, a manual retry) and was decided on a read from before the discard must not land
 * as decided: it would take the state's TTL off and leave the body's (lifetimes review, finding 4).
 * Each interleaving is played exactly: the discard lands between the taker's read and its write.
 */
const RETENTION_DAYS = 30;

/** A message's status and the TTLs of its state record and its body item, read consistently. */
async function lifetimesOf(tableName: string, id: string) {
  const item = async (sk: string) =>
    (
      await documentClient().send(
        new GetCommand({ TableName: tableName, Key: { pk: messagePk(id), sk }, ConsistentRead: true }),
      )
    ).Item;
  const state = await item(ITEM_SORT_KEY.messageState);
  return {
    status: state?.status as MessageStatus,
    state: state?.expires_at as number | undefined,
    body: (await item(ITEM_SORT_KEY.messageBody))?.expires_at as number | undefined,
  };
}

describe('a discard between the read and the write of a message taken back', () => {
  let t0: Date;
  let now: Date;
  let tableName: string;
  let api: DynamoApiStore;
  let sender: DynamoSenderStore;
  let endedAs: ReturnType<typeof senderOutcomes>;

  beforeEach(async () => {
    t0 = wholeSecondNow();
    now = seconds(t0, 60);
    ({ tableName } = await freshTable('lifetime-races'));
    const documents = documentClient();
    api = new DynamoApiStore(documents, tableName);
    sender = new DynamoSenderStore(documents, tableName);
    endedAs = senderOutcomes(tableName, t0);
  });

  const records = (id: string) => lifetimesOf(tableName, id);
  /** The promise, whatever the interleaving did: a message that is not terminal has no body TTL. */
  const expectNoExpiringBodyUnderALiveMessage = async (id: string) => {
    const now = await records(id);
    if (!isTerminal(now.status))
      expect(now).toEqual({ status: now.status, state: undefined, body: undefined });
  };
  const discard = (id: string) =>
    api.discard({ tenant: 'acme', id, now, expiresAt: expiresAtAfter(now, RETENTION_DAYS) });

  it('a redrive claim decided on the dead record read before the discard loses its condition; claimed again, both TTLs come off', async () => {
    const dead = await endedAs('dead');
    const read = await sender.readState(dead.id);
    if (read === undefined || isRefused(read)) throw new Error('no record');
    expect((await discard(dead.id)).kind).toBe('updated');
    const leaseUntil = seconds(now, 300);

    const stale = await sender.claim({ observed: read, owner: 'redrive', now, leaseUntil, attemptLimit: 16 });

    await expectNoExpiringBodyUnderALiveMessage(dead.id);
    expect(stale.outcome).toBe('conflict');
    const expiresAt = expiresAtAfter(now, RETENTION_DAYS);
    expect(await records(dead.id)).toEqual({ status: 'dead', state: expiresAt, body: expiresAt });

    // The sender reads again and decides again (copyRun.ts `afterConflict`): the body's TTL first.
    const again = await sender.readState(dead.id);
    if (again === undefined || isRefused(again)) throw new Error('no record');
    const claimed = await sender.claim({
      observed: again,
      owner: 'redrive',
      now,
      leaseUntil,
      attemptLimit: 16,
    });
    expect(claimed.outcome).toBe('applied');
    expect(await records(dead.id)).toEqual({ status: 'sending', state: undefined, body: undefined });
  });

  it('a manual retry whose read came before the discard decides again, and takes both TTLs off', async () => {
    const failed = await endedAs('failed');
    // A table client that lands the discard just before the retry's state write, after its read.
    const hooked = documentClient();
    let discarded = 0;
    hooked.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: Record<string, unknown> }).Key;
        if (
          context.commandName === 'UpdateItemCommand' &&
          key?.[KEY.sort] === ITEM_SORT_KEY.messageState &&
          discarded === 0
        ) {
          discarded += 1;
          expect((await discard(failed.id)).kind).toBe('updated');
        }
        return next(args);
      },
      { step: 'initialize', name: 'discardBeforeTheRetryWrites' },
    );

    const retried = await new DynamoApiStore(hooked, tableName).retry({
      tenant: 'acme',
      id: failed.id,
      now,
      maxAttempts: 8,
    });

    expect(discarded).toBe(1);
    await expectNoExpiringBodyUnderALiveMessage(failed.id);
    expect(retried).toMatchObject({ kind: 'updated', state: { status: 'scheduled' } });
    expect(await records(failed.id)).toEqual({ status: 'scheduled', state: undefined, body: undefined });
  });
});

/**
 * The other order of the same race (decision 0145, "Left"): the setter's body write comes after the
 * taker's. A discard (or its repair, or a test-side outcome) sets the state's TTL, then the body's in a
 * write of its own; a retry that read the state's TTL in between takes the message back. Whichever of
 * the four writes lands last, a message taken back must not keep a body that can expire.
 */
describe("a discard's body write that lands after a retry took the message back", () => {
  let t0: Date;
  let now: Date;
  let tableName: string;
  let api: DynamoApiStore;
  let endedAs: ReturnType<typeof senderOutcomes>;

  beforeEach(async () => {
    t0 = wholeSecondNow();
    now = seconds(t0, 60);
    ({ tableName } = await freshTable('lifetime-races-late-body'));
    api = new DynamoApiStore(documentClient(), tableName);
    endedAs = senderOutcomes(tableName, t0);
  });

  const ttls = (id: string) => lifetimesOf(tableName, id);
  const discardWith = (store: DynamoApiStore, id: string) =>
    store.discard({ tenant: 'acme', id, now, expiresAt: expiresAtAfter(now, RETENTION_DAYS) });
  const retry = (store: DynamoApiStore, id: string) =>
    store.retry({ tenant: 'acme', id, now, maxAttempts: 8 });
  /** A table client that runs `meanwhile` once, just before its first UpdateItem of the item `sk`. */
  const landingFirst = (sk: string, meanwhile: () => Promise<void>) => {
    const hooked = documentClient();
    let ran = 0;
    hooked.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: Record<string, unknown> }).Key;
        if (context.commandName === 'UpdateItemCommand' && key?.[KEY.sort] === sk && ran === 0) {
          ran += 1;
          await meanwhile();
        }
        return next(args);
      },
      { step: 'initialize', name: 'meanwhile' },
    );
    return { documents: hooked, ran: () => ran };
  };

  it('the whole retry between the discard’s state write and its body write: the body keeps no TTL', async () => {
    const failed = await endedAs('failed');
    let retried: Awaited<ReturnType<typeof retry>> | undefined;
    const discarder = landingFirst(ITEM_SORT_KEY.messageBody, async () => {
      retried = await retry(api, failed.id);
    });

    const discarded = await discardWith(new DynamoApiStore(discarder.documents, tableName), failed.id);

    expect(discarder.ran()).toBe(1);
    expect(discarded.kind).toBe('updated');
    expect(retried).toMatchObject({ kind: 'updated', state: { status: 'scheduled' } });
    expect(await ttls(failed.id)).toEqual({ status: 'scheduled', state: undefined, body: undefined });
  });

  it("a discard's repaired body write between the retry's body write and its state write: the body keeps no TTL", async () => {
    const failed = await endedAs('failed');
    // The discard lands on the state; its body write fails (a throttle past the SDK's retries).
    await expect(
      discardWith(new DynamoApiStore(bodyUpdatesFailing(1).documents, tableName), failed.id),
    ).rejects.toThrow();
    // The retry reads the TTL, takes the body's off; then, before its state write, the operator asks
    // the discard again, which finds it discarded and finishes the body's TTL (decision 0145).
    const retrier = landingFirst(ITEM_SORT_KEY.messageState, async () => {
      expect((await discardWith(api, failed.id)).kind).toBe('conflict');
    });

    const retried = await retry(new DynamoApiStore(retrier.documents, tableName), failed.id);

    expect(retrier.ran()).toBe(1);
    expect(retried).toMatchObject({ kind: 'updated', state: { status: 'scheduled' } });
    expect(await ttls(failed.id)).toEqual({ status: 'scheduled', state: undefined, body: undefined });
  });

  it("the same between a DLQ redrive's body write and its claim: the claimed message's body keeps no TTL", async () => {
    const dead = await endedAs('dead');
    await expect(
      discardWith(new DynamoApiStore(bodyUpdatesFailing(1).documents, tableName), dead.id),
    ).rejects.toThrow();
    const read = await new DynamoSenderStore(documentClient(), tableName).readState(dead.id);
    if (read === undefined || isRefused(read)) throw new Error('no record');
    const claimer = landingFirst(ITEM_SORT_KEY.messageState, async () => {
      expect((await discardWith(api, dead.id)).kind).toBe('conflict');
    });

    const claimed = await new DynamoSenderStore(claimer.documents, tableName).claim({
      observed: read,
      owner: 'redrive',
      now,
      leaseUntil: seconds(now, 300),
      attemptLimit: 16,
    });

    expect(claimer.ran()).toBe(1);
    expect(claimed.outcome).toBe('applied');
    expect(await ttls(dead.id)).toEqual({ status: 'sending', state: undefined, body: undefined });
  });
});

/**
 * DynamoDB's TTL deletes an expired item some time after its TTL (AWS: within days), the state
 * record and the body each on its own: a record read past its TTL may have lost its body already.
 * Its retention has run out; a retry must not make it a live message again (DESIGN §2: "No TTL
 * deletes a message that is not terminal, or its body").
 */
describe('a message whose retention ran out', () => {
  it('is not taken back by a retry while DynamoDB deletes it, its body first', async () => {
    const t0 = wholeSecondNow();
    const { tableName } = await freshTable('lifetime-ran-out');
    const documents = documentClient();
    const api = new DynamoApiStore(documents, tableName);
    const failed = await senderOutcomes(tableName, t0)('failed');
    const expiresAt = expiresAtAfter(t0, 1);
    expect((await api.discard({ tenant: 'acme', id: failed.id, now: t0, expiresAt })).kind).toBe('updated');
    // Two days on, the TTL deleter has reached the body and not yet the state record.
    await documents.send(
      new DeleteCommand({
        TableName: tableName,
        Key: { pk: messagePk(failed.id), sk: ITEM_SORT_KEY.messageBody },
      }),
    );
    const later = seconds(t0, 2 * 86_400);

    const retried = await api.retry({ tenant: 'acme', id: failed.id, now: later, maxAttempts: 8 });

    const state = (
      await documents.send(
        new GetCommand({
          TableName: tableName,
          Key: { pk: messagePk(failed.id), sk: ITEM_SORT_KEY.messageState },
          ConsistentRead: true,
        }),
      )
    ).Item;
    expect({ status: state?.status, expires_at: state?.expires_at }).toEqual({
      status: 'failed',
      expires_at: expiresAt,
    });
    expect(retried.kind).toBe('not-found');
  });
});
