import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { type MessagesDeps, messagesDiscard, messagesRetry, readState } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { countWaiting } from '../../lambdas/sweeper/waitingGauge.js';
import { seconds, wholeSecondNow } from '../relay/relayParts.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { bodyUpdatesFailing } from '../support/failingBodyWrites.js';
import { senderOutcomes } from '../sweeper/waitingMessages.js';

/**
 * Issue 15 §1 and §5: `failed`, `dead` and `unknown` wait for an operator with no TTL, and their
 * alarms stay on while any exists. An operator who decides to leave one as it is (runbook §2) says so
 * with `postdate messages discard`: the message keeps its status — nobody learns a send happened that
 * was not proven — stops waiting (out of the gauge), and only now does its TTL start, for its body too.
 */
const RETENTION_DAYS = 30;

async function setUp() {
  const t0 = wholeSecondNow();
  const now = seconds(t0, 60);
  const { tableName } = await freshTable();
  const documents = documentClient();
  const deps: MessagesDeps = {
    documents,
    tableName,
    store: new DynamoApiStore(documents, tableName),
    now: () => now,
    tenants: async () => ['acme'],
    retentionDays: RETENTION_DAYS,
    maxAttempts: 8,
    messageIdDomain: 'mail.example.com',
  };
  const body = async (id: string) =>
    (await documents.send(new GetCommand({ TableName: tableName, Key: { pk: messagePk(id), sk: 'BODY' } })))
      .Item;
  const waiting = async () => (await countWaiting(new DynamoDueIndex(documents, tableName), 16)).counts;
  return { deps, now, endedAs: senderOutcomes(tableName, t0), body, waiting };
}

describe('postdate messages discard', () => {
  it('takes failed, dead and unknown messages out of the waiting gauge and starts their TTL and their bodies’', async () => {
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const unknown = await t.endedAs('unknown');
    const failed = await t.endedAs('failed');
    expect(await t.waiting()).toEqual({ failed: 1, dead: 1, unknown: 1 });
    expect((await t.body(dead.id))?.expires_at).toBeUndefined();

    const report = await messagesDiscard(t.deps, [dead.id, unknown.id, failed.id], memoryOutput());

    expect(report.ok).toBe(true);
    expect(report.results.map((row) => [row.outcome, row.status, row.rev])).toEqual([
      ['discarded', 'dead', 1],
      ['discarded', 'unknown', 1],
      ['discarded', 'failed', 1],
    ]);
    expect(await t.waiting()).toEqual({ failed: 0, dead: 0, unknown: 0 });
    const expiresAt = Math.floor(t.now.getTime() / 1000) + RETENTION_DAYS * 86_400;
    for (const message of [dead, unknown, failed]) {
      const state = await readState(t.deps, message.id);
      expect(state).toMatchObject({
        status: message.status,
        expires_at: expiresAt,
        discarded_at: t.now.toISOString(),
      });
      expect(state?.due_pk).toBeUndefined();
      expect((await t.body(message.id))?.expires_at).toBe(expiresAt);
    }
  });

  it('refuses a message that does not wait for an operator, or was discarded already, and changes nothing', async () => {
    const t = await setUp();
    const sent = await t.endedAs('sent');
    const dead = await t.endedAs('dead');
    await messagesDiscard(t.deps, [dead.id], memoryOutput());
    const before = [await readState(t.deps, sent.id), await readState(t.deps, dead.id)];

    const report = await messagesDiscard(
      t.deps,
      [sent.id, dead.id, 'm0000000000000000000000404'],
      memoryOutput(),
    );

    expect(report.ok).toBe(false);
    expect(report.results.map((row) => row.outcome)).toEqual(['conflict', 'conflict', 'not-found']);
    expect(report.results[0]?.reason).toBe(
      'it is sent: discard takes a failed, dead or unknown message that still waits for an operator',
    );
    expect([await readState(t.deps, sent.id), await readState(t.deps, dead.id)]).toEqual(before);
  });

  it('says why a failed, dead or unknown message is not discarded: discarded already, or a test message nobody waits for', async () => {
    // A reason that names the message's own status as one discard takes ("it is dead: discard takes
    // a failed, dead or unknown message …") leaves the operator guessing; it must say what is so.
    const t = await setUp();
    const dead = await t.endedAs('dead');
    const testUnknown = await t.endedAs('unknown', { tenant: 'acme.test' });
    await messagesDiscard(t.deps, [dead.id], memoryOutput());

    const report = await messagesDiscard(t.deps, [dead.id, testUnknown.id], memoryOutput());

    expect(report.results.map((row) => [row.outcome, row.status])).toEqual([
      ['conflict', 'dead'],
      ['conflict', 'unknown'],
    ]);
    expect(report.results[0]?.reason).toBe(
      `it is dead and was discarded already at ${t.now.toISOString()}: nothing to do (postdate messages retry sends it again)`,
    );
    expect(report.results[1]?.reason).toBe(
      'it is unknown on a test side, where nobody waits for an operator: its retention runs already, nothing to discard',
    );
  });

  it('finishes the body’s TTL on the next discard when the first one’s body write failed (decision 0145)', async () => {
    const t = await setUp();
    const failed = await t.endedAs('failed');
    const faulty = bodyUpdatesFailing(1);
    const deps = { ...t.deps, store: new DynamoApiStore(faulty.documents, t.deps.tableName) };
    await expect(messagesDiscard(deps, [failed.id], memoryOutput())).rejects.toThrow('throttled');
    const expiresAt = Math.floor(t.now.getTime() / 1000) + RETENTION_DAYS * 86_400;
    expect(await readState(t.deps, failed.id)).toMatchObject({ status: 'failed', expires_at: expiresAt });
    expect((await t.body(failed.id))?.expires_at).toBeUndefined();

    // The operator runs it again: discarded already, and the body now goes with its record.
    const again = await messagesDiscard(deps, [failed.id], memoryOutput());
    expect(again.results.map((row) => row.outcome)).toEqual(['conflict']);
    expect((await t.body(failed.id))?.expires_at).toBe(expiresAt);
  });

  it('still lets an operator retry a discarded message later, and the retry takes the TTLs off again', async () => {
    const t = await setUp();
    const unknown = await t.endedAs('unknown');
    await messagesDiscard(t.deps, [unknown.id], memoryOutput());

    const report = await messagesRetry(t.deps, [unknown.id], memoryOutput());

    expect(report.results.map((row) => [row.outcome, row.status, row.rev])).toEqual([
      ['retried', 'scheduled', 2],
    ]);
    const state = await readState(t.deps, unknown.id);
    expect(state?.expires_at).toBeUndefined();
    expect((await t.body(unknown.id))?.expires_at).toBeUndefined();
    expect(state?.due_pk).toMatch(/^due#\d+$/);
  });
});
