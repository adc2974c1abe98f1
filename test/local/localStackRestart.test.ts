import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lambdas/core/config.js';
import { createApiKey, revokeApiKey } from '../../lambdas/keys/apiKeys.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { DynamoSweepRecords } from '../../lambdas/store/sweepRecords.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';

const API_KEY = 'pd_local-stack-restart-key';
const OTHER_TENANT_KEY = 'pd_local-stack-restart-other-tenant';
const REVOKED_KEY = 'pd_local-stack-restart-revoked';

/** `POST /v1/messages` to ada@example.com, answered 202: the message's id. */
async function enqueue(stack: LocalStack, key: string, fields: Record<string, unknown>): Promise<string> {
  const enqueued = await fetch(`${stack.apiUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${API_KEY}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify({ to: ['ada@example.com'], ...fields }),
  });
  expect(enqueued.status).toBe(202);
  return ((await enqueued.json()) as { id: string }).id;
}

/** A data dir of the describe's own, and the stack running on it (stopped, and the dir removed, after). */
function onDataDir() {
  const stacks = {
    dataDir: mkdtempSync(join(tmpdir(), 'postdate-stack-')),
    config: loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local'),
    running: undefined as LocalStack | undefined,
  };
  afterAll(async () => {
    await stacks.running?.stop();
    rmSync(stacks.dataDir, { recursive: true, force: true });
  });
  return stacks;
}

describe('the local stack on a data dir', () => {
  const stacks = onDataDir();
  const { dataDir, config } = stacks;

  it('keeps the table, the API key and the messages across a restart on other ports', async () => {
    stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const first = stacks.running;
    const id = await enqueue(first, 'restart-spec-1', {
      subject: 'Kept',
      text: 'across restarts',
      send_at: new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString(),
    });
    await first.stop();
    stacks.running = undefined;

    stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const second = stacks.running;
    expect(second.apiUrl).not.toBe(first.apiUrl);
    expect(second.streamArn).toBe(first.streamArn);
    expect(second.apiKey).toBe(API_KEY);
    const read = await fetch(`${second.apiUrl}/v1/messages/${id}`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id, status: 'scheduled' });
    expect((await fetch(`${second.apiUrl}/health`)).status).toBe(200);
  }, 120_000);

  it('refuses, naming POSTDATE_API_KEY and what to do, a key the kept data holds revoked or for another tenant', async () => {
    // The stack of the test above is still running on the data dir.
    stacks.running ??= await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const dynamodb = new DynamoDBClient({ ...LOCAL_AWS, endpoint: stacks.running.dynamodbEndpoint });
    const documents = DynamoDBDocumentClient.from(dynamodb);
    const now = new Date();
    await createApiKey(documents, stacks.running.tableName, {
      tenant: 'other',
      secret: OTHER_TENANT_KEY,
      now,
    });
    const revoked = await createApiKey(documents, stacks.running.tableName, {
      tenant: 'local',
      secret: REVOKED_KEY,
      now,
    });
    await revokeApiKey(documents, stacks.running.tableName, revoked.keyId, now);
    dynamodb.destroy();
    await stacks.running.stop();
    stacks.running = undefined;

    for (const [key, why] of [
      [OTHER_TENANT_KEY, /another tenant/],
      [REVOKED_KEY, /revoked/],
    ] as const) {
      const starting = startLocalStack({
        config: loadConfig({ POSTDATE_API_KEY: key }, 'local'),
        dataDir,
        ports: ANY_FREE_PORTS,
        quiet: true,
      });
      await expect(starting).rejects.toBeInstanceOf(ConfigError);
      await expect(starting).rejects.toThrow(/^POSTDATE_API_KEY: /);
      await expect(starting).rejects.toThrow(why);
      // What to do: another key, or none (a new one is generated).
      await expect(starting).rejects.toThrow(/unset POSTDATE_API_KEY/);
      await expect(starting).rejects.not.toThrow(key);
    }
  }, 180_000);
});

describe('the local stack restarted on a data dir, whose SQS emulator forgot every copy (decision 0180)', () => {
  const stacks = onDataDir();
  const { dataDir, config } = stacks;

  it('sends at once a message the sweeper had backed off for an hour: its copy was on the queue the restart emptied', async () => {
    // No sender: the message's copy waits on the queue, as behind a backlog.
    stacks.running = await startLocalStack({
      config,
      dataDir,
      ports: ANY_FREE_PORTS,
      quiet: true,
      sender: 'external',
    });
    const first = stacks.running;
    const id = await enqueue(first, 'restart-void-stamp-1', {
      subject: 'Backed off',
      text: 'then restarted',
    });

    // The sweeper's fifth re-dispatch of this stall, as it writes it: the next one an hour away.
    const dynamodb = new DynamoDBClient({ ...LOCAL_AWS, endpoint: first.dynamodbEndpoint });
    const documents = DynamoDBDocumentClient.from(dynamodb);
    const record = await readStateRecord(documents, first.tableName, id);
    if (record?.due_at === undefined) throw new Error('the message has no due entry');
    const now = new Date();
    const stamped = await new DynamoSweepRecords(documents, first.tableName).recordRedispatch({
      id,
      rev: record.rev,
      status: record.status,
      seenDueAt: record.due_at,
      nextDueAt: new Date(now.getTime() + 3600_000).toISOString(),
      sweepCount: 5,
      now,
    });
    expect(stamped).toBe('recorded');
    dynamodb.destroy();
    await first.stop();
    stacks.running = undefined;

    stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const second = stacks.running;
    await eventually(
      'the message sent after the restart',
      async () => {
        const read = await fetch(`${second.apiUrl}/v1/messages/${id}`, {
          headers: { authorization: `Bearer ${API_KEY}` },
        });
        return ((await read.json()) as { status: string }).status === 'sent';
      },
      { withinMs: 30_000, everyMs: 200 },
    );
    expect(second.smtpSink?.messages().filter((mail) => mail.postdateId === id)).toHaveLength(1);
  }, 120_000);
});

describe('the local stack restarted on a data dir: a copy the relay had queued with a delay is lost (decision 0264)', () => {
  const stacks = {
    dataDir: mkdtempSync(join(tmpdir(), 'postdate-stack-')),
    // The default grace (300 s): the restart must not cost a message it. Due within 70 s → the
    // queue with a delay; later → a schedule 10 s ahead, which the Scheduler emulator keeps on disk.
    config: loadConfig(
      {
        POSTDATE_API_KEY: API_KEY,
        POSTDATE_DIRECT_DELAY_MAX_SECONDS: '70',
        POSTDATE_SCHEDULE_LEAD_SECONDS: '10',
      },
      'local',
    ),
    running: undefined as LocalStack | undefined,
  };
  afterAll(async () => {
    await stacks.running?.stop();
    rmSync(stacks.dataDir, { recursive: true, force: true });
  });
  const { dataDir, config } = stacks;

  it('sends each on time, once: the delayed copy replaced with its remaining delay, the schedule firing beside it', async () => {
    stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const first = stacks.running;
    const sendAt = {
      queued: new Date(Date.now() + 60_000),
      scheduled: new Date(Date.now() + 80_000),
    };
    const queued = await enqueue(first, 'restart-lost-delay-1', {
      subject: 'Queued with a delay',
      text: 'then restarted',
      send_at: sendAt.queued.toISOString(),
    });
    const scheduled = await enqueue(first, 'restart-lost-delay-2', {
      subject: 'Scheduled',
      text: 'then restarted',
      send_at: sendAt.scheduled.toISOString(),
    });
    // The relay's copy waits, delayed, on the queue the restart empties.
    const sqs = new SQSClient({ ...LOCAL_AWS, endpoint: first.sqsEndpoint });
    await eventually(
      "the relay's delayed copy on the send queue",
      async () => {
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: first.queueUrls.send,
            AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
          }),
        );
        return Number(Attributes?.ApproximateNumberOfMessagesDelayed) >= 1;
      },
      { withinMs: 30_000, everyMs: 200 },
    );
    sqs.destroy();
    await first.stop();
    stacks.running = undefined;

    stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const second = stacks.running;
    expect(Date.now()).toBeLessThan(sendAt.queued.getTime());
    const mailsOf = (id: string) =>
      second.smtpSink?.messages().filter((mail) => mail.postdateId === id) ?? [];
    for (const [id, due] of [
      [queued, sendAt.queued],
      [scheduled, sendAt.scheduled],
    ] as const) {
      // At the sink by its time and a minute: the grace (300 s) is far behind that.
      const arrived = await eventually(`message ${id} at the sink`, () => mailsOf(id)[0]?.receivedAt, {
        withinMs: due.getTime() + 60_000 - Date.now(),
        everyMs: 250,
      });
      expect(Date.parse(arrived)).toBeGreaterThanOrEqual(due.getTime());
      expect(Date.parse(arrived) - due.getTime()).toBeLessThan(30_000);
    }
    // Every copy handed over, the late ones too: still one mail each.
    await second.idle();
    for (const id of [queued, scheduled]) expect(mailsOf(id)).toHaveLength(1);
  }, 400_000);
});

describe('the local stack restarted on its table, whose relay reads the stream from LATEST', () => {
  const stacks = onDataDir();
  const { dataDir, config } = stacks;

  // Two cold starts of the stack, one of them 5 s slower: 155 s on a machine loaded to 13.
  it('relays a reschedule made the moment it says ready, however slow the stream API', async () => {
    stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    const id = await enqueue(stacks.running, 'restart-latest-1', {
      subject: 'Moved up',
      text: 'right after the restart',
      send_at: new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString(),
    });
    await stacks.running.stop();
    stacks.running = undefined;

    // A busy DynamoDB Local: its stream API answers late, so the relay's place in the stream is taken
    // late. Said ready before it, the stack let the reschedule's record pass unseen: only the relay
    // dispatches it (the api copies an enqueue, not a reschedule), and the sweeper waits five minutes.
    const send = DynamoDBStreamsClient.prototype.send;
    DynamoDBStreamsClient.prototype.send = function (
      this: DynamoDBStreamsClient,
      ...args: Parameters<typeof send>
    ) {
      const wait = args[0] instanceof DescribeStreamCommand ? sleep(5000) : Promise.resolve();
      return wait.then(() => send.apply(this, args));
    } as typeof send;
    try {
      stacks.running = await startLocalStack({ config, dataDir, ports: ANY_FREE_PORTS, quiet: true });
    } finally {
      DynamoDBStreamsClient.prototype.send = send;
    }
    const stack = stacks.running;
    const moved = await fetch(`${stack.apiUrl}/v1/messages/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ send_at: new Date().toISOString() }),
    });
    expect(moved.status).toBe(200);
    await eventually(
      'the rescheduled message sent',
      async () => {
        const read = await fetch(`${stack.apiUrl}/v1/messages/${id}`, {
          headers: { authorization: `Bearer ${API_KEY}` },
        });
        return ((await read.json()) as { status: string }).status === 'sent';
      },
      { withinMs: 60_000, everyMs: 200 },
    );
  }, 300_000);
});
