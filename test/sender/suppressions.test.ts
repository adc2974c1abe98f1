import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import { SUPPRESSION_REASON } from '../../lambdas/core/suppressions.js';
import type { SuppressionList } from '../../lambdas/ports/SuppressionList.js';
import { SHORT_RETRY_SECONDS } from '../../lambdas/sender/copyRun.js';
import { messageView } from '../../lambdas/store/messageView.js';
import { DynamoSenderStore } from '../../lambdas/store/senderTransitions.js';
import {
  DynamoSuppressionList,
  SUPPRESSION_MAX_AGE_MS,
  SuppressionReadError,
} from '../../lambdas/store/suppressionList.js';
import { documentClient } from '../support/awsLocal.js';
import { TENANT } from './records.js';
import {
  contextWithRemaining,
  createSenderRig,
  type SenderHandler,
  type SenderRig,
  type SenderWorld,
  startSenderWorld,
  storeWith,
  suppressThroughApi,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * DESIGN §12 at send time: a recipient refused at RCPT TO with a 5.1.x joins the tenant's list (reason
 * hard_bounce, the message's id) and the next message to it leaves it out; other permanent refusals do
 * not add anything; suppressed recipients are left out of the envelope and counted; a message whose
 * every recipient is suppressed ends `suppressed` without an SMTP transaction.
 */

describe('the sender and the suppression list', () => {
  let world: SenderWorld;
  let list: DynamoSuppressionList;
  beforeAll(async () => {
    world = await startSenderWorld();
    list = new DynamoSuppressionList(world.documents, world.tableName);
  });
  afterAll(async () => {
    await world.close();
  });

  it('adds a recipient refused with 5.1.1 and leaves it out of the next message, which ends suppressed without a transaction', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({ rcptTo: { code: 550, message: '5.1.1 <gone@example.org>: User unknown' } });
    const first = await rig.putMessage({ to: ['Gone <gone@Example.ORG>'] });
    await rig.dispatch(first);
    await rig.deliverNext();
    expect(await rig.state(first.id)).toMatchObject({ status: 'failed', rcpt_rejected: [0] });
    const page = await list.list(TENANT, { limit: 10, after: null });
    expect(page.items).toEqual([
      expect.objectContaining({
        address: 'gone@example.org',
        reason: SUPPRESSION_REASON.hardBounce,
        message_id: first.id,
      }),
    ]);
    expect(rig.metrics.of('SuppressionsAdded')).toBe(1);

    world.smtp.script();
    const transactionsBefore = world.smtp.transactions;
    // Another spelling of the same mailbox: the list compares normalised addresses.
    const second = await rig.putMessage({ to: ['GONE@example.org'] });
    await rig.dispatch(second);
    const { response } = await rig.deliverNext();
    expect(response.batchItemFailures).toEqual([]);
    const suppressed = await rig.state(second.id);
    expect(suppressed).toMatchObject({
      status: 'suppressed',
      attempts: 0,
      history: [],
      rcpt_suppressed: [0],
    });
    expect(suppressed.expires_at).toBeGreaterThan(0);
    expect(suppressed.due_pk).toBeUndefined();
    expect(messageView({ ...suppressed, rcpt_total: 1 }, { withHistory: false }).recipients).toEqual({
      accepted: 0,
      pending: 0,
      rejected: 0,
      suppressed: 1,
    });
    // No SMTP transaction for it: the sink saw nothing.
    expect(world.smtp.transactions).toBe(transactionsBefore);
    expect(rig.received(second.id)).toEqual([]);
    expect(rig.metrics.of('Suppressed')).toBe(1);
    expect(rig.log.text()).not.toMatch(/gone@/i);
  });

  it('adds nothing for a permanent refusal that is not about the address (5.7.1 policy, 5.2.2 mailbox full)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'policy@example.com'
          ? { code: 550, message: '5.7.1 Relaying denied by policy' }
          : { code: 552, message: '5.2.2 Mailbox full' },
    });
    const message = await rig.putMessage({ to: ['policy@example.com', 'full@example.com'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'failed', rcpt_rejected: [0, 1] });
    expect(await list.suppressedAmong(TENANT, ['policy@example.com', 'full@example.com'])).toEqual(new Set());
    expect(rig.metrics.of('SuppressionsAdded')).toBe(0);
  });

  // DESIGN §5 (recipients one by one) and §12 across the seam of the mailer and the outcome: the replies
  // at RCPT TO stand whatever the relay says to the message after them (decisions 0313, 0314).
  it('keeps each recipient’s own RCPT TO reply when the relay then refuses the message: the 5.1.1 one suppressed, the deferred one pending, the taken one rejected', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'later@example.net'
          ? { code: 450, message: '4.2.1 Mailbox busy' }
          : address === 'nobody@example.net'
            ? { code: 550, message: '5.1.1 User unknown' }
            : undefined,
      afterData: { code: 554, message: '5.6.0 Content rejected' },
    });
    const message = await rig.putMessage({
      to: ['later@example.net', 'ada@example.org', 'nobody@example.net'],
    });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({
      status: 'retrying',
      attempts: 1,
      rcpt_accepted: [],
      rcpt_rejected: [1, 2],
    });
    expect(await list.suppressedAmong(TENANT, ['nobody@example.net', 'ada@example.org'])).toEqual(
      new Set(['nobody@example.net']),
    );
  });

  // DESIGN §5: "one rejected with a 5xx is recorded and not retried", whatever throttled the message
  // after it; the throttle itself counts no attempt (decision 0315).
  it('records a 5xx at RCPT TO though SES then throttles the message: rejected and suppressed, no attempt, the rest pending', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'denied@example.net'
          ? { code: 550, message: '5.7.1 Relaying denied' }
          : address === 'missing@example.net'
            ? { code: 550, message: '5.1.1 User unknown' }
            : undefined,
      afterData: { code: 454, message: 'Throttling failure: Maximum sending rate exceeded.' },
    });
    const message = await rig.putMessage({
      to: ['denied@example.net', 'ada@example.org', 'missing@example.net'],
    });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({
      status: 'retrying',
      attempts: 0,
      rcpt_accepted: [],
      rcpt_rejected: [0, 2],
    });
    expect(await list.suppressedAmong(TENANT, ['missing@example.net', 'denied@example.net'])).toEqual(
      new Set(['missing@example.net']),
    );
  });

  it('never suppresses anyone when the relay refuses our sender at RCPT TO (553 5.1.8): config, retried, alarmed; sent once it is fixed', async () => {
    const rig = await createSenderRig(world);
    // Postfix with smtpd_delay_reject: the sender's check answers every RCPT TO.
    world.smtp.script({
      rcptTo: { code: 553, message: '5.1.8 <ops@sender.example>: Sender address rejected: Domain not found' },
    });
    const recipients = ['alice@example.com', 'bob@example.com'];
    const message = await rig.putMessage({ to: recipients });
    await rig.dispatch(message);
    await rig.deliverNext();
    const refused = await rig.state(message.id);
    expect(refused).toMatchObject({ status: 'retrying', attempts: 1, rcpt_accepted: [], rcpt_rejected: [] });
    expect(refused.history[0]).toMatchObject({ outcome: 'config', code: '553', enhanced_code: '5.1.8' });
    expect(await list.suppressedAmong(TENANT, recipients)).toEqual(new Set());
    expect(rig.metrics.of('SuppressionsAdded')).toBe(0);
    expect(rig.metrics.of('ConfigErrors')).toBe(1);

    // The operator fixes the sender: the same message goes to both, and the next one to alice too.
    world.smtp.script();
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', rcpt_accepted: [0, 1] });
    const next = await rig.putMessage({ to: ['alice@example.com'] });
    await rig.dispatch(next);
    await rig.deliverNext();
    expect(await rig.state(next.id)).toMatchObject({ status: 'sent', rcpt_accepted: [0] });
    expect(rig.received(next.id)).toHaveLength(1);
  });

  it('never suppresses anyone when the relay refuses our unlisted sender at RCPT TO (550 5.1.0 Sender address rejected): config, retried', async () => {
    const rig = await createSenderRig(world);
    // Postfix's reject_unlisted_sender with smtpd_delay_reject: X.1.0 (other address status) for
    // the sender, once per RCPT TO; it would be 5.1.1 for a recipient.
    world.smtp.script({
      rcptTo: {
        code: 550,
        message: '5.1.0 <ops@sender.example>: Sender address rejected: User unknown in virtual mailbox table',
      },
    });
    const recipients = ['dana@example.com', 'erin@example.com'];
    const message = await rig.putMessage({ to: recipients });
    await rig.dispatch(message);
    await rig.deliverNext();
    const refused = await rig.state(message.id);
    expect(await list.suppressedAmong(TENANT, recipients)).toEqual(new Set());
    expect(refused).toMatchObject({ status: 'retrying', attempts: 1, rcpt_accepted: [], rcpt_rejected: [] });
    expect(refused.history[0]).toMatchObject({ outcome: 'config', code: '550', enhanced_code: '5.1.0' });
    expect(rig.metrics.of('SuppressionsAdded')).toBe(0);
    expect(rig.metrics.of('ConfigErrors')).toBe(1);
  });

  it('retries a message whose sender the relay refuses at MAIL FROM with 5.1.7 as config, alarmed, never failed', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({ mailFrom: { code: 550, message: '5.1.7 Bad sender address syntax' } });
    const message = await rig.putMessage({ to: ['carol@example.com'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    const refused = await rig.state(message.id);
    expect(refused).toMatchObject({ status: 'retrying', attempts: 1, rcpt_rejected: [] });
    expect(refused.history[0]).toMatchObject({ outcome: 'config', code: '550', enhanced_code: '5.1.7' });
    expect(rig.metrics.of('ConfigErrors')).toBe(1);
    expect(rig.metrics.of('Failed')).toBe(0);
    expect(await list.suppressedAmong(TENANT, ['carol@example.com'])).toEqual(new Set());
  });

  it('counts a message the screening ends failed as Failed (FailedMessages alarms on it)', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'policy@example.com'
          ? { code: 550, message: '5.7.1 Refused by policy' }
          : { code: 451, message: '4.3.0 Try again later' },
    });
    const message = await rig.putMessage({ to: ['policy@example.com', 'deferred@example.com'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', rcpt_rejected: [0] });
    expect(rig.metrics.of('Failed')).toBe(0);

    await list.put({ tenant: TENANT, address: 'deferred@example.com', reason: 'complaint', now: new Date() });
    // The sender looked it up at the first attempt: the add applies within SUPPRESSION_MAX_AGE_MS (0173).
    rig.clock.advance(SUPPRESSION_MAX_AGE_MS);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'failed', rcpt_suppressed: [1] });
    expect(rig.metrics.of('Failed')).toBe(1);
  });

  it('sends a partly suppressed message to the others and counts the suppressed one', async () => {
    const rig = await createSenderRig(world);
    await list.put({ tenant: TENANT, address: 'optout@example.net', reason: 'manual', now: new Date() });
    world.smtp.script();
    const message = await rig.putMessage({
      to: ['ada@example.net'],
      cc: ['Opt Out <OptOut@example.net>', 'bob@example.net'],
    });
    await rig.dispatch(message);
    await rig.deliverNext();
    const sent = await rig.state(message.id);
    expect(sent).toMatchObject({
      status: 'sent',
      attempts: 1,
      rcpt_accepted: [0, 2],
      rcpt_rejected: [],
      rcpt_suppressed: [1],
    });
    expect(messageView({ ...sent, rcpt_total: 3 }, { withHistory: false }).recipients).toEqual({
      accepted: 2,
      pending: 0,
      rejected: 0,
      suppressed: 1,
    });
    const copies = rig.received(message.id);
    expect(copies.map((copy) => copy.to)).toEqual([['ada@example.net', 'bob@example.net']]);
    expect(rig.metrics.of('SuppressedRecipients')).toBe(1);
  });

  it('ends a message sent to some recipients as sent, without another transaction, when the pending rest is suppressed before its retry', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script({
      rcptTo: (address) =>
        address === 'later@example.com' ? { code: 450, message: '4.2.1 Try again later' } : undefined,
    });
    const message = await rig.putMessage({ to: ['now@example.com', 'later@example.com'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'retrying', rcpt_accepted: [0] });

    await list.put({ tenant: TENANT, address: 'later@example.com', reason: 'complaint', now: new Date() });
    // The sender looked it up at the first attempt: the add applies within SUPPRESSION_MAX_AGE_MS (0173).
    rig.clock.advance(SUPPRESSION_MAX_AGE_MS);
    const transactionsBefore = world.smtp.transactions;
    await rig.deliverNext();
    const done = await rig.state(message.id);
    expect(done).toMatchObject({
      status: 'sent',
      attempts: 1,
      rcpt_accepted: [0],
      rcpt_suppressed: [1],
      sent_at: done.history[0]?.at,
    });
    expect(world.smtp.transactions).toBe(transactionsBefore);
    // It ended `sent` here: counted as every sent message is.
    expect(rig.metrics.of('Sent')).toBe(1);
  });

  it('gives the claim back, without an attempt, when the list cannot be read', async () => {
    const rig = await createSenderRig(world);
    world.smtp.script();
    const real = new DynamoSenderStore(world.documents, world.tableName);
    const unreadable = storeWith(real, {
      suppressions: {
        suppressedAmong: () => Promise.reject(new Error('throttled')),
        addReported: (input) => real.suppressions.addReported(input),
        put: (input) => real.suppressions.put(input),
        remove: (tenant, address) => real.suppressions.remove(tenant, address),
        list: (tenant, page) => real.suppressions.list(tenant, page),
      },
    });
    const transactionsBefore = world.smtp.transactions;
    const message = await rig.putMessage({ to: ['someone@example.com'] });
    await rig.dispatch(message);
    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const response = await rig.run(records, rig.newHandler({ store: unreadable }));
    expect(response.batchItemFailures).toHaveLength(1);
    expect(await rig.state(message.id)).toMatchObject({ status: 'scheduled', attempts: 0, history: [] });
    expect(world.smtp.transactions).toBe(transactionsBefore);
    expect(rig.metrics.of('Released')).toBe(1);
  });

  it('counts a suppressed recipient once, for the envelope it was left out of, not for a claim given back before MAIL FROM', async () => {
    const rig = await createSenderRig(world);
    await list.put({ tenant: TENANT, address: 'quiet@example.com', reason: 'manual', now: new Date() });
    world.smtp.script();
    const message = await rig.putMessage({ to: ['loud@example.com', 'quiet@example.com'] });
    await rig.dispatch(message);
    // The list is read slowly on the sender's clock: after it, too little time is left for an attempt.
    const real = new DynamoSenderStore(world.documents, world.tableName);
    const slow = storeWith(real, {
      suppressions: Object.assign(Object.create(real.suppressions) as SuppressionList, {
        suppressedAmong: async (tenant: string, addresses: readonly string[]) => {
          const listed = await real.suppressions.suppressedAmong(tenant, addresses);
          rig.clock.advance(1000);
          return listed;
        },
      }),
    });
    const records = await rig.receive({ waitSeconds: 3, max: 1 });
    const budget = attemptBudgetMs(TEST_SETTINGS.timing);
    await rig.run(records, rig.newHandler({ store: slow }), contextWithRemaining(budget + 500));
    expect(await rig.state(message.id)).toMatchObject({ status: 'scheduled', attempts: 0 });
    expect(rig.metrics.of('OutOfTime')).toBe(1);
    // No envelope was sent: nobody was left out of one yet.
    expect(rig.metrics.of('SuppressedRecipients')).toBe(0);

    // The copy comes back when the release said (a real queue's visibility): wait for it, with a deadline.
    const deadline = Date.now() + 30_000;
    let again = await rig.receive({ waitSeconds: 3, max: 1 });
    while (again.length === 0 && Date.now() < deadline) again = await rig.receive({ waitSeconds: 3, max: 1 });
    rig.clock.advance(SHORT_RETRY_SECONDS * 1000);
    await rig.run(again, rig.handler, contextWithRemaining(60_000));
    expect(await rig.state(message.id)).toMatchObject({
      status: 'sent',
      attempts: 1,
      rcpt_accepted: [0],
      rcpt_suppressed: [1],
    });
    expect(rig.received(message.id).map((copy) => copy.to)).toEqual([['loud@example.com']]);
    // One recipient left out of one envelope: counted once, as `recipients.suppressed` says.
    expect(rig.metrics.of('SuppressedRecipients')).toBe(1);
  });

  it("consults only the message's own tenant's list", async () => {
    const rig = await createSenderRig(world);
    await list.put({ tenant: 'tenant-b', address: 'shared@example.com', reason: 'manual', now: new Date() });
    world.smtp.script();
    const message = await rig.putMessage({ to: ['shared@example.com'] });
    await rig.dispatch(message);
    await rig.deliverNext();
    expect(await rig.state(message.id)).toMatchObject({ status: 'sent', rcpt_accepted: [0] });
  });
  describe('an address on every message, looked up at most SUPPRESSION_MAX_AGE_MS ago (decision 0173)', () => {
    /** Sends one message to a new recipient with `archive` beside it (a compliance copy) through `sender`. */
    const sendWith = async (rig: SenderRig, sender: SenderHandler, archive: string) => {
      const message = await rig.putMessage({ to: [`r${Math.random()}@example.com`], cc: [archive] });
      await rig.dispatch(message);
      await rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), sender);
      return rig.state(message.id);
    };

    it('an address added through the API is honoured by a warm sender within the window', async () => {
      const rig = await createSenderRig(world);
      world.smtp.script();
      // A short window on the real clock, so the test waits for it (with a deadline) and stays fast.
      const store = new DynamoSenderStore(world.documents, world.tableName, {
        suppressionLookups: { maxAgeMs: 300 },
      });
      const sender = rig.newHandler({ store });
      expect(await sendWith(rig, sender, 'archive@example.com')).toMatchObject({
        status: 'sent',
        rcpt_accepted: [0, 1],
      });
      expect((await suppressThroughApi(world, 'archive@example.com', rig.clock.now)).status).toBe(200);

      const deadline = Date.now() + 10_000;
      let last = await sendWith(rig, sender, 'archive@example.com');
      while (last.rcpt_suppressed?.length !== 1 && Date.now() < deadline) {
        last = await sendWith(rig, sender, 'archive@example.com');
      }
      expect(last).toMatchObject({ status: 'sent', rcpt_accepted: [0], rcpt_suppressed: [1] });
    });

    it('reads the entry of an address on every message once per window, not once per message', async () => {
      const rig = await createSenderRig(world);
      world.smtp.script();
      const documents = documentClient();
      let archiveReads = 0;
      documents.middlewareStack.add(
        (next) => async (args) => {
          const input = args.input as { RequestItems?: Record<string, { Keys?: { sk?: unknown }[] }> };
          for (const request of Object.values(input.RequestItems ?? {})) {
            archiveReads += (request.Keys ?? []).filter((key) => key.sk === 'copies@example.com').length;
          }
          return next(args);
        },
        { step: 'initialize', name: 'countArchiveReads' },
      );
      const store = new DynamoSenderStore(documents, world.tableName, {
        suppressionLookups: { now: rig.clock.now },
      });
      const sender = rig.newHandler({ store });
      for (let n = 0; n < 3; n++) {
        expect(await sendWith(rig, sender, 'copies@example.com')).toMatchObject({ status: 'sent' });
      }
      expect(archiveReads).toBe(1);

      rig.clock.advance(SUPPRESSION_MAX_AGE_MS);
      expect(await sendWith(rig, sender, 'copies@example.com')).toMatchObject({ status: 'sent' });
      expect(archiveReads).toBe(2);
    });

    it('leaves out at once an address it added itself, without reading the entry again (the read may miss its own write)', async () => {
      const rig = await createSenderRig(world);
      const documents = documentClient();
      let goneReads = 0;
      documents.middlewareStack.add(
        (next) => async (args) => {
          const input = args.input as { RequestItems?: Record<string, { Keys?: { sk?: unknown }[] }> };
          for (const request of Object.values(input.RequestItems ?? {})) {
            goneReads += (request.Keys ?? []).filter((key) => key.sk === 'left@example.org').length;
          }
          return next(args);
        },
        { step: 'initialize', name: 'countGoneReads' },
      );
      const store = new DynamoSenderStore(documents, world.tableName, {
        suppressionLookups: { now: rig.clock.now },
      });
      const sender = rig.newHandler({ store });
      world.smtp.script({ rcptTo: { code: 550, message: '5.1.1 <left@example.org>: User unknown' } });
      const first = await rig.putMessage({ to: ['left@example.org'] });
      await rig.dispatch(first);
      await rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), sender);
      expect(await rig.state(first.id)).toMatchObject({ status: 'failed', rcpt_rejected: [0] });
      expect(goneReads).toBe(1);

      world.smtp.script();
      const second = await rig.putMessage({ to: ['left@example.org'] });
      await rig.dispatch(second);
      await rig.run(await rig.receive({ waitSeconds: 3, max: 1 }), sender);

      expect(await rig.state(second.id)).toMatchObject({ status: 'suppressed', rcpt_suppressed: [0] });
      // The sender knew it had listed the address: no read that could answer "not listed".
      expect(goneReads).toBe(1);
    });

    it('answers not listed at once after its own removal, without a read', async () => {
      const documents = documentClient();
      let reads = 0;
      documents.middlewareStack.add(
        (next) => async (args) => {
          if ((args.input as { RequestItems?: unknown }).RequestItems !== undefined) reads++;
          return next(args);
        },
        { step: 'initialize', name: 'countLookups' },
      );
      const lookups = new DynamoSuppressionList(documents, world.tableName, { recent: {} });
      const now = new Date();
      await lookups.put({ tenant: TENANT, address: 'back@example.net', reason: undefined, now });
      expect(await lookups.suppressedAmong(TENANT, ['back@example.net'])).toEqual(
        new Set(['back@example.net']),
      );

      await lookups.remove(TENANT, 'back@example.net');

      expect(await lookups.suppressedAmong(TENANT, ['back@example.net'])).toEqual(new Set());
      expect(reads).toBe(0);
    });

    it('asks for throttled keys again after growing, jittered pauses, and gives up as unread after five rounds', async () => {
      const throttled = (rounds: number) => {
        const documents = documentClient();
        let calls = 0;
        documents.middlewareStack.add(
          (next) => async (args) => {
            const input = args.input as { RequestItems?: Record<string, { Keys?: unknown[] }> };
            if (input.RequestItems === undefined || calls++ >= rounds) return next(args);
            // What DynamoDB answers a throttled BatchGetItem: nothing read, every key unprocessed.
            const unprocessed = Object.fromEntries(
              Object.entries(input.RequestItems).map(([table, request]) => [table, { Keys: request.Keys }]),
            );
            return { output: { Responses: {}, UnprocessedKeys: unprocessed, $metadata: {} } } as never;
          },
          { step: 'initialize', priority: 'high', name: 'throttleBatchGets' },
        );
        return documents;
      };
      await list.put({ tenant: TENANT, address: 'slow@example.com', reason: 'manual', now: new Date() });
      const pauses: number[] = [];
      const options = { random: () => 1, sleep: async (ms: number) => void pauses.push(ms) };

      const twice = new DynamoSuppressionList(throttled(2), world.tableName, options);
      expect(await twice.suppressedAmong(TENANT, ['slow@example.com', 'fine@example.com'])).toEqual(
        new Set(['slow@example.com']),
      );
      expect(pauses).toEqual([50, 100]);

      pauses.length = 0;
      const always = new DynamoSuppressionList(throttled(Number.POSITIVE_INFINITY), world.tableName, options);
      await expect(always.suppressedAmong(TENANT, ['slow@example.com'])).rejects.toBeInstanceOf(
        SuppressionReadError,
      );
      expect(pauses).toEqual([50, 100, 200, 400]);
    });
  });

  /** Suppresses one spelling through the API, sends to another: the message ends `suppressed`, no transaction. */
  async function leftOutAsSuppressed(suppressed: string, recipient: string): Promise<void> {
    const rig = await createSenderRig(world);
    world.smtp.script();
    expect((await suppressThroughApi(world, suppressed, rig.clock.now)).status).toBe(200);
    const transactionsBefore = world.smtp.transactions;
    const message = await rig.putMessage({ to: [recipient] });
    await rig.dispatch(message);

    await rig.deliverNext();

    expect(await rig.state(message.id)).toMatchObject({ status: 'suppressed', rcpt_suppressed: [0] });
    expect(world.smtp.transactions).toBe(transactionsBefore);
  }

  describe('a recipient whose domain is internationalised (DESIGN §12; decision 0153)', () => {
    const spellings = [
      ['in Unicode', 'in punycode', 'ada@bücher.example', 'Ada@xn--bcher-kva.example'],
      ['in punycode', 'in Unicode', 'bob@XN--BCHER-KVA.example', 'Bob <bob@Bücher.example>'],
      ['in Unicode, NFD', 'in punycode', 'cyd@bu\u0308cher.example', 'CYD@xn--bcher-kva.example'],
      [
        'in punycode',
        'in Unicode, NFD and upper case',
        'dan@xn--bcher-kva.example',
        'Dan <DAN@BU\u0308CHER.example>',
      ],
    ] as const;

    it.each(spellings)(
      'suppressed through the API %s, is left out of a message to its spelling %s: suppressed, no transaction',
      (_put, _sent, suppressed, recipient) => leftOutAsSuppressed(suppressed, recipient),
    );

    it('a 5.1.1 at RCPT of the A-label envelope refuses every place of the mailbox and adds the entry every spelling meets (NFD, any case, quoted; decision 0237)', async () => {
      const rig = await createSenderRig(world);
      world.smtp.script({
        rcptTo: (address) =>
          address.toLowerCase().startsWith('zed@') ? { code: 550, message: '5.1.1 User unknown' } : undefined,
      });
      const first = await rig.putMessage({
        to: ['Zed <ZED@BÜCHER.example>', 'amy@example.org'],
        cc: ['zed@xn--bcher-kva.example'],
      });
      await rig.dispatch(first);
      await rig.deliverNext();
      const refused = await rig.state(first.id);
      expect(refused).toMatchObject({ status: 'sent', rcpt_accepted: [1], rcpt_rejected: [0, 2] });
      expect(messageView({ ...refused, rcpt_total: 3 }, { withHistory: false }).recipients).toEqual({
        accepted: 1,
        pending: 0,
        rejected: 2,
        suppressed: 0,
      });
      expect(await list.suppressedAmong(TENANT, ['zed@xn--bcher-kva.example'])).toEqual(
        new Set(['zed@xn--bcher-kva.example']),
      );

      world.smtp.script();
      const transactionsBefore = world.smtp.transactions;
      const second = await rig.putMessage({ to: ['Zed@bu\u0308cher.example'], cc: ['"zed"@BÜCHER.EXAMPLE'] });
      await rig.dispatch(second);
      await rig.deliverNext();
      expect(await rig.state(second.id)).toMatchObject({ status: 'suppressed', rcpt_suppressed: [0, 1] });
      expect(world.smtp.transactions).toBe(transactionsBefore);
    });

    it('an entry stored in the Unicode form before still suppresses either spelling', async () => {
      const rig = await createSenderRig(world);
      world.smtp.script();
      // What the API or a 5.1.x at RCPT wrote before decision 0153: the domain lower-cased as written.
      await list.put({ tenant: TENANT, address: 'eve@bücher.example', reason: 'manual', now: new Date() });
      const transactionsBefore = world.smtp.transactions;
      const unicode = await rig.putMessage({ to: ['Eve@BÜCHER.example'] });
      const punycode = await rig.putMessage({ to: ['eve@xn--bcher-kva.example'] });
      await rig.dispatch(unicode);
      await rig.deliverNext();
      await rig.dispatch(punycode);
      await rig.deliverNext();

      expect(await rig.state(unicode.id)).toMatchObject({ status: 'suppressed' });
      expect(await rig.state(punycode.id)).toMatchObject({ status: 'suppressed' });
      expect(world.smtp.transactions).toBe(transactionsBefore);
    });
  });

  describe('a recipient whose local part is quoted (RFC 5322 §3.2.4: a quoted string is the atom, semantically; decision 0184)', () => {
    it.each([
      ['ada@example.com', '"ada"@example.com'],
      ['ada2@example.com', 'Ada <"Ada2"@Example.com>'],
      ['"ada3"@example.com', 'ada3@example.com'],
    ])(
      'suppressed through the API as %s, is left out of a message to %s: suppressed, no transaction',
      (suppressed, recipient) => leftOutAsSuppressed(suppressed, recipient),
    );

    it('a 5.1.1 of a recipient written quoted suppresses the mailbox as an unquoted spelling is looked up', async () => {
      const rig = await createSenderRig(world);
      world.smtp.script({ rcptTo: { code: 550, message: '5.1.1 User unknown' } });
      const first = await rig.putMessage({ to: ['"Gone.Quoted"@example.org'] });
      await rig.dispatch(first);
      await rig.deliverNext();
      expect(await rig.state(first.id)).toMatchObject({ status: 'failed', rcpt_rejected: [0] });
      expect(await list.suppressedAmong(TENANT, ['gone.quoted@example.org'])).toEqual(
        new Set(['gone.quoted@example.org']),
      );
    });

    it('an entry stored under the quoted form before still suppresses a recipient written so', async () => {
      const rig = await createSenderRig(world);
      world.smtp.script();
      // What the API or a 5.1.x at RCPT wrote before decision 0184: the local part lower-cased as written.
      await list.put({ tenant: TENANT, address: '"old"@example.com', reason: 'manual', now: new Date() });
      const transactionsBefore = world.smtp.transactions;
      const message = await rig.putMessage({ to: ['"Old"@example.com'] });
      await rig.dispatch(message);
      await rig.deliverNext();
      expect(await rig.state(message.id)).toMatchObject({ status: 'suppressed' });
      expect(world.smtp.transactions).toBe(transactionsBefore);
    });
  });
});
