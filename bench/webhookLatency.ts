import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { LocalStack } from '../local/localStack.js';
import { type Spread, sleep, spread } from './stats.js';

/**
 * Webhook latency on the local stack (issue 20): the time from a status change to its webhook's
 * arrival at a receiver on 127.0.0.1, i.e. the receiver's clock at the POST minus the event's
 * `created_at` (the state record's `updated_at`, written with the status: the same machine's clock).
 * It spans the table's stream, the event producer (stream runner poll, fan-out, the delivery write),
 * the webhook queue and the delivery function's signed POST. The first arrival of each event counts
 * (the receiver answers 200 at once, so there are no retries); every signature is verified.
 *
 * `stages()` splits each latency in three with what the API shows of the delivery
 * (GET /v1/webhooks/{id}/deliveries): its `created_at` (the event producer's clock once it has read
 * the endpoints, just before the delivery write) and its first attempt's `at` (the delivery
 * function's clock as it signs the POST). So status change → delivery made is the table's stream,
 * its reader's poll (and batching window) and the endpoint read; → POST started is the delivery write,
 * the webhook queue and the delivery read; → arrival is the POST itself (docs/decisions/0113-webhook-latency-without-a-window.md).
 */
export interface WebhookLatencyProbe {
  /**
   * Status changes from this instant on are the measured ones; earlier ones (a warm-up's) are kept
   * apart, in `spreads().warmUp`. Until called, every event is measured.
   */
  measureFrom(at: number): void;
  /** Measured events that arrived so far, of a type (`message.sent`) or all. */
  arrived(type?: string): number;
  /**
   * Waits until every message whose acceptance arrived (at least `messages` of them) has its
   * `message.sent` too — every bench message is sent — or `timeoutMs` passed.
   */
  waitForSent(messages: number, timeoutMs: number): Promise<void>;
  /** Each measured first arrival's latency in three parts, from the endpoint's deliveries (read through the API). */
  stages(): Promise<WebhookLatencyStages>;
  /** The latency spread of every measured first arrival, per event type, and the warm-up's apart. */
  spreads(): {
    readonly all: Spread;
    readonly byType: Readonly<Record<string, Spread>>;
    readonly warmUp: Spread;
  };
  readonly unverified: () => number;
  close(): Promise<void>;
}

export interface WebhookLatencyStages {
  /** Status change → the producer makes the delivery (its `created_at`). */
  readonly toProducer: Spread;
  /** The delivery made → its POST started (the first attempt's `at`). */
  readonly queued: Spread;
  /** POST started → arrival at the receiver. */
  readonly post: Spread;
}

interface DeliveryPage {
  readonly items: readonly {
    readonly event_id: string;
    readonly created_at: string;
    readonly history: readonly { readonly at: string }[];
  }[];
  readonly next_cursor: string | null;
}

export async function startWebhookLatencyProbe(stack: LocalStack): Promise<WebhookLatencyProbe> {
  const first = new Map<string, { type: string; latencyMs: number; createdAt: number; arrivedAt: number }>();
  let unverified = 0;
  let verifier: Webhook | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const arrivedAt = Date.now();
      res.statusCode = 200;
      res.end();
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        verifier?.verify(body, req.headers as Record<string, string>);
      } catch {
        unverified += 1;
        return;
      }
      const event = JSON.parse(body) as { id: string; type: string; created_at: string };
      if (!first.has(event.id)) {
        const createdAt = Date.parse(event.created_at);
        first.set(event.id, { type: event.type, latencyMs: arrivedAt - createdAt, createdAt, arrivedAt });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const created = await fetch(`${stack.apiUrl}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${port}/bench`, description: 'bench: webhook latency' }),
  });
  const endpoint = (await created.json()) as { id?: string; secret?: string };
  if (created.status !== 201 || typeof endpoint.secret !== 'string' || typeof endpoint.id !== 'string') {
    server.close();
    throw new Error(`POST /v1/webhooks answered ${created.status}`);
  }
  verifier = new Webhook(endpoint.secret);
  const endpointId = endpoint.id;

  const deliveries = async (): Promise<DeliveryPage['items']> => {
    const all: DeliveryPage['items'][number][] = [];
    let cursor: string | null = null;
    do {
      const query = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
      const page = await fetch(`${stack.apiUrl}/v1/webhooks/${endpointId}/deliveries?${query}`, {
        headers: { authorization: `Bearer ${stack.apiKey}` },
      });
      if (page.status !== 200) throw new Error(`GET /v1/webhooks/{id}/deliveries answered ${page.status}`);
      const body = (await page.json()) as DeliveryPage;
      all.push(...body.items);
      cursor = body.next_cursor;
    } while (cursor);
    return all;
  };

  let measuredFrom = Number.NEGATIVE_INFINITY;
  const measured = (entry: { createdAt: number }) => entry.createdAt >= measuredFrom;
  const ofType = (type?: string) =>
    [...first.values()].filter((entry) => measured(entry) && (type === undefined || entry.type === type));
  return {
    measureFrom: (at) => {
      measuredFrom = at;
    },
    arrived: (type) => ofType(type).length,
    async waitForSent(messages, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const done = () => {
        const accepted = ofType('message.scheduled').length;
        return accepted >= messages && ofType('message.sent').length >= accepted;
      };
      while (!done() && Date.now() < deadline) await sleep(100);
    },
    async stages() {
      const toProducer: number[] = [];
      const queued: number[] = [];
      const post: number[] = [];
      for (const delivery of await deliveries()) {
        const arrival = first.get(delivery.event_id);
        const attemptAt = Date.parse(delivery.history[0]?.at ?? '');
        if (!arrival || !measured(arrival) || Number.isNaN(attemptAt)) continue;
        const writtenAt = Date.parse(delivery.created_at);
        toProducer.push(writtenAt - arrival.createdAt);
        queued.push(attemptAt - writtenAt);
        post.push(arrival.arrivedAt - attemptAt);
      }
      return { toProducer: spread(toProducer), queued: spread(queued), post: spread(post) };
    },
    spreads() {
      const byType: Record<string, Spread> = {};
      for (const type of new Set(ofType().map((entry) => entry.type))) {
        const samples = ofType(type).map((entry) => entry.latencyMs);
        byType[type] = spread(samples);
      }
      const warmUp = [...first.values()].filter((entry) => !measured(entry));
      return {
        all: spread(ofType().map((entry) => entry.latencyMs)),
        byType,
        warmUp: spread(warmUp.map((entry) => entry.latencyMs)),
      };
    },
    unverified: () => unverified,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
