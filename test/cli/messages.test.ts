import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/cliErrors.js';
import {
  type MessagesDeps,
  messagesCancel,
  messagesList,
  messagesRetry,
  messagesShow,
  parseSince,
  readState,
} from '../../cli/messagesCommands.js';
import { memoryOutput } from '../../cli/output.js';
import { relaysDeps, relaysDisable } from '../../cli/relaysCommands.js';
import { NOT_PAUSED, pauseAfter } from '../../lambdas/core/relayBreaker.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { messageId, type SeedMessage, seedMessages, stateRecord } from './cliFixtures.js';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const minutesAgo = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000).toISOString();

const SEEDS: SeedMessage[] = [
  { id: messageId(1), status: 'dead', createdAt: minutesAgo(50), tags: { kind: 'invoice' }, attempts: 8 },
  { id: messageId(2), status: 'dead', createdAt: minutesAgo(40), tags: { kind: 'welcome' }, attempts: 8 },
  { id: messageId(3), status: 'sent', createdAt: minutesAgo(30), tags: { kind: 'invoice' }, attempts: 1 },
  { id: messageId(4), status: 'scheduled', createdAt: minutesAgo(20), sendAt: minutesAgo(-60) },
  {
    id: messageId(5),
    status: 'unknown',
    createdAt: minutesAgo(10),
    attempts: 1,
    lastError: {
      class: 'ambiguous',
      code: 'ECONNECTION',
      enhanced_code: null,
      message: 'connection closed after the body was sent',
    },
    history: [
      {
        at: minutesAgo(9),
        outcome: 'ambiguous',
        code: 'ECONNECTION',
        enhanced_code: null,
        reply: null,
        duration_ms: 812,
      },
    ],
  },
  { id: messageId(6), tenant: 'globex', status: 'dead', createdAt: minutesAgo(5), attempts: 8 },
  { id: messageId(7), status: 'failed', createdAt: minutesAgo(200), attempts: 1 },
];

let deps: MessagesDeps;

beforeAll(async () => {
  const { tableName } = await freshTable();
  const documents = documentClient();
  await seedMessages(documents, tableName, SEEDS);
  deps = {
    documents,
    tableName,
    store: new DynamoApiStore(documents, tableName),
    now: () => NOW,
    tenants: async () => ['acme', 'globex'],
    retentionDays: 30,
    maxAttempts: 8,
    messageIdDomain: 'mail.example.com',
  };
});

describe('postdate messages list', () => {
  it('lists one status across every tenant, newest first, through the by_status index', async () => {
    const report = await messagesList(deps, { status: 'dead' }, memoryOutput());
    expect(report.items.map((row) => [row.id, row.tenant])).toEqual([
      [messageId(6), 'globex'],
      [messageId(2), 'acme'],
      [messageId(1), 'acme'],
    ]);
  });

  it('narrows by tenant, by tag and by --since', async () => {
    expect((await messagesList(deps, { status: 'dead', tenant: 'acme' }, memoryOutput())).items).toHaveLength(
      2,
    );
    const invoices = await messagesList(deps, { tags: ['kind=invoice'] }, memoryOutput());
    expect(invoices.items.map((row) => row.id)).toEqual([messageId(3), messageId(1)]);
    const recent = await messagesList(deps, { since: '45m' }, memoryOutput());
    expect(recent.items.map((row) => row.id)).toEqual([
      messageId(6),
      messageId(5),
      messageId(4),
      messageId(3),
      messageId(2),
    ]);
  });

  it('says when more match than --limit, and prints a table for people', async () => {
    const out = memoryOutput();
    const report = await messagesList(deps, { limit: 2 }, out);
    expect(report.items).toHaveLength(2);
    expect(report.truncated).toBe(true);
    expect(out.lines[0]).toMatch(/^ID\s+TENANT\s+STATUS/);
    expect(out.warnings[0]).toContain('more than 2');
  });

  it('rejects an unknown status (naming the statuses of DESIGN §2), a bad tag and a bad time before reading anything', async () => {
    await expect(messagesList(deps, { status: 'lost' }, memoryOutput())).rejects.toThrow(
      'unknown status "lost" (one of scheduled, sending, retrying, sent, failed, dead, cancelled, superseded, expired, unknown, suppressed)',
    );
    await expect(messagesList(deps, { tags: ['kind'] }, memoryOutput())).rejects.toThrow(/key=value/);
    await expect(messagesList(deps, { since: 'yesterday' }, memoryOutput())).rejects.toThrow(/--since/);
  });

  it('reads relative times against the clock it is given', () => {
    expect(parseSince('2h', NOW)).toBe('2026-11-29T10:00:00.000Z');
    expect(parseSince('2026-11-28T00:00:00Z', NOW)).toBe('2026-11-28T00:00:00.000Z');
  });
});

describe('postdate messages show', () => {
  it('shows the status, the history and the last error in words, with the Message-ID to search for', async () => {
    const out = memoryOutput();
    const report = await messagesShow(deps, messageId(5), out);
    expect(report.message.status).toBe('unknown');
    expect(report.message_id_header).toBe(`<${messageId(5)}@mail.example.com>`);
    expect(report.explanation.status).toContain(`postdate messages retry ${messageId(5)}`);
    expect(report.explanation.last_error).toMatch(/^ambiguous: .*\[ECONNECTION\]/);
    expect(out.text()).toContain('history');
    expect(out.text()).toContain('812 ms');
  });

  it("does not guess the Message-ID when the stack's domain is not known here: null, and what to set (runbook procedure 2)", async () => {
    // A shell without POSTDATE_MESSAGE_ID_DOMAIN and without --stack against a deployed stack: a
    // Message-ID from the default domain is one the relay never saw, and a search that finds nothing
    // leads to a retry, a second copy (decision 0282).
    const out = memoryOutput();
    const report = await messagesShow({ ...deps, messageIdDomain: undefined }, messageId(5), out);
    expect(report.message_id_header).toBeNull();
    expect(out.text()).toMatch(
      /message-id:?\s+not known here: set POSTDATE_MESSAGE_ID_DOMAIN .* or use --stack/,
    );
    expect(out.text()).not.toContain('@postdate.local');
  });

  it('says a waiting message is held by a pause of its kind or of everything, and what resumes it (decision 0253)', async () => {
    // runbook.md §5: a paused copy waits, no attempt counted. The message stays `scheduled` past its
    // send time; what holds it, and the command that lets it go, belong in `messages show`.
    const { tableName } = await freshTable();
    const documents = documentClient();
    const own: MessagesDeps = {
      ...deps,
      documents,
      tableName,
      store: new DynamoApiStore(documents, tableName),
    };
    await seedMessages(documents, tableName, [
      {
        id: messageId(20),
        status: 'scheduled',
        createdAt: minutesAgo(3),
        sendAt: minutesAgo(2),
        tags: { kind: 'welcome' },
      },
      {
        id: messageId(21),
        status: 'scheduled',
        createdAt: minutesAgo(3),
        sendAt: minutesAgo(2),
        tags: { kind: 'invoice' },
      },
      { id: messageId(22), status: 'sent', createdAt: minutesAgo(3), tags: { kind: 'welcome' }, attempts: 1 },
    ]);
    const gate = new DynamoSendingGate(documents, tableName);
    const kindPaused = pauseAfter(NOT_PAUSED, { action: 'pause', kind: 'welcome', reason: 'roll-out' }, NOW);
    expect(await gate.writePause(NOT_PAUSED, kindPaused)).toBe('written');

    const out = memoryOutput();
    const held = await messagesShow(own, messageId(20), out);
    expect(held.explanation.held).toBe(
      `sending is paused for kind welcome since ${NOW.toISOString()} (roll-out): postdate sending resume --kind welcome`,
    );
    expect(out.text()).toMatch(/held:\s+sending is paused for kind welcome/);
    // Another kind, and a message that no longer waits, are held by nothing.
    expect((await messagesShow(own, messageId(21), memoryOutput())).explanation.held).toBeNull();
    expect((await messagesShow(own, messageId(22), memoryOutput())).explanation.held).toBeNull();
    expect((await messagesShow(own, messageId(21), memoryOutput())).explanation).toHaveProperty('held', null);

    const allPaused = pauseAfter(kindPaused, { action: 'pause', reason: 'incident 42' }, NOW);
    expect(await gate.writePause(kindPaused, allPaused)).toBe('written');
    expect((await messagesShow(own, messageId(21), memoryOutput())).explanation.held).toBe(
      `sending is paused (everything) since ${NOW.toISOString()} (incident 42): postdate sending resume`,
    );
  });

  it('says a due message waits because no relay takes mail (each unavailable, disabled or its quota spent), not for its send time (runbook §5, §5a)', async () => {
    // Walking runbook §5a with every relay drained (`relays disable --force`), `messages show` of a
    // message past its send time said "waiting for its send time" and nothing held it.
    const { tableName } = await freshTable();
    const documents = documentClient();
    const own: MessagesDeps = {
      ...deps,
      documents,
      tableName,
      store: new DynamoApiStore(documents, tableName),
      relays: () =>
        relaysDeps({
          documents,
          tableName,
          names: ['primary', 'backup'],
          namesFrom: 'stack',
          now: () => NOW,
        }),
    };
    await seedMessages(documents, tableName, [
      { id: messageId(30), status: 'scheduled', createdAt: minutesAgo(3), sendAt: minutesAgo(2) },
      {
        id: messageId(31),
        status: 'scheduled',
        createdAt: minutesAgo(3),
        sendAt: '2026-11-30T12:00:00.000Z',
      },
    ]);
    const relays = own.relays?.();
    if (relays === undefined) throw new Error('the deps name the relays');
    // One relay drained: the mail leaves through the other, nothing holds it.
    await relaysDisable(relays, 'primary', { reason: 'provider maintenance' }, memoryOutput());
    expect((await messagesShow(own, messageId(30), memoryOutput())).explanation.held).toBeNull();
    await relaysDisable(relays, 'backup', { reason: 'both', force: true }, memoryOutput());
    const out = memoryOutput();
    const held = await messagesShow(own, messageId(30), out);
    expect(held.explanation.held).toMatch(/^no relay takes mail .*: postdate relays status/);
    expect(out.text()).toMatch(/held:\s+no relay takes mail/);
    // Not yet due: its send time holds it, not the relays.
    expect((await messagesShow(own, messageId(31), memoryOutput())).explanation.held).toBeNull();
  });

  it('leaves the relays unsaid, and still says the pause, when the shell cannot name the relays or the table contradicts its list (as `relays status` refuses it)', async () => {
    const { tableName } = await freshTable();
    const documents = documentClient();
    const relaysAs = (names: readonly string[], namesFrom: 'stack' | 'shell') => () =>
      relaysDeps({ documents, tableName, names, namesFrom, now: () => NOW });
    const own = (relays: MessagesDeps['relays']): MessagesDeps => ({
      ...deps,
      documents,
      tableName,
      store: new DynamoApiStore(documents, tableName),
      relays,
    });
    await seedMessages(documents, tableName, [
      { id: messageId(40), status: 'scheduled', createdAt: minutesAgo(3), sendAt: minutesAgo(2) },
    ]);
    const stack = relaysAs(['primary', 'backup'], 'stack')();
    await relaysDisable(stack, 'primary', { reason: 'maintenance' }, memoryOutput());
    await relaysDisable(stack, 'backup', { reason: 'maintenance', force: true }, memoryOutput());
    const gate = new DynamoSendingGate(documents, tableName);
    const allPaused = pauseAfter(NOT_PAUSED, { action: 'pause', reason: 'incident 42' }, NOW);
    expect(await gate.writePause(NOT_PAUSED, allPaused)).toBe('written');
    const paused = `sending is paused (everything) since ${NOW.toISOString()} (incident 42): postdate sending resume`;
    const heldWith = async (relays: MessagesDeps['relays']) =>
      (await messagesShow(own(relays), messageId(40), memoryOutput())).explanation.held;

    // The stack's own list: the pause and the relays.
    expect(await heldWith(relaysAs(['primary', 'backup'], 'stack'))).toMatch(
      /^sending is paused \(everything\) .*; no relay takes mail /,
    );
    // A shell's list that leaves out a relay the table holds, an unreadable list, none: the pause alone.
    expect(await heldWith(relaysAs(['primary'], 'shell'))).toBe(paused);
    expect(
      await heldWith(() => {
        throw new Error('POSTDATE_RELAYS is not JSON');
      }),
    ).toBe(paused);
    expect(await heldWith(undefined)).toBe(paused);
  });

  it('prints the local time, the zone and the quiet hours of a message that has them (docs/design.md §16)', async () => {
    const local = {
      ...stateRecord({
        id: messageId(8),
        status: 'scheduled',
        createdAt: minutesAgo(1),
        sendAt: '2026-12-03T08:00:00.000Z',
      }),
      time_zone: 'Europe/Berlin',
      quiet_hours: { start: '21:00', end: '08:00' },
    };
    await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: local }));
    const out = memoryOutput();
    const report = await messagesShow(deps, messageId(8), out);
    expect(report.message).toMatchObject({
      send_at_local: '2026-12-03T09:00:00',
      time_zone: 'Europe/Berlin',
      quiet_hours: { start: '21:00', end: '08:00' },
    });
    expect(out.text()).toMatch(/send at \(local\):\s+2026-12-03T09:00:00 Europe\/Berlin/);
    expect(out.text()).toMatch(/quiet hours:\s+21:00–08:00 Europe\/Berlin/);
    // Without a zone, neither line.
    expect((await messagesShow(deps, messageId(5), memoryOutput())).message.time_zone).toBeNull();
  });

  it('says a due message is held by its quiet hours, and when it may go (docs/design.md §16)', async () => {
    // NOW is 13:00 in Berlin: a message due two minutes ago, quiet 12:00–18:00 there, stays
    // `scheduled` past its send time with no attempt; what holds it belongs in `messages show`.
    const quiet = (id: string, sendAt: string, quietHours: { start: string; end: string }) => ({
      ...stateRecord({ id, status: 'scheduled', createdAt: minutesAgo(3), sendAt }),
      time_zone: 'Europe/Berlin',
      quiet_hours: quietHours,
    });
    const items = [
      quiet(messageId(30), minutesAgo(2), { start: '12:00', end: '18:00' }),
      // Outside its window now, and one not yet due (the sender decides when it comes due).
      quiet(messageId(31), minutesAgo(2), { start: '21:00', end: '08:00' }),
      quiet(messageId(32), minutesAgo(-60), { start: '12:00', end: '18:00' }),
    ];
    for (const item of items)
      await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: item }));

    const out = memoryOutput();
    const held = await messagesShow(deps, messageId(30), out);
    expect(held.explanation.held).toBe(
      'inside its quiet hours 12:00–18:00 Europe/Berlin: the sender holds it until 2026-11-29T17:00:00.000Z ' +
        '(2026-11-29T18:00:00 there); holding is no attempt',
    );
    expect(out.text()).toMatch(/held:\s+inside its quiet hours 12:00–18:00 Europe\/Berlin/);
    // Its not_after before the window's end: the sender expires it.
    const deadline = {
      ...quiet(messageId(33), minutesAgo(2), { start: '12:00', end: '18:00' }),
      not_after: minutesAgo(-60),
    };
    await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: deadline }));
    expect((await messagesShow(deps, messageId(33), memoryOutput())).explanation.held).toBe(
      'inside its quiet hours 12:00–18:00 Europe/Berlin: its not_after comes before they end, so the sender expires it unsent',
    );
    // A retrying one: held when the sender wrote its due_at at the window's end; one whose backoff
    // ends after the window (due_at 19:00Z) waits for that, not for its quiet hours.
    const retrying = (id: string, dueAt: string) => ({
      ...stateRecord({ id, status: 'retrying', createdAt: minutesAgo(31), sendAt: minutesAgo(30), dueAt }),
      time_zone: 'Europe/Berlin',
      quiet_hours: { start: '12:00', end: '18:00' },
    });
    for (const item of [
      retrying(messageId(34), '2026-11-29T17:00:00.000Z'),
      retrying(messageId(35), '2026-11-29T19:00:00.000Z'),
    ])
      await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: item }));
    expect((await messagesShow(deps, messageId(34), memoryOutput())).explanation.held).toMatch(
      /^inside its quiet hours 12:00–18:00 Europe\/Berlin: the sender holds it until 2026-11-29T17:00:00.000Z/,
    );
    expect((await messagesShow(deps, messageId(35), memoryOutput())).explanation.held).toBeNull();
    expect((await messagesShow(deps, messageId(31), memoryOutput())).explanation.held).toBeNull();
    expect((await messagesShow(deps, messageId(32), memoryOutput())).explanation.held).toBeNull();
  });

  it("names the relay a sending message's lease sends through, for an operator deciding a stuck one (decision 0182)", async () => {
    const leased = {
      ...stateRecord({ id: messageId(9), status: 'sending', createdAt: minutesAgo(3), attempts: 1 }),
      lease_owner: 'sender-4f2a',
      lease_until: minutesAgo(1),
      lease_relay: 'backup',
      relay: 'primary',
    };
    await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: leased }));
    const out = memoryOutput();
    const report = await messagesShow(deps, messageId(9), out);
    expect(report.message).toMatchObject({
      lease_until: minutesAgo(1),
      lease_relay: 'backup',
      relay: 'primary',
    });
    expect(out.text()).toMatch(/lease relay:\s+backup/);
    // DESIGN §5: a lease that expired while `sending` is an ambiguous attempt, not a send going on.
    expect(report.explanation.status).not.toMatch(/right now/);
    expect(report.explanation.status).toMatch(/lease \(relay backup\) ended .* no outcome/);
    expect(report.explanation.status).toContain('backup');
    const live = { ...leased, id: messageId(10), pk: messagePk(messageId(10)), lease_until: minutesAgo(-1) };
    await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: live }));
    expect((await messagesShow(deps, messageId(10), memoryOutput())).explanation.status).toMatch(
      /right now.*backup/,
    );
    // A message not leased names none.
    const unleased = await messagesShow(deps, messageId(5), memoryOutput());
    expect(unleased.message).toMatchObject({ lease_relay: null });
  });

  it("counts the recipients as the API's view does, and sends a suppressed one to its tenant's list (runbook procedure 6)", async () => {
    // Three recipients: one accepted, one suppressed at send time; one other message all suppressed.
    const some = {
      ...stateRecord({ id: messageId(11), status: 'sent', createdAt: minutesAgo(4), attempts: 1 }),
      rcpt_total: 3,
      rcpt_accepted: [0],
      rcpt_rejected: [1],
      rcpt_suppressed: [2],
    };
    const all = {
      ...stateRecord({ id: messageId(12), tenant: 'globex', status: 'suppressed', createdAt: minutesAgo(4) }),
      rcpt_total: 2,
      rcpt_suppressed: [0, 1],
    };
    for (const item of [some, all])
      await deps.documents.send(new PutCommand({ TableName: deps.tableName, Item: item }));
    const out = memoryOutput();
    const report = await messagesShow(deps, messageId(11), out);
    expect(report.message.recipients).toEqual({ accepted: 1, pending: 0, rejected: 1, suppressed: 1 });
    expect(out.text()).toMatch(/recipients:\s+accepted 1, pending 0, rejected 1, suppressed 1/);
    const suppressed = await messagesShow(deps, messageId(12), memoryOutput());
    expect(suppressed.message.recipients).toEqual({ accepted: 0, pending: 0, rejected: 0, suppressed: 2 });
    // Against AWS the list needs its tenant (exit 2 without); locally the default is another tenant's.
    expect(suppressed.explanation.status).toContain('`postdate suppressions list --tenant globex --all`');
    // A record without the counts shows zeros, as the API's view does.
    expect((await messagesShow(deps, messageId(4), memoryOutput())).message.recipients).toEqual({
      accepted: 0,
      pending: 0,
      rejected: 0,
      suppressed: 0,
    });
  });

  it('refuses an empty id or one that is not an id before reading anything (an unset $ID)', async () => {
    await expect(messagesShow(deps, '', memoryOutput())).rejects.toMatchObject({
      exitCode: EXIT.usage,
      message:
        'the message id is empty: is the variable you gave it in set? (postdate messages list shows ids)',
    });
    await expect(messagesShow(deps, 'a b', memoryOutput())).rejects.toMatchObject({
      exitCode: EXIT.usage,
      message:
        '"a b" is not a message id: 1 to 32 letters, digits, "-" or "_" (postdate messages list shows ids)',
    });
    // Nothing changes: the good id before the bad one is not cancelled either.
    await expect(messagesCancel(deps, [messageId(4), ''], memoryOutput())).rejects.toMatchObject({
      exitCode: EXIT.usage,
    });
    expect((await messagesShow(deps, messageId(4), memoryOutput())).message.status).toBe('scheduled');
  });

  it('fails with one line for an id that does not exist', async () => {
    await expect(messagesShow(deps, messageId(404), memoryOutput())).rejects.toThrow(
      `no message ${messageId(404)}`,
    );
  });
});

describe('postdate messages cancel and retry', () => {
  it('cancels a scheduled message with the API conditional update, and refuses a sent one', async () => {
    const out = memoryOutput({ json: true });
    const report = await messagesCancel(deps, [messageId(4), messageId(3)], out);
    expect(report.ok).toBe(false);
    expect(report.results).toEqual([
      { id: messageId(4), outcome: 'cancelled', status: 'cancelled', rev: 1, reason: null },
      {
        id: messageId(3),
        outcome: 'conflict',
        status: 'sent',
        rev: 1,
        reason: 'it is sent: cancel takes a scheduled or retrying message',
      },
    ]);
    const cancelled = await readState(deps, messageId(4));
    expect(cancelled?.due_pk).toBeUndefined();
    expect(cancelled?.expires_at).toBe(Math.floor(NOW.getTime() / 1000) + 30 * 86_400);
    expect(out.documents).toHaveLength(1);
  });

  it('retries dead, failed and unknown messages of any tenant with rev + 1, and reports an unknown id', async () => {
    // A message that waited has no TTL on its body, and a retry gives it none (DESIGN §2).
    const bodyKey = { pk: messagePk(messageId(7)), sk: 'BODY' };
    await deps.documents.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: { ...bodyKey, fingerprint: 'f', created_at: minutesAgo(200) },
      }),
    );
    const report = await messagesRetry(
      deps,
      [messageId(6), messageId(7), messageId(5), messageId(404)],
      memoryOutput(),
    );
    expect(report.results.map((row) => [row.id, row.outcome, row.status, row.rev])).toEqual([
      [messageId(6), 'retried', 'scheduled', 2],
      [messageId(7), 'retried', 'scheduled', 2],
      [messageId(5), 'retried', 'scheduled', 2],
      [messageId(404), 'not-found', null, null],
    ]);
    expect(report.ok).toBe(false);
    const retried = await readState(deps, messageId(6));
    expect(retried).toMatchObject({ tenant: 'globex', status: 'scheduled', send_at: NOW.toISOString() });
    // A fresh budget, as a DLQ redrive would give it (DESIGN §5); `attempts` stays history (§2).
    expect(retried).toMatchObject({ attempts: 8, attempt_limit: 16 });
    expect(retried?.due_pk).toBeDefined();
    const { Item: body } = await deps.documents.send(
      new GetCommand({ TableName: deps.tableName, Key: bodyKey }),
    );
    expect(body).toBeDefined();
    expect(body?.expires_at).toBeUndefined();
  });
});
