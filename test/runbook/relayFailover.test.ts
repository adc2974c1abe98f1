/**
 * docs/runbook.md procedure 5a (`RelayFailover`), walked as the on-call operator walks it, on the
 * local stack with two real relays in POSTDATE_RELAYS (`primary`, then `backup`: smtp-servers of
 * local/smtp/controllableSmtpServer.ts, each its own record of what it received) and the real CLI.
 * The primary goes down for real (its port closed, nothing listening) and comes back on the same
 * port; the operator reads `relays status`, drains it with `relays disable`, is refused a drain that
 * would leave no relay, forces one, and enables it again. The promise checker is the relays: what
 * each received, not Postdate's account of it. Every message arrives exactly once across the two; a
 * recipient the primary accepted is never sent again through the backup; a `hold` message cut after
 * the dot is `unknown` and never reaches the backup; a drained relay gets no connection, not even a
 * probe. `RelayFailover` is read as the sweeper publishes it (EMF, the stack's dimensions, the ones
 * its alarm watches: test/sweeper/relayAlarmsFireAndClear.test.ts evaluates the synthesized alarm).
 */

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { RESOURCE_SETTINGS } from '../../lambdas/core/configSpec.js';
import { METRICS, metricDimensions, SENDER_METRIC, SWEEPER_METRIC } from '../../lambdas/core/metricNames.js';
import { GATE_READ_REUSE_MS } from '../../lambdas/sender/relayGate.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import {
  type ReceivedMessage,
  startSmtpServer,
  type TestSmtpServer,
} from '../../local/smtp/controllableSmtpServer.js';
import { datapoints, type EmfDocument } from '../support/emfAlarms.js';
import { eventually } from '../support/eventually.js';
import { capturedLogs, enqueue, operatorCli, type Postdate, shownMessage } from './operatorShell.js';

const PROBE_SECONDS = 1;

/** A send time `seconds` from now (ISO): with 2, later than any sender's read of the gate made before now. */
const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();

interface RelaysJson {
  relays: {
    name: string;
    position: number;
    breaker: string;
    next_probe: string | null;
    disabled: unknown;
    quota_held_until: unknown;
  }[];
  available: boolean;
  leaving_through: string | null;
}

describe('runbook procedure 5a: several relays, failover, drain and enable', () => {
  /** The primary's lives: the first, and the one back on the same port after its outage. */
  const primaryLives: TestSmtpServer[] = [];
  let backup: TestSmtpServer;
  let primaryPort: number;
  let stack: LocalStack;
  let logs: ReturnType<typeof capturedLogs>;

  beforeAll(async () => {
    // The functions' EMF metrics are off locally unless asked for (docs/local-stack.md).
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    logs = capturedLogs({ echo: false });
    const primary = await startSmtpServer();
    primaryLives.push(primary);
    primaryPort = primary.port;
    backup = await startSmtpServer();
    const relay = (name: string, port: number) => ({
      name,
      host: '127.0.0.1',
      port,
      secure: false,
      require_tls: false,
    });
    const config = loadConfig(
      {
        POSTDATE_API_KEY: 'pd_runbook-relay-failover-01',
        POSTDATE_RELAYS: JSON.stringify([relay('primary', primary.port), relay('backup', backup.port)]),
        POSTDATE_RELAY_PROBE_SECONDS: String(PROBE_SECONDS),
        POSTDATE_RETRY_BASE_SECONDS: '1',
        POSTDATE_RETRY_CAP_SECONDS: '1',
      },
      'local',
    );
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    for (const life of primaryLives) await life.close();
    await backup?.close();
    logs?.restore();
    vi.unstubAllEnvs();
  });

  const primary = (): TestSmtpServer => primaryLives.at(-1) as TestSmtpServer;
  /** What each relay received of a message (every life of the primary), by its X-Postdate-Id. */
  const received = (id: string) => ({
    primary: primaryLives.flatMap((life) => life.received).filter((mail) => mail.postdateId === id),
    backup: backup.received.filter((mail) => mail.postdateId === id),
  });
  const recipients = (mails: readonly ReceivedMessage[]) => mails.flatMap((mail) => mail.to);
  const arrivedAt = (id: string, relay: 'primary' | 'backup') =>
    eventually(`${id} received by ${relay}`, () => received(id)[relay].length > 0 || undefined, {
      withinMs: 20_000,
    });

  /** `relays status --json`. */
  const relaysJson = async (postdate: Postdate): Promise<RelaysJson> =>
    JSON.parse((await postdate('--json', 'relays', 'status')).stdout) as RelaysJson;

  /**
   * The sweeper's gauges from one run asked now, as its EMF documents hold them: `RelayFailover`
   * under the stack's dimensions exactly (its alarm's), `RelayUnavailable` under each relay's.
   */
  async function sweptGauges(): Promise<{ failover: number; unavailable: Record<string, number> }> {
    const before = logs.of(METRICS.service).length;
    await stack.sweep();
    const stackName = stack.functionEnvironment[RESOURCE_SETTINGS.stackName.variable] as string;
    const wanted = metricDimensions(stackName);
    return eventually(
      'the sweep run to publish RelayFailover under the stack dimensions',
      () => {
        const documents = logs
          .of(METRICS.service)
          .slice(before)
          .map((line) => JSON.parse(line) as EmfDocument);
        const failover = datapoints(
          { namespace: METRICS.namespace, metricName: SWEEPER_METRIC.relayFailover, dimensions: wanted },
          documents,
        );
        if (failover.length === 0) return undefined;
        const unavailable = Object.fromEntries(
          documents
            .filter((document) => typeof document.relay === 'string' && 'RelayUnavailable' in document)
            .map((document) => [
              document.relay as string,
              Math.max(...[document.RelayUnavailable].flat().map(Number)),
            ]),
        );
        if (!stack.relayNames.every((relay) => relay in unavailable)) return undefined;
        return {
          failover: Math.max(...failover),
          unavailable,
        };
      },
      { withinMs: 10_000 },
    );
  }

  it('walks steps 1 to 3 and Verify: each message once across the two relays, nothing to a drained one', async () => {
    const postdate = operatorCli(stack);

    // Step 1: where mail leaves, both relays up.
    // The first command through the real entry point (cli/postdate.mjs, a process of its own); the
    // rest through the CLI's main in this process (operatorCli), which prints the same.
    const first = await operatorCli(stack, { bin: true })('relays', 'status');
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toMatch(/1\s+primary\s+closed/);
    expect(first.stdout).toMatch(/2\s+backup\s+closed/);
    expect(first.stdout).toMatch(/mail leaves through:?\s+primary/);
    expect(await relaysJson(postdate)).toMatchObject({
      relays: [
        { name: 'primary', position: 1, breaker: 'closed', disabled: null },
        { name: 'backup', position: 2, breaker: 'closed', disabled: null },
      ],
      available: true,
      leaving_through: 'primary',
    });
    const m1 = await enqueue(stack, 'relays-1', { subject: 'Before' });
    await arrivedAt(m1, 'primary');

    // A `hold` message cut after the dot at the primary: unknown, and never through the backup.
    primary().script({ afterData: 'drop' });
    const held = await enqueue(stack, 'relays-hold', { subject: 'Held', on_ambiguous: 'hold' });
    await eventually(
      'the held message unknown',
      async () => (await shownMessage(postdate, held)).status === 'unknown',
      {
        withinMs: 20_000,
      },
    );

    // A recipient deferred (451) at the primary, the other accepted; then the primary goes down.
    primary().script({
      rcptTo: (address) =>
        address.startsWith('bob') ? { code: 451, message: '4.3.0 Try again later' } : undefined,
    });
    const split = await enqueue(stack, 'relays-split', {
      subject: 'Two recipients',
      to: ['ada@example.com', 'bob@example.com'],
    });
    await arrivedAt(split, 'primary');
    await primary().close();

    // The outage: the primary's breaker opens, mail leaves through the backup (step 1 shows it).
    const during = await enqueue(stack, 'relays-during', { subject: 'During' });
    await arrivedAt(during, 'backup');
    await arrivedAt(split, 'backup');
    const down = await eventually(
      'relays status to show the primary open and mail leaving through the backup',
      async () => {
        const { stdout } = await postdate('relays', 'status');
        return /1\s+primary\s+open/.test(stdout) ? stdout : undefined;
      },
      { withinMs: 10_000 },
    );
    expect(down).toMatch(/mail leaves through:?\s+backup/);
    expect((await postdate('sending', 'status')).stdout).toMatch(/available \(through backup, failed over\)/);
    const failedOver = await sweptGauges();
    expect(failedOver.failover).toBe(1);
    expect(failedOver.unavailable).toMatchObject({ primary: 1, backup: 0 });

    // Step 2 (drain) while it is down; it comes back on its port, drained: nothing reaches it, not
    // even a probe once the one its breaker kept is due, nor the sweeper's re-armed token.
    const probeDue = Date.parse((await relaysJson(postdate)).relays[0]?.next_probe ?? '');
    expect(probeDue).not.toBeNaN();
    const drained = await postdate('relays', 'disable', 'primary', '--reason', 'provider maintenance');
    expect(drained.code, drained.stdout + drained.stderr).toBe(0);
    expect(drained.stdout).toMatch(/relay primary disabled: its mail leaves through backup/);
    // A probe a sender took just before the drain leaves the breaker half-open until the closed port
    // refuses it (a loaded machine: the probe time passes between the read above and the drain).
    const drainedRelay = await eventually(
      'the drained primary open, with no next probe',
      async () => {
        const relay = (await relaysJson(postdate)).relays[0];
        return relay?.breaker === 'open' ? relay : undefined;
      },
      { withinMs: 10_000 },
    );
    expect(drainedRelay).toMatchObject({
      name: 'primary',
      breaker: 'open',
      next_probe: null,
      disabled: { reason: 'provider maintenance' },
    });
    expect((await postdate('sending', 'status')).stdout).toMatch(
      /relay primary: +disabled since \S+ \(provider maintenance\); breaker open since \S+, probed once enabled/,
    );
    // Once no sender's read of the gate can predate the drain (nor the probe time its breaker kept
    // be to come), the primary is back on its port: an enabled relay would now be probed by the next
    // copy; this one, drained, is not.
    const drainRead = Date.now() + GATE_READ_REUSE_MS;
    await eventually(
      "every sender's read of the gate to postdate the drain, and the primary's kept probe time to pass",
      () => Date.now() > Math.max(probeDue, drainRead) || undefined,
      { withinMs: (PROBE_SECONDS + 5) * 1000 },
    );
    primaryLives.push(await startSmtpServer({ port: primaryPort }));
    const whileDrained = await enqueue(stack, 'relays-drained', { subject: 'Drained' });
    await arrivedAt(whileDrained, 'backup');
    await stack.sweep();
    expect(primary().sessions).toHaveLength(0);
    expect((await sweptGauges()).unavailable).toMatchObject({ primary: 0 });

    // No relay would take mail: refused (nothing written), then forced; a copy then waits, handed
    // back unclaimed (its send time a little later than the senders' one-second read of the gate).
    const refused = await postdate('relays', 'disable', 'backup', '--reason', 'both');
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toMatch(/would leave no relay that takes mail.*--force/);
    expect((await relaysJson(postdate)).relays[1]).toMatchObject({ disabled: null });
    const forced = await postdate('relays', 'disable', 'backup', '--reason', 'both', '--force');
    expect(forced.code, forced.stdout + forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/no relay takes mail/);
    const handedBack = logs.of(METRICS.service).length;
    const waiting = await enqueue(stack, 'relays-waiting', { subject: 'Waiting', send_at: inSeconds(2) });
    await eventually(
      'a sender to hand the waiting copy back (every relay disabled)',
      () =>
        logs
          .of(METRICS.service)
          .slice(handedBack)
          .some((line) => line.includes(`"${SENDER_METRIC.relaysDisabled}":`)) || undefined,
      { withinMs: 20_000 },
    );
    expect((await shownMessage(postdate, waiting)).attempts).toBe(0);
    expect((await postdate('messages', 'show', waiting)).stdout).toMatch(
      /held:\s+no relay takes mail .*postdate relays status/,
    );

    // Step 3 (back): enable the primary; its probe answers, and the mail goes to it.
    const enabled = await postdate('relays', 'enable', 'primary');
    expect(enabled.code, enabled.stdout + enabled.stderr).toBe(0);
    expect(enabled.stdout).toMatch(
      /relay primary enabled: its breaker is open; it takes mail again once its probe answers/,
    );
    await arrivedAt(waiting, 'primary');
    expect((await postdate('relays', 'enable', 'backup')).code).toBe(0);
    const after = await enqueue(stack, 'relays-after', { subject: 'After', send_at: inSeconds(2) });
    await arrivedAt(after, 'primary');

    // Step 2 again, with the primary up and its breaker closed (planned maintenance): no connection
    // reaches it while drained; enabled, the mail is back on it.
    const sessionsBefore = primary().sessions.length;
    const transactionsBefore = primary().transactions;
    const planned = await postdate('relays', 'disable', 'primary', '--reason', 'provider maintenance');
    expect(planned.stdout).toMatch(/relay primary disabled: its mail leaves through backup/);
    const duringMaintenance = await enqueue(stack, 'relays-maintenance', {
      subject: 'Maintenance',
      send_at: inSeconds(2),
    });
    await arrivedAt(duringMaintenance, 'backup');
    expect(primary().transactions).toBe(transactionsBefore);
    expect(primary().sessions.slice(sessionsBefore)).toEqual([]);
    const reenabled = await postdate('relays', 'enable', 'primary');
    expect(reenabled.stdout).toMatch(/relay primary enabled: it takes mail again in its turn/);
    const last = await enqueue(stack, 'relays-last', { subject: 'Last', send_at: inSeconds(2) });
    await arrivedAt(last, 'primary');

    // Verify.
    const verify = await postdate('relays', 'status');
    expect(verify.stdout).toMatch(/mail leaves through:?\s+primary/);
    expect(await relaysJson(postdate)).toMatchObject({
      relays: [
        { name: 'primary', breaker: 'closed', disabled: null, quota_held_until: null },
        { name: 'backup', breaker: 'closed', disabled: null, quota_held_until: null },
      ],
      leaving_through: 'primary',
    });
    expect((await postdate('sending', 'status')).stdout).toMatch(/available \(through primary\)/);
    const back = await sweptGauges();
    expect(back.failover).toBe(0);
    expect(back.unavailable).toMatchObject({ primary: 0, backup: 0 });

    // From what each relay received.
    for (const id of [m1, during, whileDrained, waiting, after, duringMaintenance, last]) {
      const got = received(id);
      expect([...got.primary, ...got.backup], id).toHaveLength(1);
      expect((await shownMessage(postdate, id)).attempts, id).toBe(1);
    }
    expect(received(m1).primary).toHaveLength(1);
    expect(received(during).backup).toHaveLength(1);
    expect(received(whileDrained).backup).toHaveLength(1);
    expect(received(waiting).primary).toHaveLength(1);
    expect(received(after).primary).toHaveLength(1);
    expect(received(duringMaintenance).backup).toHaveLength(1);
    expect(received(last).primary).toHaveLength(1);
    // The split message: ada once, by the primary; bob once, by the backup.
    expect(recipients(received(split).primary.filter((mail) => mail.outcome === 'accepted'))).toEqual([
      'ada@example.com',
    ]);
    expect(recipients(received(split).backup)).toEqual(['bob@example.com']);
    // Each transaction that carried it was an attempt; the outage between them counted none.
    expect(await shownMessage(postdate, split)).toMatchObject({
      status: 'sent',
      attempts: received(split).primary.length + received(split).backup.length,
    });
    // The held message: once, at the primary (dropped), never at the backup; still unknown.
    expect(received(held).primary.map((mail) => mail.outcome)).toEqual(['dropped']);
    expect(received(held).backup).toEqual([]);
    expect((await shownMessage(postdate, held)).status).toBe('unknown');
  }, 120_000);
});
