import { freePort } from '../local/freePort.js';
import type { LocalStack } from '../local/localStack.js';
import { startRelayOutage } from '../local/smtp/relayOutage.js';
import { type SmtpSink, startSmtpSink } from '../local/smtp/smtpSink.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { type Enqueued, enqueue, inParallel, startBenchStack } from './benchStack.js';
import { mostInAnyInterval, type ReceivedAtRelay, relayReceipts } from './outageCounts.js';
import { percentile, round, sleep } from './stats.js';

/**
 * Outage (issue 19 §1, DESIGN §5 "An outage is not the message's fault"): 2,000 messages come due
 * while the relay is down, on the real local stack (DynamoDB Local, the SQS emulator, the relay and
 * sender functions in their sandboxes). The relay is the local SMTP sink behind a pass-through
 * (local/smtp/relayOutage.ts) that answers every connection `421 4.3.2` during the outage and counts
 * it.
 *
 * Time is compressed tenfold: a 10-minute outage is 60 s, the probe interval 30 s is 3 s
 * (POSTDATE_RELAY_PROBE_SECONDS=3), so the outage spans the same 20 probe intervals. The messages
 * are enqueued through the API once the outage has begun, due spread over its first 40 s.
 *
 * Reported, decided from what the sink received (never from Postdate's records): dead (the DLQ and
 * the records' `dead`) and lost (due, never received) must be 0, each message received exactly
 * once; connection attempts during the outage against the bound `outage ÷ interval + senders`
 * (senders = send slots: 5 concurrent invocations × 4 copies at once); time from recovery to the
 * last delivery, and the drain rate after recovery beside the scale benchmark's recorded rate.
 */
const MESSAGES = 2_000;
const QUICK_MESSAGES = 300;
const OUTAGE_SECONDS = 60;
const QUICK_OUTAGE_SECONDS = 20;
const PROBE_SECONDS = 3;
const DUE_SPREAD_SECONDS = 40;
/** 5 concurrent sender invocations (local/localFunctions.ts) × 4 copies at once (createSenderHandler). */
const SEND_SLOTS = 5 * 4;
/** docs/performance.md, scale (4,000 queued messages, overall drain). */
const SCALE_DRAIN_RATE = 60.2;

export async function outage(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const count = options.quick ? QUICK_MESSAGES : MESSAGES;
  const outageSeconds = options.quick ? QUICK_OUTAGE_SECONDS : OUTAGE_SECONDS;
  const sink = await startSmtpSink({ port: await freePort() });
  const relay = await startRelayOutage({ targetHost: '127.0.0.1', targetPort: sink.port });
  const stack = await startBenchStack({
    SMTP_HOST: relay.host,
    SMTP_PORT: String(relay.port),
    POSTDATE_RELAY_PROBE_SECONDS: String(PROBE_SECONDS),
  });
  try {
    await relay.set('down');
    const outageStart = Date.now();
    options.log(`  relay down; enqueueing ${count} messages due over the next ${DUE_SPREAD_SECONDS} s`);
    const spread = options.quick ? Math.min(DUE_SPREAD_SECONDS, outageSeconds - 5) : DUE_SPREAD_SECONDS;
    const enqueued = await enqueueSpread(stack, count, spread, `outage-${started}`);
    const ids = enqueued.map((message) => message.id);
    // Down for the outage's length, and at least until every message has come due during it (a slow
    // enqueue on a loaded machine must not let the last ones fall due after the relay is back).
    const lastDueMs = Math.max(...enqueued.map((message) => message.sendAt.getTime()));
    const remaining = Math.max(outageStart + outageSeconds * 1000, lastDueMs + 5_000) - Date.now();
    if (remaining > 0) await sleep(remaining);
    const outageMs = Date.now() - outageStart;
    const attemptsDuringOutage = relay.connections.down;
    const receivedDuringOutage = sink.messages().length;
    await relay.set('up');
    const recoveredAt = Date.now();
    options.log(
      `  relay up after ${round(outageMs / 1000, 1)} s; ${attemptsDuringOutage} connection attempts`,
    );

    const wanted = new Set(ids);
    const deadline = Date.now() + 15 * 60_000;
    let lastDeliveryMs = recoveredAt;
    for (;;) {
      const got = new Set<string>();
      for (const mail of sink.messages()) {
        if (mail.postdateId !== null && wanted.has(mail.postdateId)) {
          got.add(mail.postdateId);
          lastDeliveryMs = Math.max(lastDeliveryMs, Date.parse(mail.receivedAt));
        }
      }
      if (got.size === wanted.size || Date.now() > deadline) break;
      await sleep(250);
    }
    // A moment more, so that a duplicate on its way would be counted too.
    await sleep(5_000);
    const perId = new Map<string, number>();
    for (const mail of sink.messages()) {
      if (mail.postdateId !== null && wanted.has(mail.postdateId)) {
        perId.set(mail.postdateId, (perId.get(mail.postdateId) ?? 0) + 1);
      }
    }
    const lost = ids.filter((id) => !perId.has(id)).length;
    const duplicated = [...perId.values()].filter((n) => n > 1).length;
    const dead = await deadCount(stack.apiUrl, stack.apiKey, ids);
    const drainSeconds = (lastDeliveryMs - recoveredAt) / 1000;
    const drainRate = count / Math.max(0.001, drainSeconds);
    const bound = Math.ceil(outageMs / (PROBE_SECONDS * 1000)) + SEND_SLOTS;
    const rows: BenchRow[] = [
      {
        metric: `messages due during a ${outageSeconds} s outage (10× compressed)`,
        value: count,
        unit: 'msgs',
      },
      { metric: 'dead', value: dead, unit: 'msgs', goal: '0', pass: dead === 0 },
      {
        metric: 'lost (never received by the relay)',
        value: lost,
        unit: 'msgs',
        goal: '0',
        pass: lost === 0,
      },
      {
        metric: 'received more than once',
        value: duplicated,
        unit: 'msgs',
        goal: '0',
        pass: duplicated === 0,
      },
      {
        metric: 'received during the outage',
        value: receivedDuringOutage,
        unit: 'msgs',
        goal: '0',
        pass: receivedDuringOutage === 0,
      },
      {
        metric: 'connection attempts to the relay during the outage',
        value: attemptsDuringOutage,
        unit: 'connections',
        baseline: {
          label: `bound: ${round(outageMs / 1000, 0)} s ÷ ${PROBE_SECONDS} s + ${SEND_SLOTS} send slots`,
          value: bound,
        },
        goal: `≤ ${bound}`,
        pass: attemptsDuringOutage <= bound,
      },
      { metric: 'recovery → last delivery', value: round(drainSeconds, 1), unit: 's' },
      {
        metric: 'drain rate after recovery',
        value: round(drainRate, 1),
        unit: 'msg/s',
        baseline: { label: 'scale benchmark, overall drain (docs/performance.md)', value: SCALE_DRAIN_RATE },
        comparison: { kind: 'ratio', value: round(drainRate / SCALE_DRAIN_RATE, 2) },
        goal: 'reported',
      },
    ];
    return {
      name: 'outage',
      title: 'Relay outage: nothing dead, nothing lost, one probe per interval',
      rows,
      details: {
        outageMs,
        probeSeconds: PROBE_SECONDS,
        attemptsDuringOutage,
        downConnectionTimes: relay.downConnectionTimes.map((at) => at - outageStart),
        upConnections: relay.connections.up,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack.stop();
    await relay.close();
    await sink.stop();
  }
}

/** How many of the messages the API reports `dead` (the DLQ would hold their copies). */
async function deadCount(apiUrl: string, apiKey: string, ids: readonly string[]): Promise<number> {
  const statuses = await inParallel(ids, 16, async (id) => {
    const response = await fetch(`${apiUrl}/v1/messages/${id}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const body = (await response.json()) as { status?: string };
    return body.status;
  });
  return statuses.filter((status) => status === 'dead').length;
}

/**
 * Failover (issue 31, docs/design.md §15 Failover across relays): two relays, `primary` (the SMTP
 * sink behind local/smtp/relayOutage.ts) and `backup` (a second sink), in POSTDATE_RELAYS. The same
 * stack first sends `count` messages due over `spread` seconds with both relays up (the no-outage
 * latency), then the same again while `primary` answers `421` at the greeting for the outage, then
 * a few once it is back (failback: docs/design.md §15, the first relay whose breaker is closed).
 *
 * Latency is the time from a message's `send_at` to its first receipt at either relay; the goal is
 * the outage's p99 within one probe interval of the no-outage p99 of the same run. Lost, doubled
 * and "at both relays" are counted from what the two sinks received (bench/outageCounts.ts), dead
 * from the API. Connection attempts to `primary` during the outage are held to RFC 5321 §4.5.4.1:
 * in all, `outage ÷ interval + send slots` (the sends already under way when it began); after its
 * first interval, at most one in any probe interval.
 */
const FAILOVER_SPREAD_SECONDS = 40;
const QUICK_FAILOVER_SPREAD_SECONDS = 15;
const FAILBACK_MESSAGES = 20;
const WARM_UP_MESSAGES = 40;

export async function outageFailover(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const count = options.quick ? QUICK_MESSAGES : MESSAGES;
  const outageSeconds = options.quick ? QUICK_OUTAGE_SECONDS : OUTAGE_SECONDS;
  const spread = options.quick ? QUICK_FAILOVER_SPREAD_SECONDS : FAILOVER_SPREAD_SECONDS;
  const probeMs = PROBE_SECONDS * 1000;
  const primarySink = await startSmtpSink({ port: await freePort() });
  const backupSink = await startSmtpSink({ port: await freePort() });
  const primary = await startRelayOutage({ targetHost: '127.0.0.1', targetPort: primarySink.port });
  const relay = (name: string, port: number) => ({
    name,
    host: '127.0.0.1',
    port,
    secure: false,
    require_tls: false,
  });
  const stack = await startBenchStack({
    POSTDATE_RELAYS: JSON.stringify([relay('primary', primary.port), relay('backup', backupSink.port)]),
    POSTDATE_RELAY_PROBE_SECONDS: String(PROBE_SECONDS),
  });
  const sinks = { primary: primarySink, backup: backupSink };
  try {
    // Warm every sender sandbox and pooled connection first, so the no-outage latency is not a cold start's.
    await waitForAll(sinks, await enqueueSpread(stack, WARM_UP_MESSAGES, 0, `warm-${started}`), 5 * 60_000);
    options.log(`  both relays up: ${count} messages due over ${spread} s`);
    const calm = await enqueueSpread(stack, count, spread, `calm-${started}`);
    await waitForAll(sinks, calm, 10 * 60_000);

    await primary.set('down');
    const outageStart = Date.now();
    options.log(`  primary down: ${count} messages due over ${spread} s`);
    const during = await enqueueSpread(stack, count, spread, `failover-${started}`);
    const lastDueMs = Math.max(...during.map((message) => message.sendAt.getTime()));
    const remaining = Math.max(outageStart + outageSeconds * 1000, lastDueMs + 5_000) - Date.now();
    if (remaining > 0) await sleep(remaining);
    const outageMs = Date.now() - outageStart;
    const attemptTimes = [...primary.downConnectionTimes];
    await primary.set('up');
    const recoveredAt = Date.now();
    options.log(
      `  primary up after ${round(outageMs / 1000, 1)} s; ${attemptTimes.length} connection attempts`,
    );
    await waitForAll(sinks, during, 10 * 60_000);

    // Failback: once the primary is back, the next probe closes its breaker and mail returns to it.
    // Due over two probe intervals, not at once: mail due before that probe rightly leaves through
    // the backup (a full run with all 20 due at once sent every one there, the probe not yet due).
    const back = await enqueueSpread(stack, FAILBACK_MESSAGES, 2 * PROBE_SECONDS, `failback-${started}`);
    await waitForAll(sinks, back, 5 * 60_000);
    // A moment more, so that a duplicate on its way would be counted too.
    await sleep(5_000);

    const all = [...calm, ...during, ...back].map((message) => message.id);
    const received = relayReceipts(all, { primary: primarySink.messages(), backup: backupSink.messages() });
    const calmLatency = latenciesMs(calm, received.firstReceiptMs);
    const outageLatency = latenciesMs(during, received.firstReceiptMs);
    const calmP99 = percentile(calmLatency, 99) / 1000;
    const outageP99 = percentile(outageLatency, 99) / 1000;
    const primaryDuringOutage = primarySink.messages().filter((mail) => {
      const at = Date.parse(mail.receivedAt);
      return at > outageStart + 1_000 && at < recoveredAt;
    }).length;
    const backAtPrimary = back.filter((message) => received.firstRelay.get(message.id) === 'primary').length;
    const lastBack = [...back].sort(
      (a, b) => (received.firstReceiptMs.get(a.id) ?? 0) - (received.firstReceiptMs.get(b.id) ?? 0),
    )[back.length - 1];
    const failedBack = lastBack !== undefined && received.firstRelay.get(lastBack.id) === 'primary';
    const dead = await deadCount(stack.apiUrl, stack.apiKey, all);
    const bound = Math.ceil(outageMs / probeMs) + SEND_SLOTS;
    const afterFirstInterval = attemptTimes.filter((at) => at >= outageStart + probeMs);
    const mostPerInterval = mostInAnyInterval(afterFirstInterval, probeMs);
    const gaps = afterFirstInterval.slice(1).map((at, index) => at - (afterFirstInterval[index] ?? at));
    const shortestGap = gaps.length === 0 ? Number.NaN : Math.min(...gaps) / 1000;
    const rows: BenchRow[] = [
      {
        metric: `messages due with both relays up, then during a ${outageSeconds} s primary outage (10× compressed)`,
        value: count,
        unit: 'msgs each',
      },
      {
        metric: 'latency p99 during the outage (send_at → first relay receipt)',
        value: round(outageP99, 2),
        unit: 's',
        baseline: { label: 'no-outage p99, same run', value: round(calmP99, 2) },
        comparison: { kind: 'difference', value: round(outageP99 - calmP99, 2) },
        goal: `≤ +${PROBE_SECONDS} s (one probe interval)`,
        pass: outageP99 - calmP99 <= PROBE_SECONDS,
      },
      { metric: 'dead', value: dead, unit: 'msgs', goal: '0', pass: dead === 0 },
      {
        metric: 'lost (received by neither relay)',
        value: received.lost,
        unit: 'msgs',
        goal: '0',
        pass: received.lost === 0,
      },
      {
        metric: 'received more than once (either relay, or both)',
        value: received.doubled,
        unit: 'msgs',
        goal: '0',
        pass: received.doubled === 0,
        note: `${received.atTwoRelays} at both relays`,
      },
      {
        metric: 'received by primary during its outage',
        value: primaryDuringOutage,
        unit: 'msgs',
        goal: '0',
        pass: primaryDuringOutage === 0,
      },
      {
        metric: 'connection attempts to primary during the outage',
        value: attemptTimes.length,
        unit: 'connections',
        baseline: {
          label: `bound: ${round(outageMs / 1000, 0)} s ÷ ${PROBE_SECONDS} s + ${SEND_SLOTS} send slots`,
          value: bound,
        },
        goal: `≤ ${bound}`,
        pass: attemptTimes.length <= bound,
      },
      {
        metric: `most attempts to primary in one probe interval, after the first (${afterFirstInterval.length} in all)`,
        value: mostPerInterval,
        unit: 'connections',
        goal: '≤ 1 (RFC 5321 §4.5.4.1)',
        pass: mostPerInterval <= 1,
        note: `shortest gap ${round(shortestGap, 2)} s (the probes' claims are one interval apart; each connects after its claim)`,
      },
      {
        metric: `failback: of ${FAILBACK_MESSAGES} due after recovery, received by primary`,
        value: backAtPrimary,
        unit: 'msgs',
        goal: 'the last at primary',
        pass: failedBack,
      },
    ];
    return {
      name: 'outage-failover',
      title: 'Relay outage with a second relay: mail leaves through it, within one probe interval',
      rows,
      details: {
        outageMs,
        probeSeconds: PROBE_SECONDS,
        perRelay: received.perRelay,
        atTwoRelays: received.atTwoRelays,
        calmLatencyMs: { p50: percentile(calmLatency, 50), p99: percentile(calmLatency, 99) },
        outageLatencyMs: { p50: percentile(outageLatency, 50), p99: percentile(outageLatency, 99) },
        downConnectionTimes: attemptTimes.map((at) => at - outageStart),
        upConnections: primary.connections.up,
      },
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stack.stop();
    await primary.close();
    await primarySink.stop();
    await backupSink.stop();
  }
}

/** `count` messages through the API, due spread evenly over the next `spreadSeconds`. */
function enqueueSpread(
  stack: LocalStack,
  count: number,
  spreadSeconds: number,
  keyPrefix: string,
): Promise<Enqueued[]> {
  return inParallel(
    Array.from({ length: count }, (_, index) => index),
    16,
    (index) =>
      enqueue(stack, {
        bodyBytes: 256,
        key: `${keyPrefix}-${index}`,
        delaySeconds: Math.floor((index / count) * spreadSeconds),
      }),
  );
}

/** Waits until either sink has received each message (by X-Postdate-Id), or the timeout passes. */
async function waitForAll(
  sinks: Readonly<Record<string, SmtpSink>>,
  messages: readonly Enqueued[],
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const ids = messages.map((message) => message.id);
  for (;;) {
    const mails: Record<string, readonly ReceivedAtRelay[]> = {};
    for (const [name, sink] of Object.entries(sinks)) mails[name] = sink.messages();
    if (relayReceipts(ids, mails).lost === 0 || Date.now() > deadline) return;
    await sleep(250);
  }
}

/** Each received message's latency, `send_at` → first receipt at any relay (ms). */
function latenciesMs(messages: readonly Enqueued[], firstReceiptMs: ReadonlyMap<string, number>): number[] {
  const latencies: number[] = [];
  for (const message of messages) {
    const at = firstReceiptMs.get(message.id);
    if (at !== undefined) latencies.push(at - message.sendAt.getTime());
  }
  return latencies;
}
