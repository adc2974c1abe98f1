import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageView } from '../../lambdas/store/messageView.js';
import { createSenderRig, type SenderWorld, startSenderWorld } from './senderHarness.js';

/**
 * DESIGN §3 and §5, "The relay's own id": the queue id the final 250 reply names is stored as
 * `provider_message_id`, on the attempt (history) and on the message, end to end: a real
 * smtp-server answering as the relay would, nodemailer's `info.response`, DynamoDB Local.
 */

describe("the relay's own id, from its final reply to the record", () => {
  let world: SenderWorld;
  beforeAll(async () => {
    world = await startSenderWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  it.each([
    {
      relay: 'Amazon SES',
      reply: 'Ok 01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
      id: '01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
    },
    { relay: 'Postfix', reply: '2.0.0 Ok: queued as 224B824BD40', id: '224B824BD40' },
    { relay: 'Exim', reply: 'OK id=1xBuT1-000000003QH-0Qqz', id: '1xBuT1-000000003QH-0Qqz' },
  ])('stores what $relay names on the message and on its attempt', async ({ reply, id }) => {
    const rig = await createSenderRig(world);
    world.smtp.script({ acceptReply: reply });
    const message = await rig.putMessage();
    await rig.dispatch(message);
    await rig.deliverNext();

    const sent = await rig.state(message.id);
    expect(sent).toMatchObject({ status: 'sent', provider_message_id: id });
    expect(sent.history.at(-1)).toMatchObject({ outcome: 'sent', code: '250', provider_message_id: id });
    const view = messageView(sent, { withHistory: true });
    expect(view.provider_message_id).toBe(id);
    expect(view.history?.at(-1)?.provider_message_id).toBe(id);
  });

  it("stores nothing when the reply names no id (smtp-server's default, Mailgun)", async () => {
    for (const reply of ['OK: message queued', 'Great success']) {
      const rig = await createSenderRig(world);
      world.smtp.script({ acceptReply: reply });
      const message = await rig.putMessage();
      await rig.dispatch(message);
      await rig.deliverNext();

      const sent = await rig.state(message.id);
      expect(sent.status).toBe('sent');
      expect(sent.provider_message_id).toBeUndefined();
      expect(sent.history.at(-1)).not.toHaveProperty('provider_message_id');
      expect(messageView(sent, { withHistory: false }).provider_message_id).toBeNull();
    }
  });

  it('keeps each accepted attempt its own id; the message shows the latest', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script(
      {
        rcptTo: (address) =>
          address === 'bob@example.net' ? { code: 450, message: '4.2.1 Mailbox busy, try later' } : undefined,
        acceptReply: '2.0.0 Ok: queued as 1111AAAA',
      },
      { acceptReply: '2.0.0 Ok: queued as 2222BBBB' },
    );
    const message = await rig.putMessage({ to: ['ada@example.org', 'bob@example.net'] });
    await rig.dispatch(message);

    await rig.deliverNext();
    // Ada accepted, Bob deferred: the relay holds a copy under its first id while Bob waits.
    expect(await rig.state(message.id)).toMatchObject({
      status: 'retrying',
      provider_message_id: '1111AAAA',
    });

    await rig.deliverNext();
    const sent = await rig.state(message.id);
    expect(sent).toMatchObject({ status: 'sent', provider_message_id: '2222BBBB' });
    expect(sent.history.map((entry) => entry.provider_message_id)).toEqual(['1111AAAA', '2222BBBB']);
  });
});
