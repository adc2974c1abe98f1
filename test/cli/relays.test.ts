import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { CliError, EXIT, NotFoundError, UsageError } from '../../cli/cliErrors.js';
import { memoryOutput } from '../../cli/output.js';
import {
  relayNamesOf,
  relaysDeps,
  relaysDepsOf,
  relaysDisable,
  relaysEnable,
  relaysStatus,
} from '../../cli/relaysCommands.js';
import { openTarget } from '../../cli/target.js';
import { NOT_PAUSED, opened, pauseAfter, throttled } from '../../lambdas/core/relayBreaker.js';
import type { SendingGateStore } from '../../lambdas/ports/SendingGate.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import type { StackFile } from '../../local/stackFile.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * `postdate relays status|disable NAME|enable NAME` (DESIGN §15) against DynamoDB Local: what the
 * senders read (each relay's breaker item, the drain beside it) is what the commands wrote.
 */
const run = promisify(execFile);
const SETTINGS = { probeIntervalMs: 30_000, probeTimeoutMs: 30_000 };

async function relaysOfTable(names: readonly string[]) {
  const { tableName } = await freshTable('relays');
  const documents = documentClient();
  return {
    tableName,
    deps: relaysDeps({ documents, tableName, names, namesFrom: 'stack', now: () => new Date() }),
  };
}

describe('postdate relays', () => {
  it('status lists each relay in order with its breaker, and names the relay mail leaves through', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup', 'third']);
    let status = await relaysStatus(deps, memoryOutput());
    expect(status.relays.map((relay) => [relay.name, relay.position, relay.breaker])).toEqual([
      ['primary', 1, 'closed'],
      ['backup', 2, 'closed'],
      ['third', 3, 'closed'],
    ]);
    expect(status.leavingThrough).toBe('primary');

    // The first relay's breaker opens (as a sender opens it): mail leaves through the second.
    const primary = deps.gate('primary');
    const { breaker } = await primary.read();
    const open = opened(breaker, { reason: '421: greeting' }, new Date(), SETTINGS, '7');
    expect(await primary.writeBreaker(breaker, open ?? breaker)).toBe('written');
    status = await relaysStatus(deps, memoryOutput());
    expect(status.relays[0]).toMatchObject({
      breaker: 'open',
      reason: '421: greeting',
      nextProbe: open?.probe_at,
    });
    expect(status.leavingThrough).toBe('backup');
  });

  it('disable drains a relay (the next takes its mail), enable brings it back; the senders read the same item', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    const out = memoryOutput();
    let status = await relaysDisable(deps, 'primary', { reason: 'provider maintenance' }, out);
    expect(status.relays[0]?.disabled?.reason).toBe('provider maintenance');
    expect(status.leavingThrough).toBe('backup');
    expect((await deps.gate('primary').read()).disabled?.reason).toBe('provider maintenance');
    // The breaker is untouched: the drain is the operator's attribute, the breaker the senders'.
    expect((await deps.gate('primary').read()).breaker.version).toBe(0);

    status = await relaysEnable(deps, 'primary', out);
    expect(status.relays[0]?.disabled).toBeNull();
    expect(status.leavingThrough).toBe('primary');
  });

  it('refuses to disable the last enabled relay, and names the relays for an unknown one', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    await relaysDisable(deps, 'backup', {}, memoryOutput());
    await expect(relaysDisable(deps, 'primary', {}, memoryOutput())).rejects.toThrow(CliError);
    await expect(relaysDisable(deps, 'primary', {}, memoryOutput())).rejects.toThrow(/sending pause/);
    expect((await deps.gate('primary').read()).disabled).toBeUndefined();
    // A name no relay has is not found (exit 4, as a message, template or endpoint not found: 0206),
    // naming the relays there are and the command that lists them; nothing is written.
    for (const command of [
      () => relaysEnable(deps, 'nope', memoryOutput()),
      () => relaysDisable(deps, 'nope', {}, memoryOutput()),
    ]) {
      const refused = await command().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(NotFoundError);
      expect(refused).toMatchObject({ exitCode: EXIT.notFound, next: 'postdate relays status' });
      expect((refused as NotFoundError).detail).toMatch(/no relay "nope": the relays are primary, backup/);
    }
    expect((await deps.gate('nope').read()).disabled).toBeUndefined();
  });

  it('disable and enable are idempotent: a repeat keeps the drain as it was (since, and the reason unless a new one is given), an enable of a relay not disabled changes nothing; each says so', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    const first = await relaysDisable(deps, 'primary', { reason: 'provider maintenance' }, memoryOutput());
    expect(first).toMatchObject({ wasDisabled: false });
    const since = first.relays[0]?.disabled?.at;

    // The same command again (a script, a second operator): the drain is the first one's.
    const again = memoryOutput();
    const repeated = await relaysDisable(deps, 'primary', {}, again);
    expect(repeated).toMatchObject({ wasDisabled: true, leavingThrough: 'backup' });
    expect(repeated.relays[0]?.disabled).toEqual({ reason: 'provider maintenance', at: since });
    expect(again.text()).toMatch(/relay primary was already disabled since .*\(provider maintenance\)/);
    // A new reason replaces the reason, not the time the drain began.
    const reasoned = await relaysDisable(deps, 'primary', { reason: 'ticket 42' }, memoryOutput());
    expect(reasoned.relays[0]?.disabled).toEqual({ reason: 'ticket 42', at: since });

    const json = memoryOutput({ json: true });
    await relaysEnable(deps, 'primary', json);
    expect(json.documents[0]).toMatchObject({ was_disabled: true, leaving_through: 'primary' });
    const notDisabled = memoryOutput();
    expect(await relaysEnable(deps, 'backup', notDisabled)).toMatchObject({ wasDisabled: false });
    expect(notDisabled.text()).toMatch(/relay backup was not disabled: nothing changed/);
  });

  it('enable of a relay whose breaker is open says it takes mail once its probe answers, not at once', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    await relaysDisable(deps, 'primary', {}, memoryOutput());
    await openBreaker(deps.gate('primary'), '421: greeting');
    const out = memoryOutput();
    await relaysEnable(deps, 'primary', out);
    expect(out.text()).toMatch(
      /relay primary enabled: its breaker is open; it takes mail again once its probe answers/,
    );
  });

  it('a drained relay whose breaker is open shows no next probe: none comes until it is enabled (runbook §5a: no probe reaches it)', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    await openBreaker(deps.gate('primary'), '421: greeting');
    const probeAt = (await deps.gate('primary').read()).breaker.probe_at;
    const out = memoryOutput();
    const status = await relaysDisable(deps, 'primary', { reason: 'provider maintenance' }, out);
    expect(status.relays[0]).toMatchObject({ breaker: 'open', nextProbe: null });
    expect(out.text()).not.toContain(probeAt);
    // Enabled, its probe is due again at the time its breaker kept.
    expect((await relaysEnable(deps, 'primary', memoryOutput())).relays[0]).toMatchObject({
      nextProbe: probeAt,
    });
  });

  it('refuses to disable the only relay, saying it is the only one and how to hold all mail; --force drains it', async () => {
    const { deps } = await relaysOfTable(['default']);
    const refused = await relaysDisable(deps, 'default', {}, memoryOutput()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CliError);
    expect((refused as CliError).exitCode).toBe(EXIT.failed);
    expect((refused as CliError).message).toMatch(/"default" is the only relay/);
    expect((refused as CliError).message).toMatch(/postdate sending pause/);
    expect((refused as CliError).message).not.toMatch(/another relay|every other one/);
    expect((await deps.gate('default').read()).disabled).toBeUndefined();
    const forced = await relaysDisable(deps, 'default', { force: true }, memoryOutput());
    expect(forced).toMatchObject({ available: false, leavingThrough: null });
  });

  it('a relay whose daily quota is spent says so and until when: mail leaves through the next, though its breaker is closed and it is enabled', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    const held = await spendQuota(deps.gate('primary'));
    const out = memoryOutput();
    const status = await relaysStatus(deps, out);
    expect(status.leavingThrough).toBe('backup');
    expect(status.relays[0]).toMatchObject({ breaker: 'closed', disabled: null, quotaHeldUntil: held });
    expect(status.relays[1]?.quotaHeldUntil).toBeNull();
    expect(out.text()).toMatch(new RegExp(`daily quota spent until ${held}`));

    const json = memoryOutput({ json: true });
    await relaysStatus(deps, json);
    expect(json.documents[0]).toMatchObject({
      relays: [{ quota_held_until: held }, { quota_held_until: null }],
    });

    // With one relay, no relay takes mail: the status says why, not "unavailable or disabled".
    const single = await relaysOfTable(['default']);
    await spendQuota(single.deps.gate('default'));
    const alone = memoryOutput();
    expect((await relaysStatus(single.deps, alone)).available).toBe(false);
    expect(alone.text()).toMatch(/no relay: .*daily quota/);
  });

  it('refuses a drain after which no relay would take mail (the other one unavailable) unless forced, and names the relay that takes the mail', async () => {
    const { deps, tableName } = await relaysOfTable(['primary', 'backup']);
    await openBreaker(deps.gate('primary'), '421: greeting');
    const cli = cliFrom(tableName, { POSTDATE_RELAY_NAMES: 'primary,backup' });

    // primary is open: backup carries the mail; draining it would leave none.
    const refused = await cli('relays', 'disable', 'backup');
    expect(refused.code).toBe(1);
    expect((JSON.parse(refused.stdout) as { error: { detail: string } }).error.detail).toMatch(
      /no relay .*takes mail.*--force/,
    );
    expect((await deps.gate('backup').read()).disabled).toBeUndefined();

    // A deliberate drain of everything: mail waits, no attempt counted.
    const forced = await cli('relays', 'disable', 'backup', '--force', '--reason', 'all out');
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ available: false });
    expect((await deps.gate('backup').read()).disabled?.reason).toBe('all out');

    // Draining the open one while backup takes mail says where the mail goes.
    await relaysEnable(deps, 'backup', memoryOutput());
    const out = memoryOutput();
    await relaysDisable(deps, 'primary', {}, out);
    expect(out.text()).toContain('its mail leaves through backup');
  }, 90_000);

  it('--json names every field cli.md names, null when it has no value (no relay taking mail, a closed breaker, no drain)', async () => {
    const { deps } = await relaysOfTable(['primary', 'backup']);
    await openBreaker(deps.gate('primary'), '421: greeting');
    await relaysDisable(deps, 'backup', { force: true }, memoryOutput());
    const out = memoryOutput({ json: true });
    await relaysStatus(deps, out);
    expect(out.documents[0]).toMatchObject({
      available: false,
      leaving_through: null,
      relays: [
        { name: 'primary', breaker: 'open', disabled: null, reason: '421: greeting' },
        { name: 'backup', breaker: 'closed', opened_at: null, reason: null, next_probe: null },
      ],
    });
  });

  it('reads the relays from POSTDATE_RELAY_NAMES, else POSTDATE_RELAYS, else the one default relay', () => {
    expect(relayNamesOf({ POSTDATE_RELAY_NAMES: 'a, b' })).toEqual(['a', 'b']);
    expect(relayNamesOf({ POSTDATE_RELAYS: JSON.stringify([{ name: 'x' }, { name: 'y' }]) })).toEqual([
      'x',
      'y',
    ]);
    expect(relayNamesOf({})).toEqual(['default']);
    expect(() => relayNamesOf({ POSTDATE_RELAYS: '[' })).toThrow(UsageError);
  });

  it('is registered on the entry point; --json prints what a script can parse', async () => {
    const { tableName } = await freshTable('relays-cli');
    const env = {
      ...process.env,
      NO_COLOR: '1',
      POSTDATE_RELAY_NAMES: 'primary,backup',
      AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
      AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_REGION: 'us-east-1',
    };
    const cli = (...args: string[]) =>
      run(process.execPath, ['cli/postdate.mjs', '--table', tableName, ...args], { env, timeout: 60_000 });
    await cli('relays', 'disable', 'primary', '--reason', 'drain');
    const { stdout } = await cli('--json', 'relays', 'status');
    const status = JSON.parse(stdout) as {
      relays: { name: string; disabled?: { reason: string } }[];
      leaving_through: string;
    };
    expect(status.relays.map((relay) => relay.name)).toEqual(['primary', 'backup']);
    expect(status.relays[0]?.disabled?.reason).toBe('drain');
    expect(status.leaving_through).toBe('backup');
    const refused = await cli('--json', 'relays', 'enable', 'nope').catch(
      (error: { code: number; stdout: string }) => error,
    );
    expect('code' in refused ? refused.code : 0).toBe(4);
  }, 90_000);
});

/** Holds one relay for its daily quota as a sender does after SES's quota reply; answers the hold's end. */
async function spendQuota(gate: SendingGateStore): Promise<string> {
  const { breaker } = await gate.read();
  const held = throttled(breaker, new Date(), { ...SETTINGS, quotaHoldMs: 300_000 }, 'quota');
  if (held?.throttled_until === undefined) throw new Error('a closed breaker takes a quota hold');
  expect(await gate.writeBreaker(breaker, held)).toBe('written');
  return held.throttled_until;
}

/** Opens one relay's breaker as its senders do (its own item under the gate's key). */
async function openBreaker(gate: SendingGateStore, reason: string): Promise<void> {
  const { breaker } = await gate.read();
  const open = opened(breaker, { reason }, new Date(), SETTINGS, '9');
  if (open === undefined) throw new Error('a closed breaker opens');
  expect(await gate.writeBreaker(breaker, open)).toBe('written');
}

/** The CLI as an operator runs it against AWS with `--table`, from a shell with these variables only. */
function cliFrom(tableName: string, variables: Record<string, string | undefined>) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    NO_COLOR: '1',
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REGION: 'us-east-1',
    POSTDATE_RELAY_NAMES: undefined,
    POSTDATE_RELAYS: undefined,
    ...variables,
  };
  return (...args: string[]) =>
    run(process.execPath, ['cli/postdate.mjs', '--table', tableName, '--json', ...args], {
      env,
      timeout: 60_000,
    }).then(
      (done) => ({ code: 0, stdout: done.stdout }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );
}

describe('the relays the CLI decides with are the ones the table knows (DESIGN §15)', () => {
  it('from a shell that lists other relays than the table holds, reconcile and the status commands refuse, naming them and what to pass', async () => {
    // A stack with POSTDATE_RELAYS=[primary, backup], both unavailable: no relay takes mail.
    const { tableName } = await freshTable('relays-unknown');
    const documents = documentClient();
    await openBreaker(new DynamoSendingGate(documents, tableName, 'primary'), '421: greeting');
    await openBreaker(new DynamoSendingGate(documents, tableName, 'backup'), '421: greeting');

    // No names in the shell (the CLI's list is then `default`), or a list that leaves one out.
    const reconcile = ['reconcile', '--since', '1h'];
    const runs = [
      { variables: {}, command: reconcile },
      { variables: {}, command: ['relays', 'status'] },
      { variables: {}, command: ['sending', 'status'] },
      { variables: { POSTDATE_RELAY_NAMES: 'primary' }, command: reconcile },
    ];
    for (const { variables, command } of runs) {
      const { code, stdout } = await cliFrom(tableName, variables)(...command);
      expect({ command, variables, code }).toEqual({ command, variables, code: 2 });
      const { error } = JSON.parse(stdout) as { error: { type: string; detail: string } };
      expect(error.type).toBe('urn:postdate:cli:usage');
      expect(error.detail).toMatch(/backup/);
      expect(error.detail).toMatch(/--stack/);
      expect(error.detail).toMatch(/POSTDATE_RELAY_NAMES/);
    }
    // `relays disable` writes nothing before it knows the relays.
    expect((await cliFrom(tableName, {})('relays', 'disable', 'default')).code).toBe(2);
    expect((await new DynamoSendingGate(documents, tableName).read()).disabled).toBeUndefined();
    // Nor do `sending pause` and `sending resume`: refused before the pause changes, so a refusal
    // never leaves every copy held behind an error.
    const gate = new DynamoSendingGate(documents, tableName);
    expect((await cliFrom(tableName, {})('sending', 'pause', '--reason', 'incident')).code).toBe(2);
    expect((await gate.read()).pause).toEqual(NOT_PAUSED);
    const paused = pauseAfter(NOT_PAUSED, { action: 'pause', reason: 'incident' }, new Date());
    expect(await gate.writePause(NOT_PAUSED, paused)).toBe('written');
    expect((await cliFrom(tableName, {})('sending', 'resume')).code).toBe(2);
    expect((await gate.read()).pause.all?.reason).toBe('incident');

    // With the stack's relays, the answer is the senders' own: no relay takes mail.
    const listed = cliFrom(tableName, { POSTDATE_RELAY_NAMES: 'primary,backup' });
    const reconciled = await listed('reconcile', '--since', '1h');
    expect(reconciled.code).toBe(1);
    expect(JSON.parse(reconciled.stdout)).toMatchObject({
      sending: { available: false, leaving_through: null },
    });
  }, 120_000);

  it("the local stack's file names its relays, and the local CLI reads them from it rather than from the shell", () => {
    const running: StackFile = {
      pid: 1,
      startedAt: '2026-12-03T12:00:00.000Z',
      apiUrl: 'http://127.0.0.1:41001',
      mailViewerUrl: null,
      dynamodbEndpoint: 'http://127.0.0.1:41002',
      sqsEndpoint: 'http://127.0.0.1:41003',
      schedulerEndpoint: 'http://127.0.0.1:41004',
      smtpPort: 41005,
      relayNames: ['primary', 'backup'],
    };
    const target = openTarget({}, { POSTDATE_RELAY_NAMES: 'default' }, () => running);
    try {
      const deps = relaysDepsOf({ target, now: () => new Date() });
      expect(deps.names).toEqual(['primary', 'backup']);
      expect(deps.namesFrom).toBe('stack');
      // Without a running stack's file, the shell says.
      const shell = openTarget({}, { POSTDATE_RELAY_NAMES: 'a,b' }, () => undefined);
      expect(relaysDepsOf({ target: shell, now: () => new Date() })).toMatchObject({
        names: ['a', 'b'],
        namesFrom: 'shell',
      });
      shell.dynamodb.destroy();
      shell.sqs.destroy();
    } finally {
      target.dynamodb.destroy();
      target.sqs.destroy();
    }
  });

  it("with the stack's own list, a relay item it does not name is one left from an earlier configuration: shown nowhere, refused never", async () => {
    const { tableName } = await freshTable('relays-stale');
    const documents = documentClient();
    await openBreaker(new DynamoSendingGate(documents, tableName, 'retired'), '421: greeting');
    const deps = relaysDeps({
      documents,
      tableName,
      names: ['backup'],
      namesFrom: 'stack',
      now: () => new Date(),
    });
    const status = await relaysStatus(deps, memoryOutput());
    expect(status.relays.map((relay) => relay.name)).toEqual(['backup']);
    expect(status.leavingThrough).toBe('backup');
  });
});
