import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { memoryOutput } from '../../cli/output.js';
import { reconcile, reconcileClean } from '../../cli/reconcileCommand.js';
import { sendingPause, sendingResume, sendingStatus } from '../../cli/sendingCommands.js';
import { isPaused, NEVER_OPENED, opened } from '../../lambdas/core/relayBreaker.js';
import { DynamoDueIndex } from '../../lambdas/store/dueIndex.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

/**
 * `postdate sending pause/resume/status` (DESIGN §5, §6) against DynamoDB Local: what the senders
 * read (the gate item) is what the commands wrote; and `postdate reconcile` shows the breaker.
 */
const run = promisify(execFile);

describe('postdate sending', () => {
  it('pause all, resume one kind (the roll-out), pause one kind, resume everything', async () => {
    const { tableName } = await freshTable('sending');
    const deps = { gate: new DynamoSendingGate(documentClient(), tableName), now: () => new Date() };
    const out = memoryOutput();

    await sendingPause(deps, { reason: 'incident 42' }, out);
    let gate = await sendingStatus(deps, out);
    expect(isPaused(gate.pause, 'welcome')).toBe(true);
    expect(gate.pause.all?.reason).toBe('incident 42');

    await sendingResume(deps, { kind: 'welcome' }, out);
    gate = await deps.gate.read();
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
    await cli('sending', 'pause', '--kind', 'campaign', '--reason', 'rollout');
    const { stdout } = await cli('--json', 'sending', 'status');
    const status = JSON.parse(stdout) as { pause: { kinds: Record<string, { reason: string }> } };
    expect(status.pause.kinds.campaign?.reason).toBe('rollout');
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
    };
    const closed = await reconcile(deps, {}, memoryOutput());
    expect(closed.sending.breaker.state).toBe('closed');
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
    expect(report.sending.breaker).toMatchObject({ state: 'open', reason: '421: the relay is closing' });
    expect(reconcileClean(report)).toBe(false);
    expect(out.text()).toContain('UNAVAILABLE');
  });
});
