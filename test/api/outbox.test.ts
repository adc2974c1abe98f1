import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { messageIdFor } from '../../lambdas/core/ids.js';
import { type EnqueueRequest, LIMITS, parseEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { readGroupHeadVersion } from '../../lambdas/outbox/index.js';
import {
  buildOutboxTransactItems,
  buildOutboxWrite,
  OUTBOX_ITEM_INDEX,
  OutboxInputError,
} from '../../lambdas/outbox/outboxItems.js';
import { documentClient, freshTable, streamRecords } from '../support/awsLocal.js';
import { validBody } from './events.js';

const documents = documentClient();
const now = new Date('2026-11-29T18:00:00.000Z');
const validation = { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 };

function request(overrides: Record<string, unknown> = {}) {
  const parsed = parseEnqueueRequest(validBody(overrides), { ...validation, now });
  if (!parsed.ok) throw new Error(parsed.problem.detail);
  return parsed.value;
}

describe('the transactional outbox helper', () => {
  let tableName: string;
  let streamArn: string;
  beforeAll(async () => {
    ({ tableName, streamArn } = await freshTable('outbox'));
  });

  it('puts a business change and an email in one transaction; the message appears in the stream like any other', async () => {
    const write = buildOutboxWrite({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'order-7-approved',
      request: request({ send_at: '2026-12-01T09:00:00Z' }),
      now,
    });
    await documents.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName, Item: { pk: 'ORDER#7', sk: 'ORDER', status: 'approved' } } },
          ...write.items,
        ],
      }),
    );

    const records = await streamRecords(streamArn);
    const inserted = records
      .filter((record) => record.eventName === 'INSERT')
      .map((record) => `${record.dynamodb?.Keys?.pk?.S} ${record.dynamodb?.Keys?.sk?.S}`);
    expect(inserted).toEqual(
      expect.arrayContaining([
        'ORDER#7 ORDER',
        `MSG#${write.messageId} STATE`,
        `MSG#${write.messageId} BODY`,
      ]),
    );
    const state = records.find(
      (record) =>
        record.dynamodb?.Keys?.pk?.S === `MSG#${write.messageId}` && record.dynamodb?.Keys?.sk?.S === 'STATE',
    );
    // What the relay reads: a scheduled state record with rev 1, as an API enqueue writes it.
    expect(state?.dynamodb?.NewImage).toMatchObject({
      status: { S: 'scheduled' },
      rev: { N: '1' },
      tenant: { S: 'acme' },
      send_at: { S: '2026-12-01T09:00:00.000Z' },
    });
  });

  it('writes nothing when the business change fails its condition (all or nothing); the reasons say it was yours, and a retry goes', async () => {
    const items = buildOutboxTransactItems({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'order-8-approved',
      request: request(),
      now,
    });
    const order = { TableName: tableName, Key: { pk: 'ORDER#8', sk: 'ORDER' } };
    const mine = [{ ConditionCheck: { ...order, ConditionExpression: 'attribute_exists(pk)' } }];
    const error = await documents
      .send(new TransactWriteCommand({ TransactItems: [...mine, ...items] }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionCanceledException);
    // The outbox's items follow yours: at mine.length + OUTBOX_ITEM_INDEX, and none of them failed.
    const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
    expect(reasons.map((reason) => reason.Code)).toEqual(['ConditionalCheckFailed', 'None', 'None']);
    const records = await streamRecords(streamArn);
    expect(records.some((record) => record.dynamodb?.Keys?.pk?.S === items[0]?.Put?.Item?.pk)).toBe(false);
    // The same items, once the business condition holds, commit: the failed attempt used no key.
    await documents.send(
      new TransactWriteCommand({ TransactItems: [{ Put: { ...order, Item: order.Key } }] }),
    );
    await documents.send(new TransactWriteCommand({ TransactItems: [...mine, ...items] }));
    const state = await documents.send(
      new GetCommand({
        TableName: tableName,
        Key: items[0]?.Put?.Item ? { pk: items[0].Put.Item.pk, sk: items[0].Put.Item.sk } : {},
      }),
    );
    expect(state.Item?.status).toBe('scheduled');
  });

  it('makes a retried business transaction safe: the same idempotency key fails on the message records', async () => {
    const build = (at: Date) =>
      buildOutboxTransactItems({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'order-9-approved',
        request: request(),
        now: at,
      });
    await documents.send(new TransactWriteCommand({ TransactItems: build(now) }));
    // The retry runs later, as a retry does: the id comes from the key, not from the clock.
    const error = await documents
      .send(new TransactWriteCommand({ TransactItems: build(new Date(now.getTime() + 5_000)) }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionCanceledException);
    const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
    expect(reasons[OUTBOX_ITEM_INDEX.state]?.Code).toBe('ConditionalCheckFailed');
    expect(reasons[OUTBOX_ITEM_INDEX.body]?.Code).toBe('ConditionalCheckFailed');
  });

  it('derives the id from the tenant and the key: the same pair always, another tenant never', () => {
    const idOf = (tenant: string, idempotencyKey: string, at: Date) =>
      buildOutboxWrite({ tableName, tenant, idempotencyKey, request: request(), now: at }).messageId;
    const first = idOf('acme', 'order-10', now);
    expect(idOf('acme', 'order-10', new Date(now.getTime() + 60_000))).toBe(first);
    expect(idOf('globex', 'order-10', now)).not.toBe(first);
    expect(idOf('acme', 'order-11', now)).not.toBe(first);
    expect(first).toMatch(/^[a-z2-7]{26}$/);
  });

  it('takes as `request` only what parseEnqueueRequest returned: nothing built by hand, spread or changed skips the rules', () => {
    const parsed = request();
    const build = (value: unknown, key: string) => () =>
      buildOutboxWrite({ tableName, tenant: 'acme', idempotencyKey: key, request: value as never, now });
    // A header-injecting sender, past the type: DESIGN §3's rules would have refused it.
    const handMade = { ...parsed, from: 'ops@example.com\r\nBcc: eve@evil.test' };
    expect(build(handMade, 'hand-made')).toThrow(OutboxInputError);
    expect(build({ ...parsed }, 'spread')).toThrow(OutboxInputError);
    expect(build(parsed, 'as-parsed')).not.toThrow();
    // What was parsed cannot be changed afterwards.
    expect(() => Object.assign(parsed, { from: 'ceo@evil.test' })).toThrow(TypeError);
    expect(() => (parsed.to as string[]).push('eve@evil.test')).toThrow(TypeError);
    expect(() => Object.assign(parsed.headers, { Bcc: 'eve@evil.test' })).toThrow(TypeError);
    // The type says so too: a plain EnqueueRequest is not a parsed one.
    const plain: EnqueueRequest = parsed;
    const typed = () =>
      // @ts-expect-error a request that parseEnqueueRequest did not return, as far as the type knows
      buildOutboxWrite({ tableName, tenant: 'acme', idempotencyKey: 'typed', request: plain, now });
    expect(typed).not.toThrow();
  });

  it('validates a raw body with the API rules', () => {
    expect(() =>
      buildOutboxTransactItems({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'raw-1',
        body: { to: ['x@example.com\r\nBcc: y@evil.test'], subject: 's', text: 't' },
        validation,
        now,
      }),
    ).toThrow(OutboxInputError);
    const items = buildOutboxTransactItems({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'raw-2',
      body: validBody(),
      validation,
      now,
    });
    expect(items).toHaveLength(2);
  });

  it('refuses a body larger than POST /v1/messages takes (DESIGN §3: at most 256 KiB, 413), and writes nothing', async () => {
    // Just over the limit as the API measures a body: its JSON in UTF-8.
    const base = validBody({ html: '' });
    const html = 'x'.repeat(LIMITS.maxBodyBytes + 1 - Buffer.byteLength(JSON.stringify(base)));
    const oversized = { ...base, html };
    expect(Buffer.byteLength(JSON.stringify(oversized))).toBe(LIMITS.maxBodyBytes + 1);

    const parsed = parseEnqueueRequest(oversized, { ...validation, now });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatchObject({ status: 413, errors: [{ field: 'body' }] });
    let thrown: unknown;
    try {
      const items = buildOutboxTransactItems({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'too-large',
        body: oversized,
        validation,
        now,
      });
      await documents.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OutboxInputError);
    expect((thrown as OutboxInputError).problem?.status).toBe(413);
    const id = messageIdFor('acme', 'too-large');
    const stored = await documents.send(
      new GetCommand({ TableName: tableName, Key: { pk: `MSG#${id}`, sk: 'STATE' } }),
    );
    expect(stored.Item).toBeUndefined();
    // One byte less is a message.
    const fits = { ...base, html: html.slice(1) };
    expect(
      buildOutboxTransactItems({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'fits',
        body: fits,
        validation,
        now,
      }),
    ).toHaveLength(2);
  });

  describe('a message with attachments (DESIGN §4: exactly as if it came through the API)', () => {
    const pdf = Buffer.from('%PDF-1.4 invoice').toString('base64');
    const withFiles = {
      inline: [{ filename: 'invoice.pdf', content_type: 'application/pdf', content: pdf }],
      uploaded: [{ attachment_id: 'att_01jf6y8m3v3x1z6d2qk4n8r5tw' }],
    };

    /** What the helper throws for these inputs, or undefined when it builds items. */
    function refusal(input: Parameters<typeof buildOutboxTransactItems>[0]): OutboxInputError | undefined {
      try {
        buildOutboxTransactItems(input);
        return undefined;
      } catch (error) {
        if (error instanceof OutboxInputError) return error;
        throw error;
      }
    }

    it.each(Object.entries(withFiles))(
      'refuses %s attachments in a raw body, naming /attachments and the API to use instead',
      (kind, attachments) => {
        const error = refusal({
          tableName,
          tenant: 'acme',
          idempotencyKey: `files-${kind}`,
          body: validBody({ attachments }),
          validation,
          now,
        });
        // Never items that would send the mail without its files.
        expect(error).toBeInstanceOf(OutboxInputError);
        expect(error?.problem?.status).toBe(400);
        expect(error?.problem?.errors).toEqual([
          { field: '/attachments', message: expect.stringContaining('POST /v1/messages') },
        ]);
        expect(error?.message).toMatch(/attachments/);
      },
    );

    it.each(Object.entries(withFiles))(
      'refuses %s attachments in a parsed request too',
      (kind, attachments) => {
        const error = refusal({
          tableName,
          tenant: 'acme',
          idempotencyKey: `files-parsed-${kind}`,
          request: request({ attachments }),
          now,
        });
        expect(error).toBeInstanceOf(OutboxInputError);
        expect(error?.problem?.errors?.map((e) => e.field)).toEqual(['/attachments']);
      },
    );

    it('refuses stored attachments passed beside the request (the API input the helper cannot honour)', () => {
      const stored = [
        {
          filename: 'invoice.pdf',
          content_type: 'application/pdf',
          size: 16,
          sha256: 'a'.repeat(64),
          key: 'k',
        },
      ];
      const error = refusal({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'files-stored',
        request: request(),
        now,
        ...{ attachments: stored },
      });
      expect(error?.problem?.errors?.map((e) => e.field)).toEqual(['attachments']);
    });

    it('takes an empty attachments list: there is nothing to lose', () => {
      const items = buildOutboxTransactItems({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'files-none',
        body: validBody({ attachments: [] }),
        validation,
        now,
      });
      expect(items).toHaveLength(2);
    });
  });

  it("names the field of every mistake in `problem.errors`, as the API's problem+json does", () => {
    const base = { tableName, tenant: 'acme', idempotencyKey: 'field-named', request: request(), now };
    const fieldOf = (input: Record<string, unknown>) => {
      try {
        buildOutboxWrite(
          Object.fromEntries(
            Object.entries({ ...base, ...input }).filter(([, v]) => v !== undefined),
          ) as never,
        );
      } catch (error) {
        expect(error).toBeInstanceOf(OutboxInputError);
        const problem = (error as OutboxInputError).problem;
        expect(problem?.status).toBe(400);
        return problem?.errors?.map((e) => e.field);
      }
      throw new Error('not refused');
    };
    expect(fieldOf({ tenant: 'a#b' })).toEqual(['tenant']);
    expect(fieldOf({ idempotencyKey: '' })).toEqual(['idempotencyKey']);
    expect(fieldOf({ idempotencyKey: 'k\u00e9' })).toEqual(['idempotencyKey']);
    expect(fieldOf({ retentionDays: 0 })).toEqual(['retentionDays']);
    expect(fieldOf({ request: { ...request() } })).toEqual(['request']);
    // A raw body's mistakes are the API's own, JSON Pointers into the body.
    expect(fieldOf({ request: undefined, body: validBody({ subject: '' }), validation })).toEqual([
      '/subject',
    ]);
  });

  it('refuses a tenant that could break the key layout', () => {
    expect(() =>
      buildOutboxTransactItems({
        tableName,
        tenant: 'a#b',
        idempotencyKey: 'k',
        request: request(),
        now,
      }),
    ).toThrow(OutboxInputError);
  });

  it('writes a superseded message when given a higher group head, and checks that head', async () => {
    const raise = buildOutboxTransactItems({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'group-raise',
      request: request({ group: { key: 'g-outbox', version: 5 } }),
      now,
    });
    await documents.send(new TransactWriteCommand({ TransactItems: raise }));
    const head = await readGroupHeadVersion(documents, tableName, 'acme', 'g-outbox');
    expect(head).toBe(5);
    const stale = buildOutboxWrite({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'group-stale',
      request: request({ group: { key: 'g-outbox', version: 4 } }),
      now,
      groupHeadVersion: head,
    });
    expect(stale.state.status).toBe('superseded');
    await documents.send(new TransactWriteCommand({ TransactItems: stale.items }));
    // A head the caller made up is caught by the ConditionCheck.
    const forged = buildOutboxWrite({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'group-forged',
      request: request({ group: { key: 'g-outbox', version: 6 } }),
      now,
      groupHeadVersion: 99,
    });
    await expect(
      documents.send(new TransactWriteCommand({ TransactItems: forged.items })),
    ).rejects.toBeInstanceOf(TransactionCanceledException);
  });

  it('a head raised between the read and the transaction cancels it at the head item; read again and retried, the message is superseded (docs/api-resources.md)', async () => {
    const group = { key: 'g-race', version: 3 };
    await documents.send(
      new TransactWriteCommand({
        TransactItems: buildOutboxTransactItems({
          tableName,
          tenant: 'acme',
          idempotencyKey: 'race-first',
          request: request({ group: { ...group, version: 1 } }),
          now,
        }),
      }),
    );
    const mine = [
      { Put: { TableName: tableName, Item: { pk: 'ORDER#race', sk: 'ORDER', status: 'approved' } } },
    ];
    const attempt = async () => {
      const groupHeadVersion = await readGroupHeadVersion(documents, tableName, 'acme', group.key);
      const outbox = buildOutboxTransactItems({
        tableName,
        tenant: 'acme',
        idempotencyKey: 'race-approved',
        request: request({ group }),
        now,
        groupHeadVersion,
      });
      if (groupHeadVersion === 1) {
        // Another enqueue raises the head to 5 between this read and this write.
        await documents.send(
          new TransactWriteCommand({
            TransactItems: buildOutboxTransactItems({
              tableName,
              tenant: 'acme',
              idempotencyKey: 'race-paused',
              request: request({ group: { ...group, version: 5 } }),
              now,
            }),
          }),
        );
      }
      return documents.send(new TransactWriteCommand({ TransactItems: [...mine, ...outbox] }));
    };

    const cancelled = await attempt().catch((error: unknown) => error);
    expect(cancelled).toBeInstanceOf(TransactionCanceledException);
    const codes = ((cancelled as TransactionCanceledException).CancellationReasons ?? []).map((r) => r.Code);
    expect(codes[mine.length + OUTBOX_ITEM_INDEX.state]).not.toBe('ConditionalCheckFailed');
    expect(codes.slice(mine.length + OUTBOX_ITEM_INDEX.groupHead)).toContain('ConditionalCheckFailed');

    await attempt();
    const written = buildOutboxWrite({
      tableName,
      tenant: 'acme',
      idempotencyKey: 'race-approved',
      request: request({ group }),
      now,
    });
    const { Item } = await documents.send(
      new GetCommand({ TableName: tableName, Key: { pk: written.state.pk, sk: written.state.sk } }),
    );
    expect(Item?.status).toBe('superseded');
  });
});
