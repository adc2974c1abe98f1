/**
 * The sender streams a message's attachments from the bucket into the MIME message (DESIGN §13):
 * DynamoDB Local, the SQS emulator, the S3 emulator and a real smtp-server, the mail parsed back
 * with mailparser.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import type { StoredAttachment } from '../../lambdas/core/attachments.js';
import { testSideOf } from '../../lambdas/core/testSide.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { LOCAL_AWS } from '../support/awsLocal.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  FAST_SMTP_TIMEOUTS,
  type SenderWorld,
  smtpMailer,
  startSenderWorld,
  TEST_SETTINGS,
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

/** An attachment whose object was never stored (or is gone). */
function gone(): StoredAttachment {
  return {
    filename: 'gone.pdf',
    content_type: 'application/pdf',
    size: 10,
    sha256: 'x',
    key: `messages/${TENANT}/none-${randomBytes(4).toString('hex')}/0`,
  };
}

async function stored(name: string, contentType: string, bytes: Buffer): Promise<StoredAttachment> {
  const key = `messages/${TENANT}/m-${randomBytes(4).toString('hex')}/${name}`;
  await store.put(key, bytes, contentType);
  return { filename: name, content_type: contentType, size: bytes.length, sha256: sha256(bytes), key };
}

/** The files the relay received in the message, by name and SHA-256 (parsed by mailparser). */
async function filesReceived(rig: Awaited<ReturnType<typeof createSenderRig>>, id: string) {
  const [received] = rig.received(id);
  const parsed = await simpleParser(received?.raw ?? '');
  return parsed.attachments.map((a) => ({ filename: a.filename, sha256: sha256(a.content) }));
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
      expect(await filesReceived(rig, message.id)).toEqual([
        { filename: 'Rechnung.pdf', sha256: sha256(PDF) },
        { filename: 'data.bin', sha256: sha256(big) },
      ]);
    } finally {
      await mailer.close();
    }
  });

  // DESIGN §13: the sender streams every file into the MIME message. A multipart type, which an
  // enqueue took before decision 0190, would make the part a container whose bytes no reader shows.
  it('delivers the bytes of a file stored with a multipart type (as an older enqueue took it)', async () => {
    const mailer = smtpMailer(world.smtp);
    try {
      const rig = await createSenderRig(world, { attachments: store, mailer });
      const message = await rig.putMessage({
        attachments: [await stored('bundle.bin', 'multipart/mixed', PDF)],
      });
      world.smtp.script();
      await rig.dispatch(message);
      await rig.deliverNext();

      expect((await rig.state(message.id)).status).toBe('sent');
      expect(await filesReceived(rig, message.id)).toEqual([{ filename: 'bundle.bin', sha256: sha256(PDF) }]);
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

  // DESIGN §2 and §5: an attempt is a transaction the relay saw. The sender asks the bucket for
  // every file before MAIL FROM, so a file that is gone ends the message as a missing body does:
  // `failed`, no attempt, no transaction (decision 0171).
  it('fails a message whose attachment is gone from the bucket without an attempt, and opens no transaction', async () => {
    const rig = await createSenderRig(world, { attachments: store });
    const message = await rig.putMessage({ attachments: [gone()] });
    world.smtp.script();
    const transactions = world.smtp.transactions;
    await rig.dispatch(message);
    await rig.deliverNext();

    expect(rig.received(message.id)).toEqual([]);
    expect(world.smtp.transactions - transactions).toBe(0);
    const state = await rig.state(message.id);
    expect(state).toMatchObject({ status: 'failed', attempts: 0, last_error: { class: 'permanent' } });
    expect(state.history.map((entry) => entry.outcome)).toEqual(['permanent']);
  });

  // DESIGN §5, "an outage is not the message's fault": our own storage down is no attempt, and a
  // message never goes `dead` over it however long it lasts (decision 0171).
  it('an S3 outage across more tries than the attempt limit leaves the message retrying, then it is sent once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'postdate-s3-outage-'));
    let bucket = await startS3Emulator({ port: 0, bucket: `out-${randomBytes(4).toString('hex')}`, dataDir });
    // One try per request: the SDK's own retries would only make each refused read slower.
    const client = attachmentS3Client(bucket.endpoint, { ...LOCAL_AWS, maxAttempts: 1 });
    const outage = new S3AttachmentStore({ bucket: bucket.bucket, client });
    let running = true;
    try {
      const key = `messages/${TENANT}/m-${randomBytes(4).toString('hex')}/0-a`;
      await outage.put(key, PDF, 'application/pdf');
      const attachment = {
        filename: 'a.pdf',
        content_type: 'application/pdf',
        size: PDF.length,
        sha256: sha256(PDF),
        key,
      };
      const rig = await createSenderRig(world, { attachments: outage }); // POSTDATE_MAX_ATTEMPTS = 3
      const message = await rig.putMessage({ attachments: [attachment] });
      world.smtp.script();
      const transactions = world.smtp.transactions;
      await bucket.stop();
      running = false;
      await rig.dispatch(message);
      for (let receive = 0; receive < TEST_SETTINGS.maxAttempts + 2; receive++) {
        await rig.deliverNext();
        const state = await rig.state(message.id);
        expect(state).toMatchObject({ status: 'retrying', attempts: 0 });
      }
      expect(world.smtp.transactions - transactions).toBe(0);

      bucket = await startS3Emulator({ port: bucket.port, bucket: bucket.bucket, dataDir });
      running = true;
      await rig.deliverNext();
      expect(await rig.state(message.id)).toMatchObject({ status: 'sent', attempts: 1 });
      expect(rig.received(message.id)).toHaveLength(1);
      expect(world.smtp.transactions - transactions).toBe(1);
    } finally {
      if (running) await bucket.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  // DESIGN §14: a test message goes through everything but the relay, so its files are read as a
  // live message's are, and a file that is gone ends it as it ends the live one.
  it('a test message whose file is gone ends as the live one does', async () => {
    const rig = await createSenderRig(world, { attachments: store });
    const live = await rig.putMessage({ attachments: [gone()] });
    const test = await rig.putMessage({ tenant: testSideOf(TENANT), attachments: [gone()] });
    for (const message of [live, test]) {
      await rig.dispatch(message);
      await rig.deliverNext();
    }
    const [liveState, testState] = [await rig.state(live.id), await rig.state(test.id)];
    expect(testState.status).toBe('failed');
    const outcome = (state: typeof liveState) => ({
      status: state.status,
      attempts: state.attempts,
      last_error: state.last_error,
      history: state.history.map((entry) => [entry.outcome, entry.code]),
    });
    expect(outcome(testState)).toEqual(outcome(liveState));
  });

  it('counts the attempt when a file that was there breaks after the relay’s 354, and the message goes dead at the limit', async () => {
    // The bucket answers for the file before MAIL FROM, but every read of its bytes fails (a reset
    // mid-stream): the relay saw the transaction, so each counts.
    const unreadable = {
      describe: (key: string) => store.describe(key),
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
  // DESIGN §13: a filename is written safe in a header (RFC 2231 for what is not ASCII), and the
  // recipient's reader gets the name the request gave (decision 0240).
  it('delivers each file under the very name it was given: accents, CJK, quotes, semicolons, percent signs, 255 characters', async () => {
    const mailer = smtpMailer(world.smtp);
    try {
      const rig = await createSenderRig(world, { attachments: store, mailer });
      const names = [
        'Rechnung März 2026.pdf',
        '請求書 2026年12月.pdf',
        'a "quoted" name.pdf',
        'a;b=c.pdf',
        "it's 100% paid*.pdf",
        `${'é'.repeat(251)}.pdf`,
        `${'x'.repeat(251)}.pdf`,
        '  spaced  name .pdf',
      ];
      const attachments = [];
      // Stored under short keys (the emulator's objects are files); the name is the record's.
      for (const [index, name] of names.entries())
        attachments.push({ ...(await stored(`${index}.pdf`, 'application/pdf', PDF)), filename: name });
      const message = await rig.putMessage({ attachments });
      world.smtp.script();
      await rig.dispatch(message);
      await rig.deliverNext();

      expect((await rig.state(message.id)).status).toBe('sent');
      expect((await filesReceived(rig, message.id)).map((file) => file.filename)).toEqual(names);
    } finally {
      await mailer.close();
    }
  });
});
