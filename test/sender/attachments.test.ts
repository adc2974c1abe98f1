/**
 * The sender streams a message's attachments from the bucket into the MIME message (DESIGN §13):
 * DynamoDB Local, the SQS emulator, the S3 emulator and a real smtp-server, the mail parsed back
 * with mailparser.
 */
import { createHash, randomBytes } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { StoredAttachment } from '../../lambdas/core/attachments.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  FAST_SMTP_TIMEOUTS,
  type SenderWorld,
  smtpMailer,
  startSenderWorld,
} from './senderHarness.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');

let world: SenderWorld;
let emulator: S3Emulator;
let store: S3AttachmentStore;

beforeAll(async () => {
  world = await startSenderWorld();
  emulator = await startS3Emulator({ port: 0, bucket: `snd-${randomBytes(4).toString('hex')}` });
  store = new S3AttachmentStore({
    bucket: emulator.bucket,
    client: attachmentS3Client(emulator.endpoint, LOCAL_AWS),
  });
});
afterAll(async () => {
  await world?.close();
  await emulator?.stop();
});

async function stored(name: string, contentType: string, bytes: Buffer): Promise<StoredAttachment> {
  const key = `messages/${TENANT}/m-${randomBytes(4).toString('hex')}/${name}`;
  await store.put(key, bytes, contentType);
  return { filename: name, content_type: contentType, size: bytes.length, sha256: sha256(bytes), key };
}

describe('the sender with attachments', () => {
  it('sends a PDF and a 2 MB file read from the bucket, byte-identical at the relay', async () => {
    const mailer = smtpMailer(world.smtp, { timeouts: { ...FAST_SMTP_TIMEOUTS, preDotMs: 30_000 } });
    try {
      const rig = await createSenderRig(world, { attachments: store, mailer });
      const big = randomBytes(2 * 1024 * 1024);
      const attachments = [
        await stored('Rechnung.pdf', 'application/pdf', PDF),
        await stored('data.bin', 'application/octet-stream', big),
      ];
      world.smtp.script();
      const message = await rig.putMessage({ attachments });
      await rig.dispatch(message);
      await rig.deliverNext();

      expect((await rig.state(message.id)).status).toBe('sent');
      const [received] = rig.received(message.id);
      const parsed = await simpleParser(received?.raw ?? '');
      expect(parsed.attachments.map((a) => ({ filename: a.filename, sha256: sha256(a.content) }))).toEqual([
        { filename: 'Rechnung.pdf', sha256: sha256(PDF) },
        { filename: 'data.bin', sha256: sha256(big) },
      ]);
    } finally {
      await mailer.close();
    }
  });

  it('never sends a message without its attachments: a sender with no bucket gives the claim back', async () => {
    const rig = await createSenderRig(world);
    const message = await rig.putMessage({ attachments: [await stored('a.pdf', 'application/pdf', PDF)] });
    await rig.dispatch(message);
    await rig.deliverNext();

    expect(rig.received(message.id)).toEqual([]);
    expect((await rig.state(message.id)).status).not.toBe('sent');
  });

  // DESIGN §2: the attachment is read after the relay's 354, inside a transaction the relay saw, so
  // the attempt counts; a missing object is the store's permanent verdict (AttachmentMissingError).
  it('fails a message whose attachment is gone from the bucket after one attempt, and delivers nothing', async () => {
    const rig = await createSenderRig(world, { attachments: store });
    const gone: StoredAttachment = {
      filename: 'gone.pdf',
      content_type: 'application/pdf',
      size: 10,
      sha256: 'x',
      key: `messages/${TENANT}/none/0`,
    };
    const message = await rig.putMessage({ attachments: [gone] });
    world.smtp.script();
    await rig.dispatch(message);
    await rig.deliverNext();

    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state).toMatchObject({ status: 'failed', attempts: 1 });
    expect(state.history.map((entry) => [entry.outcome, entry.code])).toEqual([['permanent', 'ESTREAM']]);
  });

  it('counts every attempt whose attachment cannot be read, and the message goes dead at the limit', async () => {
    // The bucket answers, but every read of the object fails (a network reset, S3 keeps failing).
    const unreadable = {
      open: async () => {
        throw new Error('the read was reset');
      },
    };
    const rig = await createSenderRig(world, { attachments: unreadable }); // POSTDATE_MAX_ATTEMPTS = 3, backoff 0 s
    const message = await rig.putMessage({ attachments: [await stored('a.pdf', 'application/pdf', PDF)] });
    world.smtp.script();
    const transactions = world.smtp.transactions;
    await rig.dispatch(message);
    for (let receive = 0; receive < 3; receive++) await rig.deliverNext();

    expect(rig.received(message.id)).toEqual([]);
    const state = await rig.state(message.id);
    expect(state).toMatchObject({ status: 'dead', attempts: 3 });
    expect(state.history.map((entry) => [entry.outcome, entry.code])).toEqual([
      ['transient', 'ESTREAM'],
      ['transient', 'ESTREAM'],
      ['transient', 'ESTREAM'],
    ]);
    expect(world.smtp.transactions - transactions).toBe(3);
  });
});
