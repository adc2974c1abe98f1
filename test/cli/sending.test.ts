import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { UsageError } from '../../cli/cliErrors.js';
import { memoryOutput } from '../../cli/output.js';
import { reconcile, reconcileClean } from '../../cli/reconcileCommand.js';
import { relaysDeps, relaysDisable } from '../../cli/relaysCommands.js';
import { sendingPause, sendingResume, sendingStatus } from '../../cli/sendingCommands.js';
import { validateEnqueueRequest } from '../../lambdas/core/messageSchema.js';
import { isPaused, NEVER_OPENED, opened, throttled } from '../../lambdas/core/relayBreaker.js';
import type { SendingGateStore } from '../../lambdas/ports/SendingGate.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { messageId, seedMessages } from './cliFixtures.js';

const BREAKER_SETTINGS = { probeIntervalMs: 30_000, probeTimeoutMs: 10_000 };

/** Opens one relay's breaker the way a sender does (its own item, `RELAY#{name}`, or the gate item). */
async function openBreaker(gate: SendingGateStore, reason: string): Promise<void> {
  const { breaker } = await gate.read();
  const open = opened(breaker, { reason }, new Date(), BREAKER_SETTINGS, '5');
  if (open === undefined) throw new Error('a closed breaker opens');
  expect(await gate.writeBreaker(breaker, open)).toBe('written');
}

/** The deps of `sending` and `reconcile` for a stack with these relays (POSTDATE_RELAYS / RelayNames). */
async function severalRelays(names: readonly string[]) {
  const { tableName } = await freshTable('sending-relays');
  const documents = documentClient();
  const relays = relaysDeps({ documents, tableName, names, namesFrom: 'stack', now: () => new Date() });
  return {
    tableName,
    relays,
    sending: { gate: new DynamoSendingGate(documents, tableName), relays, now: () => new Date() },
    reconcile: {
      documents,
      tableName,
      dueIndex: new DynamoDueIndex(documents, tableName),
      now: () => new Date(),
      tenants: async () => [],
      graceSeconds: 300,
      retentionDays: 30,
      relays,
    },
  };
}

/**
 * `postdate sending pause/resume/status` (DESIGN §5, §6) against DynamoDB Local: what the senders
 * read (the gate item) is what the commands wrote; and `postdate reconcile` shows the breaker.
 */
const run = promisify(execFile);

describe('postdate sending', () => {
  it('pause all, resume one kind (the roll-out), pause one kind, resume everything', async () => {
    const { tableName } = await freshTable('sending');
    const documents = documentClient();
    const deps = {
      gate: new DynamoSendingGate(documents, tableName),
      relays: relaysDeps({
        documents,
        tableName,
        names: ['default'],
        namesFrom: 'stack',
        now: () => new Date(),
      }),
      now: () => new Date(),
    };
    const out = memoryOutput();

    await sendingPause(deps, { reason: 'incident 42' }, out);
    const status = await sendingStatus(deps, out);
    expect(isPaused(status.pause, 'welcome')).toBe(true);
    expect(status.pause.all?.reason).toBe('incident 42');

    await sendingResume(deps, { kind: 'welcome' }, out);
    let gate = await deps.gate.read();
    expect(isPaused(gate.pause, 'welcome')).toBe(false);
    expect(isPaused(gate.pause, 'invoice')).toBe(true);

    await sendingResume(deps, {}, out);
    await sendingPause(deps, { kind: 'campaign' }, out);
    gate = await deps.gate.read();
    expect(isPaused(gate.pause, 'campaign')).toBe(true);
    expect(isPaused(gate.pause, 'invoice')).toBe(false);
    expect(gate.pause.kinds.campaign?.reason).toBe('paused by an operator');

    await sendingResume(deps, {}, out);
    expect((await deps.gate.read()).pause).toMatchObject({ kinds: {} });
    expect((await deps.gate.read()).pause.all).toBeUndefined();
  });

  it('a resume of everything names the kinds whose own pauses it lifts with it', async () => {
    // A kind paused for its own reason (wrong wording) and then everything paused for an incident:
    // `resume` lets both go. The operator must read that, not only "paused: nothing" below it.
    const { tableName } = await freshTable('sending-resume-all');
    const documents = documentClient();
    const now = () => new Date();
    const relays = relaysDeps({ documents, tableName, names: ['default'], namesFrom: 'stack', now });
    const deps = { gate: new DynamoSendingGate(documents, tableName), relays, now };
    await sendingPause(deps, { kind: 'newsletter', reason: 'wrong wording' }, memoryOutput());
    await sendingPause(deps, { kind: 'digest' }, memoryOutput());
    await sendingPause(deps, { reason: 'incident 42' }, memoryOutput());
    const out = memoryOutput();

    await sendingResume(deps, {}, out);

    expect(out.lines[0]).toBe(
      'sending resumed: the held messages go out as their copies come back (kinds digest, newsletter too: their own pauses are lifted)',
    );
    const alone = memoryOutput();
    await sendingPause(deps, {}, memoryOutput());
    await sendingResume(deps, {}, alone);
    expect(alone.lines[0]).toBe('sending resumed: the held messages go out as their copies come back');
  });

  describe("kinds are the tenants' own tags.kind values (DESIGN §5, §6)", () => {
    async function sending() {
      const { tableName } = await freshTable('sending-kinds');
      const documents = documentClient();
      const now = () => new Date();
      const relays = relaysDeps({ documents, tableName, names: ['default'], namesFrom: 'stack', now });
      return { tableName, documents, gate: new DynamoSendingGate(documents, tableName), relays, now };
    }

    it('--json shows a paused kind by its own name, in sending status and in reconcile', async () => {
      const deps = await sending();
      const out = memoryOutput({ json: true });
      await sendingPause(deps, { kind: 'orderShipped', reason: 'wrong wording' }, out);
      expect(out.documents[0]).toMatchObject({
        pause: { kinds: { orderShipped: { reason: 'wrong wording' } } },
      });
      expect(out.documents[0]).not.toHaveProperty('pause.kinds.order_shipped');
      const reconciled = memoryOutput({ json: true });
      const { documents, tableName } = deps;
      const dueIndex = new DynamoDueIndex(documents, tableName);
      const tenants = async () => [];
      await reconcile({ ...deps, dueIndex, tenants, graceSeconds: 300, retentionDays: 30 }, {}, reconciled);
      expect(reconciled.documents[0]).toMatchObject({ sending: { pause: { kinds: { orderShipped: {} } } } });
    });

    it('takes every kind the API takes in tags.kind (but the empty one), and refuses what it refuses', async () => {
      const deps = await sending();
      const ctx = {
        now: new Date('2026-12-03T12:00:00.000Z'),
        allowedFrom: ['ops@example.com'],
        defaultFrom: 'ops@example.com',
        maxHorizonDays: 400,
      };
      const apiTakes = (kind: string) =>
        validateEnqueueRequest({ to: ['ada@example.com'], subject: 'Hi', text: 'x', tags: { kind } }, ctx).ok;
      // A kind the pause map could not store is refused by both (fast-check found `__proto__`: the
      // pause write failed with a DynamoDB ValidationException while the API took the tag).
      expect(apiTakes('__proto__')).toBe(false);
      await expect(sendingPause(deps, { kind: '__proto__' }, memoryOutput())).rejects.toBeInstanceOf(
        UsageError,
      );
      for (const kind of ['order shipped', 'rückruf', 'a'.repeat(128)]) {
        expect(apiTakes(kind)).toBe(true);
        await sendingPause(deps, { kind }, memoryOutput());
        expect(isPaused((await deps.gate.read()).pause, kind)).toBe(true);
      }
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string({ unit: 'binary', maxLength: 140 }),
            fc.string({ unit: 'grapheme', minLength: 120, maxLength: 140 }),
          ),
          async (kind) => {
            const cli = await sendingPause(deps, { kind }, memoryOutput()).then(
              () => true,
              (error: unknown) => {
                if (error instanceof UsageError) return false;
                throw error;
              },
            );
            // The empty kind cannot key a pause in the table (DynamoDB refuses an empty map key).
            expect(cli).toBe(kind !== '' && apiTakes(kind));
          },
        ),
        { numRuns: 60 },
      );
    }, 60_000);

    it('a pause of what is already paused changes nothing (its time and reason stand), exits 0, and says so', async () => {
      let clock = new Date('2026-12-05T20:00:00.000Z');
      const deps = { ...(await sending()), now: () => clock };
      const first = memoryOutput({ json: true });
      await sendingPause(deps, { kind: 'receipt', reason: 'wrong wording' }, first);
      expect(first.documents[0]).toMatchObject({ was_paused: false });
      clock = new Date('2026-12-05T20:30:00.000Z');
      const again = memoryOutput({ json: true });
      await sendingPause(deps, { kind: 'receipt' }, again);
      expect(again.documents[0]).toMatchObject({
        was_paused: true,
        pause: { kinds: { receipt: { at: '2026-12-05T20:00:00.000Z', reason: 'wrong wording' } } },
      });
      const words = memoryOutput();
      await sendingPause(deps, { kind: 'receipt' }, words);
      expect(words.text()).toMatch(/kind receipt was already paused: nothing changed/);

      await sendingPause(deps, {}, memoryOutput());
      clock = new Date('2026-12-05T21:00:00.000Z');
      const all = memoryOutput({ json: true });
      await sendingPause(deps, {}, all);
      expect(all.documents[0]).toMatchObject({
        was_paused: true,
        pause: { all: { at: '2026-12-05T20:30:00.000Z' } },
      });
      // Under a pause of everything every kind waits: pausing one more changes nothing either.
      const kindUnderAll = memoryOutput({ json: true });
      await sendingPause(deps, { kind: 'digest' }, kindUnderAll);
      expect(kindUnderAll.documents[0]).toMatchObject({ was_paused: true });
      expect((await deps.gate.read()).pause.kinds).not.toHaveProperty('digest');
    });

    it('resume --kind of a kind that is not paused changes nothing, exits 0, and says so', async () => {
      const deps = await sending();
      await sendingPause(deps, { kind: 'orderShipped' }, memoryOutput());
      const out = memoryOutput({ json: true });
      await sendingResume(deps, { kind: 'order_shipped' }, out);
      expect(out.documents[0]).toMatchObject({ was_paused: false });
      expect(isPaused((await deps.gate.read()).pause, 'orderShipped')).toBe(true);
      const words = memoryOutput();
      await sendingResume(deps, { kind: 'order_shipped' }, words);
      expect(words.text()).toMatch(/order_shipped was not paused/);

      const resumed = memoryOutput({ json: true });
      await sendingResume(deps, { kind: 'orderShipped' }, resumed);
      expect(resumed.documents[0]).toMatchObject({ was_paused: true });
      expect(isPaused((await deps.gate.read()).pause, 'orderShipped')).toBe(false);
    });
  });

  it('is registered on the entry point and works with --table against the emulators', async () => {
    const { tableName } = await freshTable('sending-cli');
    const env = {
      ...process.env,
      NO_COLOR: '1',
      AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
      AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
    };
    const cli = (...args: string[]) =>
      run(process.execPath, ['cli/postdate.mjs', '--table', tableName, ...args], { env, timeout: 60_000 });
    await cli('sending', 'pause', '--kind', 'order shipped', '--reason', 'rollout');
    const { stdout } = await cli('--json', 'sending', 'status');
    const status = JSON.parse(stdout) as { pause: { kinds: Record<string, { reason: string }> } };
    expect(status.pause.kinds['order shipped']?.reason).toBe('rollout');
  }, 90_000);

  it('reconcile shows the breaker, and an open breaker is something to act on', async () => {
    const { tableName } = await freshTable('sending-reconcile');
    const documents = documentClient();
    const gate = new DynamoSendingGate(documents, tableName);
    const deps = {
      documents,
      tableName,
      dueIndex: new DynamoDueIndex(documents, tableName),
      now: () => new Date(),
      tenants: async () => [],
      graceSeconds: 300,
      retentionDays: 30,
      relays: relaysDeps({
        documents,
        tableName,
        names: ['default'],
        namesFrom: 'stack',
        now: () => new Date(),
      }),
    };
    const closed = await reconcile(deps, {}, memoryOutput());
    expect(closed.sending.available).toBe(true);
    expect(reconcileClean(closed)).toBe(true);

    const open = opened(
      NEVER_OPENED,
      { reason: '421: the relay is closing' },
      new Date(),
      { probeIntervalMs: 30_000, probeTimeoutMs: 10_000 },
      '5',
    );
    if (open === undefined) throw new Error('a closed breaker opens');
    expect(await gate.writeBreaker(NEVER_OPENED, open)).toBe('written');
    const out = memoryOutput();
    const report = await reconcile(deps, {}, out);
    expect(report.sending.available).toBe(false);
    expect(report.sending.relays[0]).toMatchObject({ breaker: 'open', reason: '421: the relay is closing' });
    expect(reconcileClean(report)).toBe(false);
    expect(out.text()).toContain('UNAVAILABLE');
  });

  describe('with several relays (DESIGN §15: each relay has its own breaker)', () => {
    it('sending status is unavailable only when no relay takes mail, and names the relay it leaves through', async () => {
      const t = await severalRelays(['primary', 'backup']);
      await openBreaker(t.relays.gate('primary'), '421: greeting');
      let out = memoryOutput();
      let status = await sendingStatus(t.sending, out);
      expect(status).toMatchObject({ available: true, leavingThrough: 'backup' });
      expect(status.relays.map((relay) => [relay.name, relay.breaker])).toEqual([
        ['primary', 'open'],
        ['backup', 'closed'],
      ]);

      await openBreaker(t.relays.gate('backup'), '454: TLS not available');
      out = memoryOutput();
      status = await sendingStatus(t.sending, out);
      expect(status).toMatchObject({ available: false, leavingThrough: null });
      expect(out.text()).toContain('UNAVAILABLE');
      expect(out.text()).not.toContain('available (breaker closed)');
    });

    it('sending status names a relay whose daily quota is spent, and until when, as the reason mail left it (decision 0244)', async () => {
      const t = await severalRelays(['primary', 'backup']);
      const gate = t.relays.gate('primary');
      const { breaker } = await gate.read();
      const held = throttled(breaker, new Date(), { ...BREAKER_SETTINGS, quotaHoldMs: 300_000 }, 'quota');
      if (held === undefined) throw new Error('a closed breaker takes a quota hold');
      expect(await gate.writeBreaker(breaker, held)).toBe('written');
      const out = memoryOutput();
      expect(await sendingStatus(t.sending, out)).toMatchObject({
        available: true,
        leavingThrough: 'backup',
      });
      expect(out.text()).toMatch(
        new RegExp(`relay primary: +daily quota spent until ${held.throttled_until}`),
      );
    });

    it('sending status names the drain of a relay whose breaker is open, and no probe: a drained relay is never probed (runbook §5a)', async () => {
      const t = await severalRelays(['primary', 'backup']);
      await openBreaker(t.relays.gate('primary'), '421: greeting');
      const probeAt = (await t.relays.gate('primary').read()).breaker.probe_at ?? '';
      await relaysDisable(t.relays, 'primary', { reason: 'provider maintenance' }, memoryOutput());
      const out = memoryOutput();
      await sendingStatus(t.sending, out);
      expect(out.text()).toMatch(
        /relay primary: +disabled since \S+ \(provider maintenance\); breaker open since/,
      );
      expect(out.text()).not.toContain(probeAt);
      expect(out.text()).not.toMatch(/next probe/);
    });

    it('reconcile exits 1 while every relay is down, 0 while one takes mail', async () => {
      const t = await severalRelays(['primary', 'backup']);
      await openBreaker(t.relays.gate('primary'), '421: greeting');
      expect(reconcileClean(await reconcile(t.reconcile, {}, memoryOutput()))).toBe(true);

      await openBreaker(t.relays.gate('backup'), '421: greeting');
      const out = memoryOutput();
      const report = await reconcile(t.reconcile, {}, out);
      expect(report.sending.available).toBe(false);
      expect(reconcileClean(report)).toBe(false);
      expect(out.text()).toContain('UNAVAILABLE');
    });

    it('reconcile lists what the senders hold (paused, no relay) as held, not stuck, as the sweeper decides', async () => {
      const t = await severalRelays(['primary', 'backup']);
      const createdAt = new Date(Date.now() - 3_600_000).toISOString();
      const overdue = new Date(Date.now() - 1_800_000).toISOString();
      const [campaign, invoice, test] = [messageId(7001), messageId(7002), messageId(7003)];
      await seedMessages(t.reconcile.documents, t.tableName, [
        { id: campaign, status: 'scheduled', createdAt, sendAt: overdue, tags: { kind: 'campaign' } },
        { id: invoice, status: 'scheduled', createdAt, sendAt: overdue, tags: { kind: 'invoice' } },
        // A test message's copies pass every gate (DESIGN §14): nothing holds it.
        {
          id: test,
          tenant: 'acme.test',
          status: 'scheduled',
          createdAt,
          sendAt: overdue,
          tags: { kind: 'campaign' },
        },
      ]);
      const stuckIds = (report: Awaited<ReturnType<typeof reconcile>>) =>
        report.stuck.map((entry) => entry.id).sort();

      // Everything paused: the live ones are held, the test one is stuck.
      await sendingPause(t.sending, {}, memoryOutput());
      let report = await reconcile(t.reconcile, {}, memoryOutput());
      expect(stuckIds(report)).toEqual([test]);
      expect(report.held.map((entry) => [entry.id, entry.heldBy]).sort()).toEqual([
        [campaign, 'paused'],
        [invoice, 'paused'],
      ]);

      // One kind paused: only its messages are held.
      await sendingResume(t.sending, {}, memoryOutput());
      await sendingPause(t.sending, { kind: 'campaign' }, memoryOutput());
      report = await reconcile(t.reconcile, {}, memoryOutput());
      expect(report.held.map((entry) => [entry.id, entry.heldBy])).toEqual([[campaign, 'paused']]);
      expect(stuckIds(report)).toEqual([invoice, test].sort());

      // No relay takes mail: every live message is held; reconcile still exits 1 for the relays.
      await sendingResume(t.sending, {}, memoryOutput());
      await openBreaker(t.relays.gate('primary'), '421: greeting');
      await openBreaker(t.relays.gate('backup'), '421: greeting');
      const out = memoryOutput();
      report = await reconcile(t.reconcile, {}, out);
      expect(report.held.map((entry) => entry.heldBy)).toEqual(['no-relay', 'no-relay']);
      expect(stuckIds(report)).toEqual([test]);
      expect(out.text()).toContain('held');
    });

    it('reconcile calls stuck, not held, a paused message past its not_after: the sweeper re-dispatches it for the sender to expire (decision 0257)', async () => {
      const t = await severalRelays(['primary', 'backup']);
      const createdAt = new Date(Date.now() - 3_600_000).toISOString();
      const overdue = new Date(Date.now() - 1_800_000).toISOString();
      const [lapsed, waiting] = [messageId(7020), messageId(7021)];
      await seedMessages(t.reconcile.documents, t.tableName, [
        { id: lapsed, status: 'scheduled', createdAt, sendAt: overdue, notAfter: overdue },
        { id: waiting, status: 'scheduled', createdAt, sendAt: overdue },
      ]);
      await sendingPause(t.sending, {}, memoryOutput());
      const report = await reconcile(t.reconcile, {}, memoryOutput());
      expect(report.stuck.map((entry) => entry.id)).toEqual([lapsed]);
      expect(report.held.map((entry) => [entry.id, entry.heldBy])).toEqual([[waiting, 'paused']]);
    });

    it('reconcile exits 0 while a pause holds every overdue message and nothing else is wrong', async () => {
      const t = await severalRelays(['primary', 'backup']);
      const createdAt = new Date(Date.now() - 3_600_000).toISOString();
      const sendAt = new Date(Date.now() - 1_800_000).toISOString();
      await seedMessages(t.reconcile.documents, t.tableName, [
        { id: messageId(7010), status: 'scheduled', createdAt, sendAt },
      ]);
      await sendingPause(t.sending, {}, memoryOutput());
      const report = await reconcile(t.reconcile, {}, memoryOutput());
      expect(report.stuck).toEqual([]);
      expect(reconcileClean(report)).toBe(true);
    });

    it('the entry point reads the relays from POSTDATE_RELAY_NAMES for sending status and reconcile', async () => {
      const t = await severalRelays(['primary', 'backup']);
      await openBreaker(t.relays.gate('primary'), '421: greeting');
      await openBreaker(t.relays.gate('backup'), '421: greeting');
      const env = {
        ...process.env,
        NO_COLOR: '1',
        AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
        AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_REGION: 'us-east-1',
        POSTDATE_RELAY_NAMES: 'primary,backup',
      };
      const cli = (...args: string[]) =>
        run(process.execPath, ['cli/postdate.mjs', '--table', t.tableName, ...args], {
          env,
          timeout: 60_000,
        }).then(
          (done) => ({ code: 0, stdout: done.stdout }),
          (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
        );
      const status = await cli('--json', 'sending', 'status');
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ available: false });
      const reconciled = await cli('--json', 'reconcile', '--since', '1h');
      expect(reconciled.code).toBe(1);
      expect(JSON.parse(reconciled.stdout)).toMatchObject({ sending: { available: false } });
    }, 90_000);
  });
});
