import { freePort } from '../local/freePort.js';
import type { LocalStack } from '../local/localStack.js';
import { startSmtpSink } from '../local/smtp/smtpSink.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { enqueue, inParallel, startBenchStack } from './benchStack.js';
import { relayReceipts } from './outageCounts.js';
import { type PostfixRelay, postfixUnavailable, startPostfixRelay } from './postfixRelay.js';
import { maximum, percentile, round, sleep } from './stats.js';

/**
 * A real Postfix outage (issue 19 §1, DESIGN §5 "An outage is not the message's fault"): the
 * experiment of the issue — "a 15 s outage with ten messages due sent 7–9 of them to `dead`" — on
 * the local stack with a real Debian Postfix (bench/postfixRelay.ts) as the relay, relaying to the
 * benchmark's SMTP sink. `npm run bench -- postfix-outage`; skips (and says how to install it) when
 * Postfix is not installed or the run is not root. Never part of `npm test`.
 *
 * Each case: ten messages enqueued through the API once the outage has begun, due 2 s into it;
 * the outage lasts 15 s or 20 s; then Postfix comes back. Two kinds of outage:
 * - `stopped`: `postfix stop` (connections refused) … `postfix start`;
 * - `421`: Postfix runs but answers every connection `421 4.3.2` at the greeting and closes it
 *   (an access map's 421 with `smtpd_delay_reject = no`) … `postfix reload` without it.
 * The breaker probes every POSTDATE_RELAY_PROBE_SECONDS=3 s (the default is 30 s: see
 * bench/reports/2026-12-01-postfix-outage.md). Everything else is the local defaults (8 attempts,
 * retry base 30 s).
 *
 * Decided from what the sink received (X-Postdate-Id) and from what the harness did: lost (never
 * received), doubled (received more than once), and dead from the API. Connections Postfix saw
 * during a 421 outage are counted from its maillog (`NOQUEUE: reject: CONNECT` lines); during a
 * stopped outage nothing listens, so nothing can count them: the attempts Postdate recorded are
 * shown instead, labelled as such.
 */
const MESSAGES = 10;
const DUE_AFTER_MS = 2_000;
const PROBE_SECONDS = Number(process.env.POSTFIX_OUTAGE_PROBE_SECONDS ?? 3);
const DELIVERY_TIMEOUT_MS = 240_000;

type OutageKind = 'stopped' | '421';
interface OutageCase {
  readonly kind: OutageKind;
  readonly seconds: number;
}

const CASES: readonly OutageCase[] = [
  { kind: 'stopped', seconds: 15 },
  { kind: 'stopped', seconds: 20 },
  { kind: '421', seconds: 15 },
  { kind: '421', seconds: 20 },
];
const QUICK_CASES: readonly OutageCase[] = [{ kind: 'stopped', seconds: 15 }];

interface CaseResult {
  readonly name: string;
  /** From the outage's start until `postfix start` / `postfix reload` returned. */
  readonly outageMs: number;
  /** How long the ten enqueues took (they begin with the outage). */
  readonly enqueueMs: number;
  /** How long `postfix start` (stopped) or `postfix reload` (421) took. */
  readonly recoveryCommandMs: number;
  readonly received: number;
  readonly lost: number;
  readonly doubled: number;
  readonly dead: number;
  readonly receivedDuringOutage: number;
  /** 421 outages: connections Postfix answered 421 (from its maillog); stopped: null. */
  readonly postfixRejectedConnections: number | null;
  /** What Postdate recorded: the sum of `attempts` over the ten messages. */
  readonly recordedAttempts: number;
  readonly recoveryToLastDeliveryS: number;
  readonly messages: readonly MessageOutcome[];
  /** The case's maillog lines about connections, rejections and deliveries (kept in latest.json). */
  readonly postfixLog: readonly string[];
}

interface MessageOutcome {
  readonly id: string;
  readonly received: number;
  /** When the sink first received it, in ms after Postfix came back (null: never). */
  readonly firstReceivedMs: number | null;
  readonly status: string | undefined;
  readonly attempts: number | undefined;
  readonly lastError: unknown;
  readonly providerMessageId: string | null | undefined;
  /** The attempts Postdate recorded (the API's `history`). */
  readonly history: readonly unknown[];
}

/** The result of a case that cannot run here (no Postfix): said, never counted as a pass. */
function skipped(name: string, title: string, reason: string, options: BenchOptions): BenchResult {
  options.log(`  skipped: ${reason}`);
  return { name, title: `${title} (skipped)`, rows: [], details: { skipped: reason }, seconds: 0 };
}

export async function postfixOutage(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const unavailable = postfixUnavailable();
  if (unavailable) return skipped('postfix-outage', 'A real Postfix outage', unavailable, options);
  const sink = await startSmtpSink({ port: await freePort() });
  const postfix = await startPostfixRelay({
    port: await freePort(),
    relayHost: '127.0.0.1',
    relayPort: sink.port,
  });
  let stack: LocalStack | undefined;
  try {
    await postfix.start();
    // POSTFIX_OUTAGE_VERBOSE=1: the functions' INFO logs on stdout (what each copy did, and why).
    stack = await startBenchStack(
      {
        SMTP_HOST: postfix.host,
        SMTP_PORT: String(postfix.port),
        POSTDATE_RELAY_PROBE_SECONDS: String(PROBE_SECONDS),
      },
      { quiet: process.env.POSTFIX_OUTAGE_VERBOSE !== '1' },
    );
    const results: CaseResult[] = [];
    for (const outageCase of options.quick ? QUICK_CASES : CASES) {
      const result = await runCase(outageCase, stack, postfix, sink, options);
      results.push(result);
      options.log(
        `  ${result.name}: received ${result.received}/${MESSAGES}, lost ${result.lost}, doubled ${result.doubled}, dead ${result.dead}; ` +
          `Postfix refused with 421: ${result.postfixRejectedConnections ?? 'n/a (nothing listens)'}; attempts Postdate recorded: ${result.recordedAttempts}; ` +
          `recovery → last delivery ${round(result.recoveryToLastDeliveryS, 1)} s`,
      );
    }
    const rows: BenchRow[] = results.flatMap((result) => caseRows(result));
    return {
      name: 'postfix-outage',
      title: 'A real Postfix outage: nothing dead, nothing lost, nothing doubled',
      rows,
      details: { probeSeconds: PROBE_SECONDS, cases: results },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack?.stop();
    await postfix.close();
    await sink.stop();
  }
}

async function runCase(
  outageCase: OutageCase,
  stack: LocalStack,
  postfix: PostfixRelay,
  sink: Awaited<ReturnType<typeof startSmtpSink>>,
  options: BenchOptions,
): Promise<CaseResult> {
  const name = `${outageCase.kind} ${outageCase.seconds} s`;
  // Every case begins from a fresh Postfix: sessions the senders pooled in the case before are cut
  // (a reload would leave them open, and they would carry mail through a 421 outage).
  await postfix.stop();
  await postfix.setMode(outageCase.kind === '421' ? 'defer' : 'accept');
  if (outageCase.kind === '421') await postfix.start();
  await sleep(500);
  const logOffset = postfix.maillog().length;
  const outageStart = Date.now();
  const runKey = `${outageStart}-${outageCase.kind}-${outageCase.seconds}`;
  const enqueued = await inParallel(
    Array.from({ length: MESSAGES }, (_, index) => index),
    MESSAGES,
    (index) =>
      enqueue(stack, {
        bodyBytes: 256,
        key: `postfix-outage-${runKey}-${index}`,
        sendAt: new Date(outageStart + DUE_AFTER_MS),
      }),
  );
  const enqueueMs = Date.now() - outageStart;
  const ids = enqueued.map((message) => message.id);
  const wanted = new Set(ids);
  const receivedOf = () =>
    sink.messages().filter((mail) => mail.postdateId !== null && wanted.has(mail.postdateId));
  await sleep(outageStart + outageCase.seconds * 1000 - Date.now());
  const receivedDuringOutage = receivedOf().length;
  const recoveryBegan = Date.now();
  if (outageCase.kind === 'stopped') await postfix.start();
  else await postfix.setMode('accept');
  const recoveredAt = Date.now();
  const recoveryCommandMs = recoveredAt - recoveryBegan;
  const outageMs = recoveredAt - outageStart;
  options.log(`  ${name}: Postfix back after ${round(outageMs / 1000, 1)} s`);

  const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
  while (new Set(receivedOf().map((mail) => mail.postdateId)).size < MESSAGES && Date.now() < deadline) {
    await sleep(250);
  }
  // A moment more, so that a duplicate on its way would be counted too.
  await sleep(5_000);
  const received = receivedOf();
  const perId = new Map<string, number>();
  for (const mail of received) perId.set(mail.postdateId ?? '', (perId.get(mail.postdateId ?? '') ?? 0) + 1);
  const firstReceived = new Map<string, number>();
  for (const mail of received) {
    const at = Date.parse(mail.receivedAt);
    const id = mail.postdateId ?? '';
    if (!firstReceived.has(id) || at < (firstReceived.get(id) ?? at)) firstReceived.set(id, at);
  }
  const lastDelivery = Math.max(recoveredAt, ...received.map((mail) => Date.parse(mail.receivedAt)));
  const messages = await inParallel(ids, MESSAGES, async (id) => {
    const view = await messageView(stack, id);
    return {
      id,
      received: perId.get(id) ?? 0,
      firstReceivedMs: firstReceived.has(id) ? (firstReceived.get(id) ?? 0) - recoveredAt : null,
      status: view.status,
      attempts: view.attempts,
      lastError: view.last_error ?? null,
      providerMessageId: view.provider_message_id,
      history: view.history ?? [],
    } satisfies MessageOutcome;
  });
  await sleep(500);
  const caseLog = postfix.maillog().slice(logOffset);
  return {
    name,
    outageMs,
    enqueueMs,
    recoveryCommandMs,
    received: perId.size,
    lost: ids.filter((id) => !perId.has(id)).length,
    doubled: [...perId.values()].filter((count) => count > 1).length,
    dead: messages.filter((message) => message.status === 'dead').length,
    receivedDuringOutage,
    postfixRejectedConnections:
      outageCase.kind === '421' ? (caseLog.match(/NOQUEUE: reject: CONNECT from/g) ?? []).length : null,
    recordedAttempts: messages.reduce((sum, message) => sum + (message.attempts ?? 0), 0),
    recoveryToLastDeliveryS: (lastDelivery - recoveredAt) / 1000,
    messages,
    postfixLog: caseLog
      .split('\n')
      .filter((line) => /reject|status=|connect from|starting|stopping|reload/.test(line)),
  };
}

function caseRows(result: CaseResult): BenchRow[] {
  const prefix = `${result.name} outage (${round(result.outageMs / 1000, 1)} s)`;
  const zero = (metric: string, value: number): BenchRow => ({
    metric: `${prefix}: ${metric}`,
    value,
    unit: 'msgs',
    goal: '0',
    pass: value === 0,
  });
  return [
    zero('dead', result.dead),
    zero('lost (never received by the sink)', result.lost),
    zero('received more than once', result.doubled),
    zero('received during the outage', result.receivedDuringOutage),
    ...(result.postfixRejectedConnections === null
      ? []
      : [
          {
            metric: `${prefix}: connections Postfix answered 421 (its maillog)`,
            value: result.postfixRejectedConnections,
            unit: 'connections',
            note: `probe every ${PROBE_SECONDS} s`,
          },
        ]),
    {
      metric: `${prefix}: attempts Postdate recorded (10 messages)`,
      value: result.recordedAttempts,
      unit: 'attempts',
      note: 'the breaker counts none while open',
    },
    {
      metric: `${prefix}: recovery → last delivery`,
      value: round(result.recoveryToLastDeliveryS, 1),
      unit: 's',
    },
  ];
}

/** The API's view of a message, the fields the benchmark reports. */
interface MessageViewFields {
  readonly status?: string;
  readonly attempts?: number;
  readonly last_error?: unknown;
  readonly provider_message_id?: string | null;
  readonly history?: readonly unknown[];
}

async function messageView(stack: LocalStack, id: string): Promise<MessageViewFields> {
  const response = await fetch(`${stack.apiUrl}/v1/messages/${id}`, {
    headers: { authorization: `Bearer ${stack.apiKey}` },
  });
  return (await response.json()) as MessageViewFields;
}

/**
 * Failover through real Postfix (issue 31, docs/design.md §15 Failover across relays): two Postfix
 * instances (bench/postfixRelay.ts), `primary` relaying to one sink and `backup` to another, in
 * POSTDATE_RELAYS. Each case stops `primary` (connections refused) or makes it answer `421` at the
 * greeting; ten messages are due 2 s into the outage; after it, ten more are due from 2 s after
 * `primary` is back, spread over two probe intervals (failback). Judged from what the two sinks received (bench/outageCounts.ts):
 * lost, doubled, received through `primary` during its outage; dead from the API; the latency from
 * due time to the first receipt at either sink (through Postfix's own queue) is reported.
 * `npm run bench -- postfix-failover`; skips like `postfix-outage`.
 */
const FAILOVER_CASES: readonly OutageCase[] = [
  { kind: 'stopped', seconds: 20 },
  { kind: '421', seconds: 20 },
];
const QUICK_FAILOVER_CASES: readonly OutageCase[] = [{ kind: 'stopped', seconds: 15 }];

export async function postfixFailover(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const unavailable = postfixUnavailable();
  if (unavailable) {
    return skipped('postfix-failover', 'Failover between two real Postfix relays', unavailable, options);
  }
  const primarySink = await startSmtpSink({ port: await freePort() });
  const backupSink = await startSmtpSink({ port: await freePort() });
  const primary = await startPostfixRelay({
    port: await freePort(),
    relayHost: '127.0.0.1',
    relayPort: primarySink.port,
  });
  const backup = await startPostfixRelay({
    port: await freePort(),
    relayHost: '127.0.0.1',
    relayPort: backupSink.port,
  });
  const relay = (name: string, port: number) => ({
    name,
    host: '127.0.0.1',
    port,
    secure: false,
    require_tls: false,
  });
  let stack: LocalStack | undefined;
  try {
    await primary.start();
    await backup.start();
    stack = await startBenchStack(
      {
        POSTDATE_RELAYS: JSON.stringify([relay('primary', primary.port), relay('backup', backup.port)]),
        POSTDATE_RELAY_PROBE_SECONDS: String(PROBE_SECONDS),
      },
      { quiet: process.env.POSTFIX_OUTAGE_VERBOSE !== '1' },
    );
    const rows: BenchRow[] = [];
    const cases: unknown[] = [];
    for (const outageCase of options.quick ? QUICK_FAILOVER_CASES : FAILOVER_CASES) {
      const name = `${outageCase.kind} ${outageCase.seconds} s`;
      await primary.stop();
      await primary.setMode(outageCase.kind === '421' ? 'defer' : 'accept');
      if (outageCase.kind === '421') await primary.start();
      await sleep(500);
      const logOffset = primary.maillog().length;
      const outageStart = Date.now();
      const key = `postfix-failover-${outageStart}-${outageCase.kind}`;
      const during = await enqueueDueAt(stack, `${key}-during`, () => outageStart + DUE_AFTER_MS);
      await sleep(outageStart + outageCase.seconds * 1000 - Date.now());
      const recoveryBegan = Date.now();
      if (outageCase.kind === 'stopped') await primary.start();
      else await primary.setMode('accept');
      const recoveredAt = Date.now();
      // Spread over two probe intervals: the first copies meet the primary's breaker still open
      // (they leave through backup) until one finds its probe due, probes and closes it.
      const back = await enqueueDueAt(
        stack,
        `${key}-back`,
        (index) => recoveredAt + DUE_AFTER_MS + (index * 2 * PROBE_SECONDS * 1000) / MESSAGES,
      );
      const all = [...during, ...back];
      const sinks = () => ({ primary: primarySink.messages(), backup: backupSink.messages() });
      const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
      while (relayReceipts(all, sinks()).lost > 0 && Date.now() < deadline) await sleep(250);
      // A moment more, so that a duplicate on its way would be counted too.
      await sleep(5_000);
      const received = relayReceipts(all, sinks());
      const viaPrimaryDuringOutage = primarySink
        .messages()
        .filter((mail) => mail.postdateId !== null && during.includes(mail.postdateId))
        .filter((mail) => Date.parse(mail.receivedAt) < recoveryBegan).length;
      const latencies = during.flatMap((id) => {
        const at = received.firstReceiptMs.get(id);
        return at === undefined ? [] : [(at - outageStart - DUE_AFTER_MS) / 1000];
      });
      const backAtPrimary = back.filter((id) => received.firstRelay.get(id) === 'primary').length;
      const lastBack = [...back].sort(
        (a, b) => (received.firstReceiptMs.get(a) ?? 0) - (received.firstReceiptMs.get(b) ?? 0),
      )[back.length - 1];
      const failedBack = lastBack !== undefined && received.firstRelay.get(lastBack) === 'primary';
      const statuses = await inParallel(
        all,
        MESSAGES,
        async (id) => (await messageView(stack as LocalStack, id)).status,
      );
      const dead = statuses.filter((status) => status === 'dead').length;
      await sleep(500);
      const caseLog = primary.maillog().slice(logOffset);
      const rejected =
        outageCase.kind === '421' ? (caseLog.match(/NOQUEUE: reject: CONNECT from/g) ?? []).length : null;
      const prefix = `${name} primary outage (${round((recoveredAt - outageStart) / 1000, 1)} s)`;
      const zero = (metric: string, value: number): BenchRow => ({
        metric: `${prefix}: ${metric}`,
        value,
        unit: 'msgs',
        goal: '0',
        pass: value === 0,
      });
      rows.push(
        zero('dead', dead),
        zero('lost (received by neither sink)', received.lost),
        zero('received more than once (either relay, or both)', received.doubled),
        zero('received through primary during its outage', viaPrimaryDuringOutage),
        {
          metric: `${prefix}: due → first receipt at either sink, max`,
          value: round(maximum(latencies), 2),
          unit: 's (max)',
          note: `p50 ${round(percentile(latencies, 50), 2)} s; probe every ${PROBE_SECONDS} s`,
        },
        ...(rejected === null
          ? []
          : [
              {
                metric: `${prefix}: connections primary answered 421 (its maillog)`,
                value: rejected,
                unit: 'connections',
                note: `probe every ${PROBE_SECONDS} s`,
              },
            ]),
        {
          metric: `${prefix}: failback, of ${MESSAGES} due over ${2 * PROBE_SECONDS} s after recovery, through primary`,
          value: backAtPrimary,
          unit: 'msgs',
          goal: 'the last through primary',
          pass: failedBack,
        },
      );
      cases.push({ name, perRelay: received.perRelay, latencies, rejected, backAtPrimary, dead });
      options.log(
        `  ${name}: lost ${received.lost}, doubled ${received.doubled}, dead ${dead}, per relay ${JSON.stringify(received.perRelay)}`,
      );
    }
    return {
      name: 'postfix-failover',
      title: 'Failover between two real Postfix relays: the first stopped or answering 421',
      rows,
      details: { probeSeconds: PROBE_SECONDS, cases },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack?.stop();
    await primary.close();
    await backup.close();
    await primarySink.stop();
    await backupSink.stop();
  }
}

/** Ten messages through the API, the `index`th due at `dueMs(index)`; their ids. */
async function enqueueDueAt(
  stack: LocalStack,
  key: string,
  dueMs: (index: number) => number,
): Promise<string[]> {
  const enqueued = await inParallel(
    Array.from({ length: MESSAGES }, (_, index) => index),
    MESSAGES,
    (index) => enqueue(stack, { bodyBytes: 256, key: `${key}-${index}`, sendAt: new Date(dueMs(index)) }),
  );
  return enqueued.map((message) => message.id);
}
