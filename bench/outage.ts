import { freePort } from '../local/freePort.js';
import { startRelayOutage } from '../local/smtp/relayOutage.js';
import { startSmtpSink } from '../local/smtp/smtpSink.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { enqueue, inParallel, startBenchStack } from './benchStack.js';
import { round, sleep } from './stats.js';

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
    const enqueued = await inParallel(
      Array.from({ length: count }, (_, index) => index),
      16,
      (index) =>
        enqueue(stack, {
          bodyBytes: 256,
          key: `outage-${started}-${index}`,
          delaySeconds: Math.floor((index / count) * spread),
        }),
    );
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
