/**
 * Template messages in the sender (DESIGN §10), on DynamoDB Local, the SQS emulator and a real
 * smtp-server: the message is rendered at send time from the version its records pinned — not the
 * latest, and still after an archive — with html escaped; a message that cannot render is `failed`
 * with class `permanent` and a reason, and never retried.
 */
import { DeleteCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOutboxWrite, readOutboxTemplate } from '../../lambdas/outbox/index.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { ITEM_SORT_KEY, KEY } from '../../lambdas/store/tableLayout.js';
import { DynamoTemplateStore, templateVersionKey } from '../../lambdas/store/templateStore.js';
import { TENANT } from './records.js';
import {
  createSenderRig,
  expectFailedBeforeSmtp,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
} from './senderHarness.js';

describe('the sender with template messages', () => {
  let world: SenderWorld;
  let templates: DynamoTemplateStore;
  beforeAll(async () => {
    world = await startSenderWorld();
    templates = new DynamoTemplateStore(world.documents, world.tableName);
  });
  afterAll(async () => {
    await world.close();
  });

  const putVersion = (name: string, subject: string, html: string, text: string | null = null) =>
    templates.putVersion({
      tenant: TENANT,
      name,
      content: { subject, text, html },
      description: null,
      now: new Date(),
    });

  /** Enqueues through the outbox helper (the API's own records), validated against the template. */
  async function enqueue(rig: SenderRig, name: string, data: Record<string, unknown>, key: string) {
    const template = await readOutboxTemplate(world.documents, world.tableName, TENANT, name);
    const write = buildOutboxWrite({
      tableName: world.tableName,
      tenant: TENANT,
      idempotencyKey: `${key}-${Math.random()}`,
      now: new Date(rig.clock.ms - 1000),
      body: { to: ['ada@example.com'], from: 'ops@example.com', template: { name }, data },
      validation: { allowedFrom: ['*'], defaultFrom: 'ops@example.com', maxHorizonDays: 400 },
      ...(template ? { template } : {}),
    });
    await world.documents.send(new TransactWriteCommand({ TransactItems: write.items }));
    return write.messageId;
  }

  it('renders the pinned version, not a newer one, with data that stays text in html', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    await putVersion('receipt', 'Receipt for {{name}}', '<p>v1 {{name}}</p>', 'v1 {{name}}');
    const id = await enqueue(rig, 'receipt', { name: '<script>x</script>' }, 'pinned');
    await putVersion('receipt', 'Changed {{name}}', '<p>v2 {{name}}</p>', 'v2 {{name}}');
    await rig.dispatch({ id, rev: 1 });

    await rig.deliverNext();

    const state = await rig.state(id);
    expect(state.status).toBe('sent');
    expect(state.template).toEqual({ name: 'receipt', version: 1 });
    const [received] = rig.received(id);
    expect(received?.raw).toMatch(/^Subject: Receipt for <script>x<\/script>$/m);
    expect(received?.raw).toContain('<p>v1 &lt;script&gt;x&lt;/script&gt;</p>');
    expect(received?.raw).toContain('v1 <script>x</script>');
    // Nothing of version 2 (not a bare "v2": the message's random id may hold those two letters).
    expect(received?.raw).not.toContain('Changed');
    expect(received?.raw).not.toContain('v2 ');
    expect(received?.raw).not.toContain('<p>v2');
  });

  it('still sends a queued message after its template is archived', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    await putVersion('retired', 'Last call, {{name}}', '<p>bye {{name}}</p>');
    const id = await enqueue(rig, 'retired', { name: 'Ada' }, 'archived');
    await templates.archive(TENANT, 'retired', new Date());
    await rig.dispatch({ id, rev: 1 });

    await rig.deliverNext();

    expect((await rig.state(id)).status).toBe('sent');
    expect(rig.received(id)[0]?.raw).toContain('<p>bye Ada</p>');
  });

  it('fails a message whose pinned version cannot be read (permanent, with the reason), once and without an SMTP transaction', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const stored = await putVersion('vanishing', 'Hi {{name}}', '<p>{{name}}</p>');
    if (stored.kind !== 'created') throw new Error('not stored');
    const id = await enqueue(rig, 'vanishing', { name: 'Ada' }, 'vanishing');
    // What should never happen: the version item is gone (an operator deleted it by hand).
    await world.documents.send(
      new DeleteCommand({ TableName: world.tableName, Key: templateVersionKey(TENANT, 'vanishing', 1) }),
    );
    await rig.dispatch({ id, rev: 1 });

    await expectFailedBeforeSmtp(rig, id, 'template vanishing v1 does not exist');
    expect((await rig.depth()).stored + (await rig.depth()).delayed).toBe(0);
  });

  it('fails a queued message whose data prints an object (permanent, naming the output, never the value), without an SMTP transaction', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    await putVersion('ordered', 'Order {{order}}', '<p>{{order}}</p>');
    const id = await enqueue(rig, 'ordered', { order: 'A-8' }, 'ordered');
    // Queued before decision 0227, when the enqueue's render printed "[object Object]": its data
    // prints an object in the subject (the enqueue refuses such data now, so it is written here).
    await world.documents.send(
      new UpdateCommand({
        TableName: world.tableName,
        Key: { [KEY.partition]: messagePk(id), [KEY.sort]: ITEM_SORT_KEY.messageBody },
        UpdateExpression: 'SET data_json = :data',
        ExpressionAttributeValues: { ':data': JSON.stringify({ order: { id: 'A-8', secret: 'K-77' } }) },
      }),
    );
    await rig.dispatch({ id, rev: 1 });

    const state = await expectFailedBeforeSmtp(
      rig,
      id,
      expect.stringMatching(
        /^template ordered v1 does not render with the message's data: \/data `order` is an object, which the subject template prints \(line 1, column 7\)/,
      ),
    );
    expect(JSON.stringify(state)).not.toContain('K-77');
    expect((await rig.depth()).stored + (await rig.depth()).delayed).toBe(0);
  });

  it('reads and compiles a version once for many messages (cache warm)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    await putVersion('bulk', 'Bulk {{n}}', '<p>{{n}}</p>');
    const reads: number[] = [];
    const counting = {
      getVersion: async (tenant: string, name: string, version: number) => {
        reads.push(version);
        return templates.getVersion(tenant, name, version);
      },
    };
    const handler = rig.newHandler({ templates: counting });
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) ids.push(await enqueue(rig, 'bulk', { n }, `bulk-${n}`));
    for (const id of ids) await rig.dispatch({ id, rev: 1 });
    for (let round = 0; round < 4 && ids.some((id) => rig.received(id).length === 0); round++) {
      const records = await rig.receive({ waitSeconds: 2 });
      await rig.run(records, handler);
    }
    expect(ids.map((id) => rig.received(id).length)).toEqual([1, 1, 1, 1]);
    expect(rig.received(ids[3] ?? '')[0]?.raw).toMatch(/^Subject: Bulk 3$/m);
    expect(reads).toEqual([1]);
  });
});
