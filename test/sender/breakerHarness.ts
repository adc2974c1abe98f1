import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSRecord } from 'aws-lambda';
import { NodemailerMailer } from '../../lambdas/adapters/NodemailerMailer.js';
import { NodemailerRelayProbe } from '../../lambdas/adapters/NodemailerRelayProbe.js';
import { environmentSmtpCredentials } from '../../lambdas/adapters/smtpCredentials.js';
import type { BreakerSettings } from '../../lambdas/core/relayBreaker.js';
import { attemptBudgetMs } from '../../lambdas/core/sendTiming.js';
import type { SendingGateStore } from '../../lambdas/ports/SendingGate.js';
import type { SmtpCredentialsSource } from '../../lambdas/ports/SmtpCredentialsSource.js';
import { RelayGate } from '../../lambdas/sender/relayGate.js';
import { DynamoSendingGate } from '../../lambdas/store/sendingGate.js';
import { startSmtpServer } from '../../local/smtp/controllableSmtpServer.js';
import { type RelayOutage, startRelayOutage } from '../../local/smtp/relayOutage.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import {
  createSenderRig,
  FAST_SMTP_TIMEOUTS,
  type SenderHandler,
  type SenderRig,
  type SenderWorld,
  TEST_SETTINGS,
} from './senderHarness.js';

/**
 * The sender's world with a relay that can go down (local/smtp/relayOutage.ts in front of the
 * scripted smtp-server), and senders that each have their own gate, as separate containers do. The
 * gates read the one gate item of the table; time is the real clock (SQS keeps real time and the
 * breaker's probe interval is in it), compressed: a probe interval of one second, a throttle hold
 * of a quarter of one.
 */
export const BREAKER_SETTINGS: BreakerSettings = {
  probeIntervalMs: 1000,
  probeTimeoutMs: 3000,
  // A throttle holds the fleet 250 ms ÷ the rate factor (0.5 s, 1 s, 2 s …) instead of 1 s ÷ it.
  throttleHoldMs: 250,
  // A daily quota holds it 4 s instead of 5 minutes, on the real clock. A test whose verdict hangs on
  // when a hold ends gives the gate a clock of its own that it moves (`gateClock`, decision 0297).
  quotaHoldMs: 4000,
};

/**
 * The senders' invocation time, on the real clock: one whole attempt and a minute more, inside the
 * lease (TEST_SETTINGS, 120 s) as the configuration requires. These senders keep real time, so the
 * senderHarness's second beyond one attempt would be all the time a batch has before its last MAIL
 * FROM; on a loaded machine the reads before it outlast that, every copy goes back out of time
 * without reaching the relay (DESIGN §5, "Never out of time mid-send", which
 * test/sender/timeBudget.test.ts proves) and nothing here sees the outage it plays.
 */
export const BREAKER_TIMEOUT_SECONDS = attemptBudgetMs(TEST_SETTINGS.timing) / 1000 + 60;

export interface BreakerWorld extends SenderWorld {
  readonly outage: RelayOutage;
  /** The senders' own mailers, closed with the world (a closed pool opens no session again). */
  readonly senderMailers: NodemailerMailer[];
}

export async function startBreakerWorld(): Promise<BreakerWorld> {
  const [{ tableName, streamArn }, smtp] = await Promise.all([freshTable('breaker'), startSmtpServer()]);
  const outage = await startRelayOutage({ targetHost: smtp.host, targetPort: smtp.port });
  const relay = {
    host: outage.host,
    port: outage.port,
    secure: false,
    requireTls: false,
    credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
    timeouts: FAST_SMTP_TIMEOUTS,
  };
  const mailer = new NodemailerMailer({ ...relay, messageIdDomain: 'mail.test' });
  const senderMailers: NodemailerMailer[] = [];
  return {
    tableName,
    streamArn,
    documents: documentClient(),
    smtp,
    mailer,
    outage,
    senderMailers,
    async close() {
      for (const senderMailer of senderMailers.splice(0)) await senderMailer.close();
      await mailer.close();
      await outage.close();
      await smtp.close();
    },
  };
}

/**
 * One relay of several as a sender container has it (DESIGN §15): its own pooled mailer, closed with
 * the world, and its gate over that relay's own breaker item.
 */
export function namedRelay(
  world: BreakerWorld,
  rig: BreakerRig,
  name: string,
  endpoint: { readonly host: string; readonly port: number },
  credentials: SmtpCredentialsSource = environmentSmtpCredentials({ user: undefined, pass: undefined }),
  /** The gate's clock alone (as {@link BreakerRig.sender}'s `gateClock`); the real one unless given. */
  gateClock: () => Date = () => new Date(),
) {
  const options = {
    host: endpoint.host,
    port: endpoint.port,
    secure: false,
    requireTls: false,
    credentials,
    timeouts: FAST_SMTP_TIMEOUTS,
  };
  const mailer = new NodemailerMailer({ ...options, messageIdDomain: 'mail.test' });
  world.senderMailers.push(mailer);
  const gate = new RelayGate({
    store: new DynamoSendingGate(world.documents, world.tableName, name),
    probe: new NodemailerRelayProbe(options),
    queue: rig.queue,
    settings: BREAKER_SETTINGS,
    now: gateClock,
    random: Math.random,
    cacheMs: 0,
    log: rig.log,
    metrics: rig.metrics,
    relay: name,
  });
  return { name, mailer, gate };
}

interface SenderOptions {
  readonly gateStore?: SendingGateStore;
  readonly gateClock?: () => Date;
}

export interface BreakerRig extends SenderRig {
  readonly gateStore: DynamoSendingGate;
  /**
   * A sender of its own (its own gate and its own pooled mailer), as another container; `gateStore`
   * replaces the table's gate item under it (a test that watches the gate's writes). `gateClock` is
   * the gate's clock alone (when a hold ends, when a probe is due): a test that moves it decides when
   * a hold is over, whatever the machine's speed; the sender's own clock, SQS's and the relay's stay
   * real.
   */
  sender(options?: SenderOptions): SenderHandler;
  /** Receives and runs copies with `handler` until `done()` or the deadline; answers the rounds. */
  drive(options: {
    handlers: readonly SenderHandler[];
    done: () => Promise<boolean>;
    timeoutMs: number;
  }): Promise<number>;
}

export async function createBreakerRig(
  world: BreakerWorld,
  options: {
    maxAttempts?: number;
    /** Replaces some of {@link BREAKER_SETTINGS} for this rig's senders (a shorter throttle hold). */
    breaker?: Partial<BreakerSettings>;
  } = {},
): Promise<BreakerRig> {
  const breakerSettings: BreakerSettings = { ...BREAKER_SETTINGS, ...options.breaker };
  const rig = await createSenderRig(world, {
    settings: { ...TEST_SETTINGS, ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}) },
  });
  const gateStore = new DynamoSendingGate(world.documents, world.tableName);
  const sender = (options: SenderOptions = {}): SenderHandler => {
    const mailer = new NodemailerMailer({
      host: world.outage.host,
      port: world.outage.port,
      secure: false,
      requireTls: false,
      messageIdDomain: 'mail.test',
      credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
      timeouts: FAST_SMTP_TIMEOUTS,
    });
    world.senderMailers.push(mailer);
    const now = () => new Date();
    return rig.newHandler({
      mailer,
      timeoutSeconds: BREAKER_TIMEOUT_SECONDS,
      now,
      sleep: (milliseconds) => sleep(milliseconds),
      relayGate: new RelayGate({
        store: options.gateStore ?? gateStore,
        probe: new NodemailerRelayProbe({
          host: world.outage.host,
          port: world.outage.port,
          secure: false,
          requireTls: false,
          credentials: environmentSmtpCredentials({ user: undefined, pass: undefined }),
          timeouts: FAST_SMTP_TIMEOUTS,
        }),
        queue: rig.queue,
        settings: breakerSettings,
        now: options.gateClock ?? now,
        random: Math.random,
        cacheMs: 0,
        log: rig.log,
        metrics: rig.metrics,
      }),
    });
  };
  return {
    ...rig,
    gateStore,
    sender,
    async drive({ handlers, done, timeoutMs }) {
      const deadline = Date.now() + timeoutMs;
      let rounds = 0;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`not done after ${rounds} rounds`);
        const batches: SQSRecord[][] = [];
        for (const _ of handlers) batches.push(await rig.receive({ max: 10, waitSeconds: 0 }));
        if (batches.every((batch) => batch.length === 0)) await sleep(200);
        await Promise.all(
          handlers.map((handler, index) => {
            const records = batches[index] ?? [];
            return records.length > 0 ? rig.run(records, handler) : Promise.resolve();
          }),
        );
        rounds++;
      }
      return rounds;
    },
  };
}
