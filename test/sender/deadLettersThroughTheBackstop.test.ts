import { ListMessageMoveTasksCommand, StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { dlqRedrive } from '../../cli/dlqCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { SqsCopyVisibility } from '../../lambdas/adapters/SqsCopyVisibility.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import { wireSweeper } from '../../lambdas/sweeper/handler.js';
import { LOCAL_AWS, queueDepth, sqsClient } from '../support/awsLocal.js';
import { eventually } from '../support/eventually.js';
import { createSenderRig, type SenderRig, type SenderWorld, startSenderWorld } from './senderHarness.js';

/**
 * DESIGN §2: `dead` — "its copy sits in the DLQ … until redrive"; §5 "Dead means dead": the sender
 * moves the copy to the DLQ itself, the queue's `maxReceiveCount` is only a backstop, and "a DLQ
 * redrive (console or CLI) sends it again". That holds for every dead message, also one whose copy
 * the backstop moved because the DLQ refused every one of the sender's moves: whatever that copy
 * carries, an operator's redrive of the DLQ — the console's, which moves copies back unchanged, or
 * the CLI's — gives the message one fresh set of attempts, once the sweeper has run as it does every
 * few minutes. Real parts: DynamoDB Local, the SQS emulator (its redrive policy is the backstop, its
 * move task the console's redrive), smtp-server, the sender and the sweeper as Lambda wires them.
 */

const TRANSIENT_AFTER_DATA = { afterData: { code: 451, message: '4.3.0 Try again later' } } as const;

/** A DLQ that refuses every SendMessage (an outage of it, a broken key policy) for as long as it is used. */
const refusingDeadLetters: DispatchQueue = { enqueue: async (copies) => ({ failed: [...copies] }) };

/** The console's "Start DLQ redrive" to the send queue: SQS's own move task, copies moved unchanged. */
async function consoleRedrive(rig: SenderRig): Promise<void> {
  const sqs = sqsClient();
  await sqs.send(
    new StartMessageMoveTaskCommand({ SourceArn: rig.arns.sendDeadLetter, DestinationArn: rig.arns.send }),
  );
  await eventually(
    'the DLQ redrive to have completed',
    async () => {
      const { Results } = await sqs.send(
        new ListMessageMoveTasksCommand({ SourceArn: rig.arns.sendDeadLetter, MaxResults: 1 }),
      );
      return Results?.[0]?.Status === 'COMPLETED';
    },
    { withinMs: 20_000, everyMs: 200 },
  );
}

/** `postdate dlq redrive --ids <id>`: the CLI's receive, send, delete. */
async function cliRedrive(rig: SenderRig, id: string): Promise<void> {
  const report = await dlqRedrive(
    {
      sqs: sqsClient(),
      dlqUrl: rig.urls.sendDeadLetter,
      sendQueueUrl: rig.urls.send,
      now: () => new Date(),
      waitSeconds: 0,
      table: { documents: rig.world.documents, tableName: rig.world.tableName },
    },
    { ids: [id] },
    memoryOutput(),
  );
  expect(report).toMatchObject({ mode: 'ids', notFound: [] });
}

/**
 * Runs every copy on the send queue through `handler` until the DLQ holds a copy: the sender keeps
 * a dead copy it could not move, and the backstop moves it after its last allowed receive.
 */
async function untilTheBackstopMoves(rig: SenderRig, handler: ReturnType<SenderRig['newHandler']>) {
  await eventually(
    'the backstop to move the copy to the DLQ',
    async () => {
      const copies = await rig.receive({ waitSeconds: 0, max: 1 });
      if (copies.length > 0) await rig.run(copies, handler);
      return (await queueDepth(sqsClient(), rig.urls.sendDeadLetter)).visible > 0;
    },
    { withinMs: 30_000, everyMs: 10 },
  );
  expect(await rig.depth()).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
}

/**
 * A sender whose every move to the DLQ is refused. Each copy it keeps is visible again at once,
 * standing in for the few seconds it hides one (SQS keeps real time; the backstop counts receives).
 */
function refusingSender(rig: SenderRig): ReturnType<SenderRig['newHandler']> {
  const visibility = new SqsCopyVisibility(sqsClient(), rig.urls.send);
  return rig.newHandler({
    deadLetters: refusingDeadLetters,
    visibility: { change: (receipt) => visibility.change(receipt, 0) },
  });
}

/** The sweeper's run a while after the death (it runs every few minutes), as its Lambda entry wires it. */
async function sweepLater(rig: SenderRig, minutes: number): Promise<void> {
  const env = {
    AWS_REGION: LOCAL_AWS.region,
    AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    POSTDATE_LOCAL: 'true',
    POSTDATE_TABLE_NAME: rig.world.tableName,
    POSTDATE_SEND_QUEUE_URL: rig.urls.send,
    POSTDATE_SEND_DLQ_URL: rig.urls.sendDeadLetter,
  };
  const silent = { info: () => {}, warn: () => {}, error: () => {} };
  const later = () => new Date(Date.now() + minutes * 60_000);
  await wireSweeper(env, silent as never, { count: () => undefined }, later)();
  // A walk of the DLQ hides its copies while it lasts and releases them at its end.
  await eventually(
    'every copy in the DLQ visible again',
    async () => (await queueDepth(sqsClient(), rig.urls.sendDeadLetter)).inFlight === 0,
    { withinMs: 10_000 },
  );
}

/** Delivers every copy on the send queue to the sender, until none is left. */
async function drain(rig: SenderRig): Promise<void> {
  for (;;) {
    const copies = await rig.receive({ waitSeconds: 2, max: 10 });
    if (copies.length === 0) return;
    await rig.run(copies);
  }
}

describe('a dead message whose copy reached the DLQ through the send queue backstop', () => {
  // A table of its own for each case: the sweeper counts every dead message in it.
  let world: SenderWorld;
  beforeEach(async () => {
    world = await startSenderWorld();
  });
  afterEach(async () => {
    await world.close();
  });

  const redrives = {
    console: (rig: SenderRig) => consoleRedrive(rig),
    'CLI (dlq redrive --ids)': (rig: SenderRig, id: string) => cliRedrive(rig, id),
  } as const;

  it.each(Object.entries(redrives))(
    'is sent again by a %s redrive after its second death, although the backstop moved the copy of the first redrive',
    async (_kind, redrive) => {
      const rig = await createSenderRig(world); // POSTDATE_MAX_ATTEMPTS = 3, backstop 19 receives
      world.smtp.script(TRANSIENT_AFTER_DATA);
      const message = await rig.putMessage();
      await rig.dispatch(message);
      for (let attempt = 0; attempt < 3; attempt++) await rig.deliverNext();
      expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 3 });

      // The operator redrives it; its fresh attempts fail too, and every move to the DLQ is refused.
      await redrive(rig, message.id);
      await untilTheBackstopMoves(rig, refusingSender(rig));
      expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 6 });
      expect(rig.received(message.id)).toHaveLength(6);

      // The sweeper runs meanwhile; the cause is fixed and the operator redrives the DLQ again.
      await sweepLater(rig, 20);
      world.smtp.script();
      await redrive(rig, message.id);
      await drain(rig);

      // One fresh set of attempts, the first of which is accepted.
      expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 7, attempt_limit: 9 });
      expect(rig.received(message.id).map((received) => received.outcome)).toEqual([
        ...Array(6).fill('refused'),
        'accepted',
      ]);
      expect(await rig.depth(rig.urls.sendDeadLetter)).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
    },
    90_000,
  );

  it('is sent again by a console redrive after its first death, although the backstop moved the plain copy that made it dead', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(TRANSIENT_AFTER_DATA);
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await untilTheBackstopMoves(rig, refusingSender(rig));
    expect(await rig.state(message.id)).toMatchObject({ status: 'dead', attempts: 3 });

    await sweepLater(rig, 20);
    world.smtp.script();
    await consoleRedrive(rig);
    await drain(rig);

    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 4, attempt_limit: 6 });
    expect(rig.received(message.id).map((received) => received.outcome)).toEqual([
      ...Array(3).fill('refused'),
      'accepted',
    ]);
    expect(await rig.depth(rig.urls.sendDeadLetter)).toEqual({ stored: 0, inFlight: 0, delayed: 0 });
  }, 90_000);
});
