import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { CliError, UsageError } from '../../cli/cliErrors.js';
import { memoryOutput } from '../../cli/output.js';
import { relayNamesOf, relaysDisable, relaysEnable, relaysStatus } from '../../cli/relaysCommands.js';
import { opened } from '../../lambdas/core/relayBreaker.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * `postdate relays status|disable NAME|enable NAME` (DESIGN §15) against DynamoDB Local: what the
 * senders read (each relay's breaker item, the drain beside it) is what the commands wrote.
 */
const run = promisify(execFile);
const SETTINGS = { probeIntervalMs: 30_000, probeTimeoutMs: 30_000 };

async function relaysDeps(names: readonly string[]) {
  const { tableName } = await freshTable('relays');
  const documents = documentClient();
  return {
    tableName,
    deps: {
      names,
      gate: (name: string) => new DynamoSendingGate(documents, tableName, name),
      now: () => new Date(),
    },
  };
}

describe('postdate relays', () => {
  it('status lists each relay in order with its breaker, and names the relay mail leaves through', async () => {
    const { deps } = await relaysDeps(['primary', 'backup', 'third']);
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
    const { deps } = await relaysDeps(['primary', 'backup']);
    const out = memoryOutput();
    let status = await relaysDisable(deps, 'primary', { reason: 'provider maintenance' }, out);
    expect(status.relays[0]?.disabled?.reason).toBe('provider maintenance');
    expect(status.leavingThrough).toBe('backup');
    expect((await deps.gate('primary').read()).disabled?.reason).toBe('provider maintenance');
    // The breaker is untouched: the drain is the operator's attribute, the breaker the senders'.
    expect((await deps.gate('primary').read()).breaker.version).toBe(0);

    status = await relaysEnable(deps, 'primary', out);
    expect(status.relays[0]?.disabled).toBeUndefined();
    expect(status.leavingThrough).toBe('primary');
  });

  it('refuses to disable the last enabled relay, and names the relays for an unknown one', async () => {
    const { deps } = await relaysDeps(['primary', 'backup']);
    await relaysDisable(deps, 'backup', {}, memoryOutput());
    await expect(relaysDisable(deps, 'primary', {}, memoryOutput())).rejects.toThrow(CliError);
    await expect(relaysDisable(deps, 'primary', {}, memoryOutput())).rejects.toThrow(/sending pause/);
    expect((await deps.gate('primary').read()).disabled).toBeUndefined();
    await expect(relaysEnable(deps, 'nope', memoryOutput())).rejects.toThrow(UsageError);
    await expect(relaysEnable(deps, 'nope', memoryOutput())).rejects.toThrow(
      /the relays are primary, backup/,
    );
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
    expect('code' in refused ? refused.code : 0).toBe(2);
  }, 90_000);
});
