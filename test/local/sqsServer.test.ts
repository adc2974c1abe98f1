import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { createRequestHandler } from 'local-aws-sqs';
import { describe, expect, it } from 'vitest';
import { ANY_FREE_PORTS, PortInUseError, takenMeanwhile } from '../../local/localEnv.js';
import { startLocalSqs } from '../../local/sqsServer.js';
import { freshQueues, LOCAL_AWS, sqsClient } from '../support/awsLocal.js';

/**
 * Fresh queues whose send queue moves a message to its DLQ after exactly `maxReceiveCount`
 * receives: these tests pin the emulator's redrive, not the layout's backstop count.
 */
async function queuesRedrivingAfter(maxReceiveCount: number) {
  const queues = await freshQueues();
  await sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: queues.urls.send,
      Attributes: {
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: queues.arns.sendDeadLetter, maxReceiveCount }),
      },
    }),
  );
  return queues;
}

const sqs = sqsClient();

/** One ReceiveMessage with the system attributes; `visibility` seconds of invisibility. */
async function receive(queueUrl: string, options: { visibility?: number; wait?: number; max?: number } = {}) {
  const { Messages } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: options.max ?? 10,
      WaitTimeSeconds: options.wait ?? 0,
      VisibilityTimeout: options.visibility ?? 30,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return Messages ?? [];
}

/** Receives until `count` messages arrived or `rounds` long polls of 1 s came back short. */
async function receiveAtLeast(queueUrl: string, count: number, rounds = 5): Promise<Message[]> {
  const messages: Message[] = [];
  for (let round = 0; round < rounds && messages.length < count; round += 1) {
    messages.push(...(await receive(queueUrl, { wait: 1 })));
  }
  return messages;
}

const receiveCount = (message: Message | undefined) => message?.Attributes?.ApproximateReceiveCount;

describe('the SQS emulator (local-aws-sqs 2.0.2 with patches/local-aws-sqs+2.0.2.patch)', () => {
  it('does not count ChangeMessageVisibility as a receive', async () => {
    const { urls } = await freshQueues(8);
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'm' }));
    const [first] = await receive(urls.send);
    expect(receiveCount(first)).toBe('1');
    for (const seconds of [60, 30, 0]) {
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: urls.send,
          ReceiptHandle: first?.ReceiptHandle,
          VisibilityTimeout: seconds,
        }),
      );
    }
    const [second] = await receiveAtLeast(urls.send, 1);
    expect(receiveCount(second)).toBe('2');
    expect(second?.Attributes?.ApproximateFirstReceiveTimestamp).toBe(
      first?.Attributes?.ApproximateFirstReceiveTimestamp,
    );
  });

  it('moves a message to the DLQ after exactly maxReceiveCount receives, backoffs in between notwithstanding', async () => {
    const { urls, arns } = await queuesRedrivingAfter(3);
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'poison' }));
    const counts: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const [message] = await receiveAtLeast(urls.send, 1);
      counts.push(receiveCount(message) ?? '?');
      // the sender's pattern: a backoff, then (here) an early retry
      for (const seconds of [120, 0]) {
        await sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: urls.send,
            ReceiptHandle: message?.ReceiptHandle,
            VisibilityTimeout: seconds,
          }),
        );
      }
    }
    expect(counts).toEqual(['1', '2', '3']);
    const [dead] = await receiveAtLeast(urls.sendDeadLetter, 1);
    expect(dead?.Body).toBe('poison');
    expect(dead?.Attributes?.DeadLetterQueueSourceArn).toBe(arns.send);
    expect(await receive(urls.send, { wait: 1 })).toEqual([]);
  });

  it('leaves exactly the undeleted messages of a batch to come back, with their receive count raised', async () => {
    const { urls } = await freshQueues(8);
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: urls.send,
        Entries: ['a', 'b', 'c', 'd', 'e'].map((body) => ({ Id: body, MessageBody: body })),
      }),
    );
    const batch = await receiveAtLeast(urls.send, 5);
    expect(batch.map((m) => m.Body).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    const ok = batch.filter((m) => ['a', 'c', 'e'].includes(m.Body ?? ''));
    const { Successful, Failed } = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: urls.send,
        Entries: ok.map((m, index) => ({ Id: String(index), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
    expect(Successful).toHaveLength(3);
    expect(Failed ?? []).toEqual([]);
    for (const m of batch.filter((m) => !ok.includes(m))) {
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: urls.send,
          ReceiptHandle: m.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
    }
    const again = await receiveAtLeast(urls.send, 2);
    expect(again.map((m) => m.Body).sort()).toEqual(['b', 'd']);
    expect(again.map(receiveCount)).toEqual(['2', '2']);
  });

  it('answers a long poll as soon as a message is there, not when MaxNumberOfMessages are (as AWS)', async () => {
    const { urls } = await freshQueues(8);
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'one' }));
    const started = Date.now();
    const messages = await receive(urls.send, { wait: 20, max: 10 });
    expect(messages.map((m) => m.Body)).toEqual(['one']);
    // unpatched, the emulator holds the answer for the whole 20 s wait
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('counts in-flight messages as not visible only (ApproximateNumberOfMessages is what can be received)', async () => {
    const { urls } = await freshQueues(8);
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: urls.send,
        Entries: [
          { Id: '1', MessageBody: 'one' },
          { Id: '2', MessageBody: 'two' },
        ],
      }),
    );
    await receive(urls.send, { max: 1 });
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: urls.send,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(Attributes).toMatchObject({
      ApproximateNumberOfMessages: '1',
      ApproximateNumberOfMessagesNotVisible: '1',
    });
  });

  it('limits messages in flight, not messages waiting: a backlog of 120,000 is received (as AWS)', async () => {
    // AWS refuses a receive with OverLimit once ~120,000 messages of a standard queue are in flight
    // (received, not deleted); a queue may hold any number waiting. 2.0.2 counted the visible
    // ones against that quota. The backlog is put in-process: 120,000 sends over HTTP take minutes.
    const { service, requestHandler } = createRequestHandler({
      port: 0,
      hostname: '127.0.0.1',
      emulateQueueCreationLifecycle: false,
    });
    const server = createHttpServer(requestHandler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address();
    service.PORT = typeof address === 'object' && address ? address.port : 0;
    const client = new SQSClient({ ...LOCAL_AWS, endpoint: `http://127.0.0.1:${service.PORT}` });
    try {
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'backlog' }));
      const queue = service.Queues.find((one: { QueueName: string }) => one.QueueName === 'backlog');
      if (queue === undefined) throw new Error('the queue backlog was not created');
      for (let i = 0; i < 120_000; i += 1) queue.setRecord({ MessageBody: 'waiting' });
      const { Messages } = await client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      expect(Messages).toHaveLength(10);
    } finally {
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('honours DelaySeconds per message', async () => {
    const { urls } = await freshQueues(8);
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'later', DelaySeconds: 1 }));
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'now' }));
    expect((await receive(urls.send)).map((m) => m.Body)).toEqual(['now']);
    expect((await receiveAtLeast(urls.send, 1)).map((m) => m.Body)).toEqual(['later']);
  });

  it('redrives the DLQ back to its source queue with StartMessageMoveTask', async () => {
    const { urls, arns } = await queuesRedrivingAfter(1);
    await sqs.send(new SendMessageCommand({ QueueUrl: urls.send, MessageBody: 'redrive me' }));
    const [message] = await receiveAtLeast(urls.send, 1);
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: urls.send,
        ReceiptHandle: message?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    // wait until the message sits in the DLQ, then make it visible there again for the move task
    const [dead] = await receiveAtLeast(urls.sendDeadLetter, 1);
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: urls.sendDeadLetter,
        ReceiptHandle: dead?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const { TaskHandle } = await sqs.send(
      new StartMessageMoveTaskCommand({ SourceArn: arns.sendDeadLetter }),
    );
    expect(TaskHandle).toEqual(expect.any(String));

    const [back] = await receiveAtLeast(urls.send, 1);
    expect(back?.Body).toBe('redrive me');
    expect(receiveCount(back)).toBe('1');
    const { Results } = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: arns.sendDeadLetter }));
    expect(Results?.[0]).toMatchObject({
      SourceArn: arns.sendDeadLetter,
      ApproximateNumberOfMessagesMoved: 1,
    });
  });
});

describe('starting the SQS emulator on a port another program took after it was chosen', () => {
  it('rejects with the one line of a taken port, which npm start starts again on when it chose the port', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const address = blocker.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const error = await startLocalSqs({ port, host: '127.0.0.1' }).then(
        (sqs) => sqs.stop().then(() => new Error(`the SQS emulator started on ${port}, which is taken`)),
        (refused: unknown) => refused,
      );
      expect(error).toBeInstanceOf(PortInUseError);
      expect((error as Error).message).toBe(
        `port ${port} (the SQS emulator) is already in use: stop what holds it, or set POSTDATE_SQS_PORT to another port (0 picks any free port)`,
      );
      // local/start.ts: a port it chose (POSTDATE_SQS_PORT=0) is tried again; a fixed one ends the start.
      expect(takenMeanwhile(error, ANY_FREE_PORTS)?.port).toBe(port);
      expect(takenMeanwhile(error, { ...ANY_FREE_PORTS, sqs: port })?.port).toBeUndefined();
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});
