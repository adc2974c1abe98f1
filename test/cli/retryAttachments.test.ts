/**
 * `postdate messages retry` of a message whose attachments are gone (decision 0130): the same refusal
 * as `POST /v1/messages/{id}/retry` — nothing changes — and the row says which files and what to do.
 * DynamoDB Local and the S3 emulator; the message is enqueued through the api.
 */
import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MessagesDeps, messagesRetry, readState } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import { apiHarness } from '../api/apiHarness.js';
import { enqueueEvent, validBody } from '../api/events.js';
import { LOCAL_AWS } from '../support/awsLocal.js';

let emulator: S3Emulator;
beforeAll(async () => {
  emulator = await startS3Emulator({ port: 0, bucket: `cli-${randomBytes(4).toString('hex')}` });
});
afterAll(async () => {
  await emulator?.stop();
});

describe('postdate messages retry', () => {
  it('leaves a failed message whose attachment is gone as it is, and says which file and what to do', async () => {
    const client = attachmentS3Client(emulator.endpoint, LOCAL_AWS);
    const attachments = new S3AttachmentStore({ bucket: emulator.bucket, client });
    const api = await apiHarness({ attachments });
    const content = Buffer.from('%PDF-1').toString('base64');
    const enqueued = await api.call(
      enqueueEvent(validBody({ attachments: [{ filename: 'invoice.pdf', content }] }), { key: 'cli-gone' }),
    );
    const id = String(enqueued.json.id);
    await api.documents.send(
      new UpdateCommand({
        TableName: api.tableName,
        Key: { pk: messagePk(id), sk: 'STATE' },
        UpdateExpression: 'SET #status = :failed',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':failed': 'failed' },
      }),
    );
    const listed = await client.send(new ListObjectsV2Command({ Bucket: emulator.bucket }));
    for (const object of listed.Contents ?? [])
      await client.send(new DeleteObjectCommand({ Bucket: emulator.bucket, Key: object.Key }));
    const deps: MessagesDeps = {
      documents: api.documents,
      tableName: api.tableName,
      store: api.store,
      attachments,
      now: api.clock.now,
      tenants: async () => ['acme'],
      retentionDays: 30,
      maxAttempts: 8,
      messageIdDomain: 'mail.example.com',
    };
    const out = memoryOutput();

    const report = await messagesRetry(deps, [id], out);

    expect(report.ok).toBe(false);
    expect(report.results).toEqual([
      {
        id,
        outcome: 'attachments-gone',
        status: 'failed',
        rev: 1,
        reason: expect.stringMatching(/attachment 0 .*no longer stored.*new message/),
      },
    ]);
    expect(out.text()).toContain('attachments-gone');
    expect(await readState(deps, id)).toMatchObject({ status: 'failed', rev: 1 });
  });
});
