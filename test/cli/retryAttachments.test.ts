/**
 * `postdate messages retry` of a message whose attachments are gone (decision 0130): the same refusal
 * as `POST /v1/messages/{id}/retry` — nothing changes — and the row says which files and what to do.
 * DynamoDB Local and the S3 emulator; the message is enqueued through the api.
 */
import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type MessagesDeps, messagesRetry, readState } from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { messagesDeps } from '../../cli/postdate.js';
import { targetFromStack } from '../../cli/stackTarget.js';
import { openTarget } from '../../cli/target.js';
import { attachmentS3Client, S3AttachmentStore } from '../../lambdas/adapters/S3AttachmentStore.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { type S3Emulator, startS3Emulator } from '../../local/s3Emulator.js';
import type { StackFile } from '../../local/stackFile.js';
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

/** A `failed` message enqueued with one attachment through the api, whose file is then gone. */
async function failedWithItsAttachmentGone(s3: S3Emulator = emulator) {
  const client = attachmentS3Client(s3.endpoint, LOCAL_AWS);
  const attachments = new S3AttachmentStore({ bucket: s3.bucket, client });
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
  const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  for (const object of listed.Contents ?? [])
    await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: object.Key }));
  return { api, attachments, id };
}

describe('postdate messages retry', () => {
  it('leaves a failed message whose attachment is gone as it is, and says which file and what to do', async () => {
    const { api, attachments, id } = await failedWithItsAttachmentGone();
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

  it('with --stack, checks the bucket the stack names (its output AttachmentBucketName), with no variable set', async () => {
    const { api, id } = await failedWithItsAttachmentGone();
    // The stack's S3 is the emulator here; the SDK reads the endpoint and the keys as in AWS.
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    vi.stubEnv('POSTDATE_ATTACHMENT_BUCKET', undefined);
    try {
      const stack = {
        stackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Postdate/1',
        outputs: { TableName: api.tableName, AttachmentBucketName: emulator.bucket },
      };
      const resolved = targetFromStack('Postdate', stack, {}, { AWS_ENDPOINT_URL_S3: emulator.endpoint });
      const target = openTarget(resolved.options, resolved.env);
      const config = loadConfig({}, 'local');
      const deps: MessagesDeps = {
        ...messagesDeps({ target, config, now: api.clock.now }),
        // The table is DynamoDB Local's, not the stack's region's.
        documents: api.documents,
        store: api.store,
        tenants: async () => ['acme'],
      };

      const report = await messagesRetry(deps, [id], memoryOutput());

      expect(report.results.map((result) => result.outcome)).toEqual(['attachments-gone']);
      expect(await readState(deps, id)).toMatchObject({ status: 'failed', rev: 1 });
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('without a bucket to check, leaves a message with attachments as it is, and says what to pass', async () => {
    const { api, id } = await failedWithItsAttachmentGone();
    const deps: MessagesDeps = {
      documents: api.documents,
      tableName: api.tableName,
      store: api.store,
      attachments: undefined,
      now: api.clock.now,
      tenants: async () => ['acme'],
      retentionDays: 30,
      maxAttempts: 8,
      messageIdDomain: 'mail.example.com',
    };

    const report = await messagesRetry(deps, [id], memoryOutput());

    expect(report.ok).toBe(false);
    expect(report.results).toEqual([
      {
        id,
        outcome: 'attachments-unchecked',
        status: 'failed',
        rev: 1,
        reason: expect.stringMatching(/--stack.*POSTDATE_ATTACHMENT_BUCKET/),
      },
    ]);
    expect(await readState(deps, id)).toMatchObject({ status: 'failed', rev: 1 });
  });

  it("locally, checks the local stack's bucket on the S3 emulator its file names, with no variable set", async () => {
    // The local stack's own bucket, on an emulator of its own (as `npm start` runs it).
    const local = await startS3Emulator({ port: 0 });
    try {
      const { api, id } = await failedWithItsAttachmentGone(local);
      const running: StackFile = {
        pid: 1,
        startedAt: new Date().toISOString(),
        apiUrl: 'http://127.0.0.1:1',
        mailViewerUrl: null,
        dynamodbEndpoint: 'http://127.0.0.1:2',
        sqsEndpoint: 'http://127.0.0.1:3',
        schedulerEndpoint: 'http://127.0.0.1:4',
        smtpPort: null,
        s3Endpoint: local.endpoint,
      };
      const target = openTarget({}, {}, () => running);
      try {
        expect(target.refs.attachmentBucket).toBe(local.bucket);
        const deps: MessagesDeps = {
          ...messagesDeps({ target, config: loadConfig({}, 'local'), now: api.clock.now }),
          // The api harness's table, not the local stack's.
          documents: api.documents,
          tableName: api.tableName,
          store: api.store,
          tenants: async () => ['acme'],
        };

        const report = await messagesRetry(deps, [id], memoryOutput());

        expect(report.results.map((result) => result.outcome)).toEqual(['attachments-gone']);
        expect(await readState(deps, id)).toMatchObject({ status: 'failed', rev: 1 });
      } finally {
        target.dynamodb.destroy();
        target.sqs.destroy();
      }
    } finally {
      await local.stop();
    }
  });
});
