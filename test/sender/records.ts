import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { newMessageId } from '../../lambdas/core/ids.js';
import { MESSAGE_STATUS, type MessageStatus } from '../../lambdas/core/messageStatus.js';
import { storedBodyItem } from '../../lambdas/store/bodyContent.js';
import {
  byStatusPk,
  byTenantPk,
  createdSortKey,
  duePk,
  groupHeadPk,
  type MessageBodyRecord,
  type MessageStateRecord,
  messagePk,
} from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';

/**
 * A small factory for the items the sender reads: a message's state and body, and a group head. The
 * sender's tests write them directly so they depend on nothing but the table layout.
 */

export const TENANT = 'tenant-a';

export interface MessageFixture {
  /** @default TENANT */
  readonly tenant?: string;
  readonly status?: MessageStatus;
  readonly rev?: number;
  readonly sendAt?: Date;
  readonly notAfter?: Date | null;
  readonly group?: { key: string; version: number } | null;
  readonly onAmbiguous?: 'retry' | 'hold';
  readonly attempts?: number;
  readonly leaseOwner?: string;
  readonly leaseUntil?: Date;
  readonly to?: readonly string[];
  readonly cc?: readonly string[];
  /** `rcpt_total` as the api writes it (the send rate's count, DESIGN §5 "Rate"); absent unless given. */
  readonly rcptTotal?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** The request fingerprint on the state record (the body's is always `fixture`). */
  readonly fingerprint?: string;
  /** Write no body item (a broken message). */
  readonly withoutBody?: boolean;
  /** @default { kind: 'test' } */
  readonly tags?: Readonly<Record<string, string>>;
  readonly text?: string;
  readonly html?: string | null;
  /**
   * How the body item stores text and html: `plain`, as items written before compression did (and
   * as the writers still do when compressing would not save), or as the writers store it now
   * (store/bodyContent.ts: compressed when that saves). @default 'plain'
   */
  readonly bodyForm?: 'plain' | 'as-written';
  /** The attachments on the state record (their bytes are the test's to put in the bucket). */
  readonly attachments?: MessageStateRecord['attachments'];
  /** The zone and quiet hours on the state record (docs/design.md §16). */
  readonly timeZone?: string;
  readonly quietHours?: MessageStateRecord['quiet_hours'];
}

export async function putMessage(
  documents: DynamoDBDocumentClient,
  tableName: string,
  now: Date,
  fixture: MessageFixture = {},
): Promise<MessageStateRecord> {
  const id = newMessageId(now.getTime(), Math.random);
  const createdAt = new Date(now.getTime() - 60_000).toISOString();
  const status = fixture.status ?? MESSAGE_STATUS.scheduled;
  const sendAt = (fixture.sendAt ?? new Date(now.getTime() - 1000)).toISOString();
  const terminal = !['scheduled', 'sending', 'retrying'].includes(status);
  const tenant = fixture.tenant ?? TENANT;
  const state: MessageStateRecord = {
    pk: messagePk(id),
    sk: ITEM_SORT_KEY.messageState,
    id,
    tenant,
    status,
    rev: fixture.rev ?? 1,
    send_at: sendAt,
    not_after:
      fixture.notAfter === undefined || fixture.notAfter === null ? null : fixture.notAfter.toISOString(),
    created_at: createdAt,
    updated_at: createdAt,
    attempts: fixture.attempts ?? 0,
    last_error: null,
    history: [],
    group: fixture.group ?? null,
    on_ambiguous: fixture.onAmbiguous ?? 'retry',
    tags: fixture.tags ?? { kind: 'test' },
    metadata: {},
    ...(fixture.fingerprint !== undefined ? { fingerprint: fixture.fingerprint } : {}),
    ...(fixture.attachments !== undefined ? { attachments: fixture.attachments } : {}),
    ...(fixture.timeZone !== undefined ? { time_zone: fixture.timeZone } : {}),
    ...(fixture.quietHours !== undefined ? { quiet_hours: fixture.quietHours } : {}),
    ...(fixture.leaseOwner !== undefined ? { lease_owner: fixture.leaseOwner } : {}),
    ...(fixture.rcptTotal !== undefined ? { rcpt_total: fixture.rcptTotal } : {}),
    ...(fixture.leaseUntil !== undefined ? { lease_until: fixture.leaseUntil.toISOString() } : {}),
    lst_pk: byStatusPk(tenant, status, id),
    lst_sk: createdSortKey(createdAt, id),
    tnt_pk: byTenantPk(tenant, id),
    tnt_sk: createdSortKey(createdAt, id),
    ...(terminal
      ? { expires_at: Math.floor(now.getTime() / 1000) + 86_400 }
      : { due_pk: duePk(id), due_at: sendAt }),
  };
  await documents.send(new PutCommand({ TableName: tableName, Item: state }));
  if (!fixture.withoutBody) {
    const body: MessageBodyRecord = {
      pk: messagePk(id),
      sk: ITEM_SORT_KEY.messageBody,
      fingerprint: 'fixture',
      created_at: createdAt,
      from: 'Ops <ops@example.com>',
      to: fixture.to ?? ['ada@example.org'],
      cc: fixture.cc ?? [],
      bcc: [],
      reply_to: null,
      subject: 'Campaign approved',
      text: fixture.text ?? 'Your campaign was approved.',
      html: fixture.html === undefined ? '<p>Your campaign was approved.</p>' : fixture.html,
      headers: fixture.headers ?? { 'X-Campaign': '42' },
    };
    const item = fixture.bodyForm === 'as-written' ? storedBodyItem(body) : body;
    await documents.send(new PutCommand({ TableName: tableName, Item: item }));
  }
  return state;
}

export async function putGroupHead(
  documents: DynamoDBDocumentClient,
  tableName: string,
  groupKey: string,
  version: number,
): Promise<void> {
  await documents.send(
    new PutCommand({
      TableName: tableName,
      Item: {
        [KEY.partition]: groupHeadPk(TENANT, groupKey),
        [KEY.sort]: ITEM_SORT_KEY.groupHead,
        version,
        updated_at: new Date().toISOString(),
      },
    }),
  );
}

/** The state record as stored now (consistent read). */
export async function readState(
  documents: DynamoDBDocumentClient,
  tableName: string,
  id: string,
): Promise<MessageStateRecord> {
  const { Item } = await documents.send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageState },
      ConsistentRead: true,
    }),
  );
  if (Item === undefined) throw new Error(`no state record for ${id}`);
  return Item as MessageStateRecord;
}
