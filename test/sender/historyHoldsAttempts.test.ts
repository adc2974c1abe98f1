/**
 * DESIGN §2 (`attempts` counts SMTP transactions the relay saw) and §3 (`GET /v1/messages/{id}`
 * answers `history`: the attempts, each with its per-recipient replies): an outcome that is no
 * attempt and does not end the message — a relay outage before MAIL FROM, the bucket unable to
 * answer for a file — updates `last_error` and leaves the capped history alone, so however long an
 * outage lasts the message's real attempts stay where an operator reads why it was retrying.
 * Real parts: DynamoDB Local, the SQS emulator, a scripted smtp-server, the S3 emulator, the api
 * handler.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { AttachmentStore } from '../../lambdas/ports/AttachmentStore.js';
import { HISTORY_LIMIT } from '../../lambdas/store/senderTransitions.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { refusedPort } from '../support/refusedPort.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  getThroughApi,
  type SenderRig,
  type SenderWorld,
  smtpMailer,
  startSenderWorld,
} from './senderHarness.js';

/** The genuine attempt: the relay read the whole message, then deferred it. */
const DEFERRED = { afterData: { code: 451, message: '4.3.0 Temporary local problem, try again later' } };
/** More outcomes than the history keeps. */
const OUTAGE_TRIES = HISTORY_LIMIT + 2;

let world: SenderWorld;
let emulator: S3Emulator;
let bucket: S3AttachmentStore;

beforeAll(async () => {
  world = await startSenderWorld();
  emulator = await startS3Emulator({ port: 0, bucket: `hst-${randomBytes(4).toString('hex')}` });
  bucket = new S3AttachmentStore({
    bucket: emulator.bucket,
    client: attachmentS3Client(emulator.endpoint, LOCAL_AWS),
  });
});
afterAll(async () => {
  await world?.close();
  await emulator?.stop();
});

/** The message as its user reads it: `GET /v1/messages/{id}`. */
async function viewOf(rig: SenderRig, id: string) {
  const answer = await getThroughApi(world, id, rig.clock.now);
  expect(answer.status).toBe(200);
  return answer.json as {
    status: string;
    attempts: number;
    relay: string | null;
    last_error: { class: string; code: string | null } | null;
    history: { outcome: string; code: string | null; relay?: string }[];
  };
}

/** Receives the message's one copy and runs it through `handler`, the copy back at once (backoff 0 s). */
async function tryOnce(rig: SenderRig, handler: SenderRig['handler']) {
  const records = await rig.receive({ max: 1, waitSeconds: 3 });
  expect(records).toHaveLength(1);
  await rig.run(records, handler);
}

describe('the history holds the attempts', () => {
  it('keeps the relay’s 451 through more outages than the history holds; each outage is only the last error', async () => {
    const rig = await createSenderRig(world); // random 0: every backoff 0 s
    world.smtp.script(DEFERRED, {});
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await rig.deliverNext();
    const deferred = await viewOf(rig, message.id);
    expect(deferred).toMatchObject({ status: 'retrying', attempts: 1, relay: 'default' });
    expect(deferred.history.map((entry) => [entry.outcome, entry.code])).toEqual([['transient', '451']]);

    // The relay goes away: nothing listens where the sender connects (refused before MAIL FROM).
    const down = smtpMailer({ host: '127.0.0.1', port: await refusedPort() });
    try {
      const outage = rig.newHandler({ mailer: down });
      for (let receive = 0; receive < OUTAGE_TRIES; receive++) await tryOnce(rig, outage);
    } finally {
      await down.close();
    }
    const waiting = await viewOf(rig, message.id);
    expect(waiting).toMatchObject({ status: 'retrying', attempts: 1, relay: 'default' });
    expect(waiting.last_error?.code).not.toBe('451');
    expect(waiting.history.map((entry) => [entry.outcome, entry.code])).toEqual([['transient', '451']]);

    // The relay is back: the second attempt joins the first.
    await rig.deliverNext();
    const sent = await viewOf(rig, message.id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 2, last_error: null });
    expect(sent.history.map((entry) => [entry.outcome, entry.code])).toEqual([
      ['transient', '451'],
      ['sent', '250'],
    ]);
  }, 60_000);

  it('keeps the 451 through more failed HEADs of an attachment (our storage down) than the history holds', async () => {
    const bytes = Buffer.from('%PDF-1.4\n%%EOF\n');
    const key = `messages/${TENANT}/m-${randomBytes(4).toString('hex')}/0-a`;
    await bucket.put(key, bytes, 'application/pdf');
    let storageDown = false;
    const attachments: Pick<AttachmentStore, 'describe' | 'open'> = {
      describe: async (asked) => {
        if (storageDown)
          throw Object.assign(new Error('Service Unavailable'), {
            name: 'ServiceUnavailable',
            $metadata: { httpStatusCode: 503 },
          });
        return bucket.describe(asked);
      },
      open: (asked) => bucket.open(asked),
    };
    const rig = await createSenderRig(world, { attachments });
    world.smtp.script(DEFERRED, {});
    const message = await rig.putMessage({
      attachments: [
        {
          filename: 'a.pdf',
          content_type: 'application/pdf',
          size: bytes.length,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          key,
        },
      ],
    });
    await rig.dispatch(message);
    await rig.deliverNext();

    storageDown = true;
    for (let receive = 0; receive < OUTAGE_TRIES; receive++) await tryOnce(rig, rig.handler);
    const waiting = await viewOf(rig, message.id);
    expect(waiting).toMatchObject({ status: 'retrying', attempts: 1, last_error: { class: 'transient' } });
    expect(waiting.last_error?.code).not.toBe('451');
    expect(waiting.history.map((entry) => [entry.outcome, entry.code])).toEqual([['transient', '451']]);

    storageDown = false;
    await rig.deliverNext();
    const sent = await viewOf(rig, message.id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 2 });
    expect(sent.history.map((entry) => [entry.outcome, entry.code])).toEqual([
      ['transient', '451'],
      ['sent', '250'],
    ]);
  }, 60_000);
});
