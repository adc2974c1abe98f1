import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NodemailerRelayProbe } from '../../lambdas/adapters/NodemailerRelayProbe.js';
import { SqsDispatchQueue } from '../../lambdas/adapters/SqsDispatchQueue.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import type { BreakerState } from '../../lambdas/core/relayBreaker.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { startSmtpServer, type TestSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { documentClient, freshQueues, freshTable, sqsClient } from '../support/awsLocal.js';
import { BREAKER_SETTINGS } from './breakerHarness.js';
import { FAST_SMTP_TIMEOUTS, RecordingLog, RecordingMetrics, RecordingQueue } from './senderHarness.js';

/**
 * DESIGN §5: a configuration failure (the login refused, TLS) is "alarmed". Once such a failure has
 * opened the breaker no live attempt reaches the relay: the probe is the only one still asking it. A
 * probe the relay refuses for our configuration counts ConfigErrors as a live attempt would, so the
 * SmtpConfigErrors alarm stays in ALARM while the relay still refuses the login, and goes OK only
 * when it no longer does. The relay is the real smtp-server, requiring a login.
 */
describe('a probe refused for our configuration', () => {
  const RELAY = 'primary';
  let smtp: TestSmtpServer;
  let store: DynamoSendingGate;
  let queue: RecordingQueue;

  beforeAll(async () => {
    smtp = await startSmtpServer({ credentials: { username: 'postdate', password: 'right' } });
  });
  afterAll(async () => smtp.close());

  beforeEach(async () => {
    const [{ tableName }, { urls }] = await Promise.all([freshTable('probecfg'), freshQueues()]);
    store = new DynamoSendingGate(documentClient(), tableName);
    queue = new RecordingQueue(new SqsDispatchQueue(sqsClient(), urls.send));
    const dueSince = new Date(Date.now() - 10).toISOString();
    const open: BreakerState = {
      state: 'open',
      version: 1,
      opened_at: dueSince,
      reason: '535: the relay refused the login',
      probe_at: dueSince,
      token: '777',
      failed_probes: 0,
    };
    expect(await store.writeBreaker({ state: 'closed', version: 0 }, open)).toBe('written');
  });

  const gate = (password: string, metrics: RecordingMetrics) =>
    new RelayGate({
      store,
      probe: new NodemailerRelayProbe({
        host: smtp.host,
        port: smtp.port,
        secure: false,
        requireTls: false,
        credentials: environmentSmtpCredentials({ user: 'postdate', pass: password }),
        timeouts: FAST_SMTP_TIMEOUTS,
      }),
      queue,
      settings: BREAKER_SETTINGS,
      now: () => new Date(),
      random: () => 0,
      cacheMs: 0,
      log: new RecordingLog(),
      metrics,
      relay: RELAY,
    });

  it('counts ConfigErrors for its relay, as a live attempt would, and the breaker stays open', async () => {
    const metrics = new RecordingMetrics();
    const admission = await gate('wrong', metrics).admit(undefined);

    expect(admission.kind).toBe('wait');
    expect(smtp.authAttempts.some((attempt) => !attempt.ok)).toBe(true);
    expect((await store.read()).breaker.state).toBe('open');
    expect(metrics.of('ConfigErrors')).toBe(1);
    expect(metrics.of('ConfigErrors', RELAY)).toBe(1);
  });

  it('a probe the relay accepts counts none: the alarm may go OK', async () => {
    const metrics = new RecordingMetrics();
    const admission = await gate('right', metrics).admit(undefined);

    expect(admission).toEqual({ kind: 'send', rateFactor: 1 });
    expect(metrics.of('ConfigErrors')).toBe(0);
  });
});
