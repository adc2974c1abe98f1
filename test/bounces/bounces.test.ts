import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SNSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { newMessageId } from '../../lambdas/core/ids.js';
import { type Suppression, suppressionKey } from '../../lambdas/core/suppressions.js';
import { DynamoSuppressionList } from '../../lambdas/store/suppressionList.js';
import { lambdaContext } from '../../local/http/lambdaContext.js';
import { stateRecord } from '../cli/cliFixtures.js';
import { documentClient, freshTable, LOCAL_AWS } from '../support/awsLocal.js';
import {
  complaint,
  delivery,
  mailObject,
  permanentBounce,
  publishedBounceEvent,
  snsEvent,
  transientBounce,
} from './sesNotifications.js';

/**
 * DESIGN §12 on AWS: the function subscribed to the SES bounce and complaint topic adds `Permanent`
 * bounces (hard_bounce) and complaints (complaint) to the list of the tenant whose message it was —
 * found through the X-Postdate-Id (or our Message-ID) SES copies from the original headers — and
 * nothing else. The real entry point, wired from its environment, against DynamoDB Local.
 */

let tableName: string;
let list: DynamoSuppressionList;
let handle: (event: SNSEvent) => Promise<{ added: number; ignored: number }>;

async function sentMessage(tenant: string): Promise<string> {
  const id = newMessageId(Date.now(), Math.random);
  await documentClient().send(
    new PutCommand({
      TableName: tableName,
      Item: stateRecord({ id, tenant, status: 'sent', createdAt: new Date().toISOString() }),
    }),
  );
  return id;
}

const entries = async (tenant: string): Promise<readonly Suppression[]> =>
  (await list.list(tenant, { limit: 100, after: null })).items;

beforeAll(async () => {
  ({ tableName } = await freshTable('bounces'));
  list = new DynamoSuppressionList(documentClient(), tableName);
  vi.stubEnv('POSTDATE_LOCAL', 'true');
  vi.stubEnv('POSTDATE_TABLE_NAME', tableName);
  vi.stubEnv('POSTDATE_MESSAGE_ID_DOMAIN', 'mail.test');
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', inject('dynamodbEndpoint'));
  vi.stubEnv('AWS_REGION', LOCAL_AWS.region);
  vi.stubEnv('AWS_ACCESS_KEY_ID', LOCAL_AWS.credentials.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', LOCAL_AWS.credentials.secretAccessKey);
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'ERROR');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
  const { handler } = await import('../../lambdas/bounces/handler.js');
  handle = (event) => handler(event, lambdaContext('postdate-bounces', 10_000));
});

describe('the SES bounce and complaint function', () => {
  it("adds a permanent bounce's recipients to its message's tenant's list, normalised, with the message id", async () => {
    const id = await sentMessage('acme');
    const report = await handle(snsEvent(permanentBounce(id, ['Jane@Example.com', 'joe@example.com'])));
    expect(report).toEqual({ added: 2, ignored: 0 });
    expect(await entries('acme')).toEqual([
      { address: 'jane@example.com', reason: 'hard_bounce', message_id: id, created_at: expect.any(String) },
      { address: 'joe@example.com', reason: 'hard_bounce', message_id: id, created_at: expect.any(String) },
    ]);
  });

  it('adds a complaint with reason complaint, and keeps the first entry when one exists', async () => {
    const id = await sentMessage('globex');
    await handle(snsEvent(complaint(id, 'angry@example.net')));
    await handle(snsEvent(permanentBounce(id, ['angry@example.net'])));
    expect(await entries('globex')).toEqual([
      expect.objectContaining({ address: 'angry@example.net', reason: 'complaint', message_id: id }),
    ]);
  });

  it('adds nothing for a complaint of feedback type not-spam: SES reports a correction, not a complaint', async () => {
    const id = await sentMessage('stark');
    const abuse = complaint(id, 'happy@example.net');
    const notSpam = { ...abuse, complaint: { ...abuse.complaint, complaintFeedbackType: 'not-spam' } };
    expect(await handle(snsEvent(notSpam))).toEqual({ added: 0, ignored: 1 });
    expect(await entries('stark')).toEqual([]);
  });

  it('reads configuration-set event publishing (eventType) as well', async () => {
    const id = await sentMessage('initech');
    expect(await handle(snsEvent(publishedBounceEvent(id, 'gone@example.org')))).toEqual({
      added: 1,
      ignored: 0,
    });
    expect((await entries('initech')).map((entry) => entry.address)).toEqual(['gone@example.org']);
  });

  it('finds the message by its Message-ID of our domain when X-Postdate-Id is missing', async () => {
    const id = await sentMessage('umbrella');
    const notification = permanentBounce(id, ['old@example.com']);
    notification.mail.headers = notification.mail.headers.filter((header) => header.name !== 'X-Postdate-Id');
    await handle(snsEvent(notification));
    expect((await entries('umbrella')).map((entry) => entry.address)).toEqual(['old@example.com']);

    // Another domain's Message-ID is not ours: nothing is added.
    const foreign = {
      ...permanentBounce(id, ['other@example.com']),
      mail: mailObject(id, ['other@example.com'], 'else.where'),
    };
    foreign.mail.headers = foreign.mail.headers.filter((header) => header.name !== 'X-Postdate-Id');
    expect(await handle(snsEvent(foreign))).toEqual({ added: 0, ignored: 1 });
  });

  it('adds nothing for transient bounces, deliveries, mail without our headers, unknown messages or non-JSON', async () => {
    const id = await sentMessage('hooli');
    const withoutHeaders = permanentBounce(id, ['x@example.com']) as Record<string, unknown>;
    const { headers: _headers, commonHeaders: _common, ...bareMail } = mailObject(id, ['x@example.com']);
    withoutHeaders.mail = bareMail;
    const unknownMessage = permanentBounce(newMessageId(Date.now(), Math.random), ['y@example.com']);
    const report = await handle(
      snsEvent(
        transientBounce(id, 'full@example.com'),
        delivery(id, 'fine@example.com'),
        withoutHeaders,
        unknownMessage,
        'not json at all',
      ),
    );
    expect(report).toEqual({ added: 0, ignored: 5 });
    expect(await entries('hooli')).toEqual([]);
  });

  it('drops each malformed notification alone and still adds the good one in the same batch (decision 0256)', async () => {
    const id = await sentMessage('malformed-co');
    const good = permanentBounce(id, ['Real@Example.com']);
    const mail = good.mail;
    const report = await handle(
      snsEvent(
        'null',
        '[]',
        '"Bounce"',
        { notificationType: 'Bounce', bounce: null, mail },
        {
          notificationType: 'Bounce',
          bounce: { bounceType: 'Permanent', bouncedRecipients: 'x@example.com' },
          mail,
        },
        {
          notificationType: 'Bounce',
          bounce: {
            bounceType: 'Permanent',
            bouncedRecipients: [{ emailAddress: 5 }, { emailAddress: 'not an address' }],
          },
          mail,
        },
        {
          notificationType: 'Bounce',
          bounce: { bounceType: 'Undetermined', bouncedRecipients: [{ emailAddress: 'u@example.com' }] },
          mail,
        },
        { notificationType: 'Complaint', mail },
        { ...good, mail: { ...mail, headers: 'X-Postdate-Id', commonHeaders: null } },
        good,
      ),
    );
    expect(report).toEqual({ added: 1, ignored: 9 });
    expect(
      (await entries('malformed-co')).map((entry) => [entry.address, entry.reason, entry.message_id]),
    ).toEqual([['real@example.com', 'hard_bounce', id]]);
  });

  it("never adds to another tenant's list than the message's", async () => {
    const mine = await sentMessage('tenant-one');
    await sentMessage('tenant-two');
    await handle(snsEvent(permanentBounce(mine, ['only-mine@example.com'])));
    expect(await entries('tenant-two')).toEqual([]);
    expect(await list.suppressedAmong('tenant-one', ['only-mine@example.com'])).toEqual(
      new Set(['only-mine@example.com']),
    );
  });
  it('adds an internationalised domain under the key the sender looks its recipient up by, however SES spells it (decision 0153)', async () => {
    const id = await sentMessage('wayne');
    // SES saw the envelope the mailer punycoded, and reports it so.
    await handle(snsEvent(permanentBounce(id, ['ada@xn--bcher-kva.example'])));
    // A report that spells the domain in Unicode is the same mailbox: still one entry.
    await handle(snsEvent(complaint(id, 'Ada@Bücher.example')));
    expect(await entries('wayne')).toEqual([
      expect.objectContaining({
        address: 'ada@xn--bcher-kva.example',
        reason: 'hard_bounce',
        message_id: id,
      }),
    ]);
    // The sender reads the list by the recipient as the message spells it (sendClaimed.ts).
    const key = suppressionKey('Ada Lovelace <ada@bücher.example>') ?? '';
    expect(await list.suppressedAmong('wayne', [key])).toEqual(new Set([key]));
  });
});
