import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * The chaos run's webhook receiver: a real HTTP server on 127.0.0.1 with one path per tenant
 * (`/hooks/{tenant}`), registered as that tenant's endpoint. A seeded share of the POSTs is answered
 * 500 and another share stalls (no answer until Postdate's 10 s attempt timeout closes the
 * connection, or 15 s); the rest get a 200 at once. Every POST is recorded with the answer the
 * receiver chose and whether its Standard Webhooks signature verified (the reference implementation,
 * with the secret the endpoint's creation showed once). The checker (chaos/webhookChecker.ts) reads
 * only this record.
 */

/** What the receiver did with one POST. */
export type ReceiverAnswer = 'ok' | 'fail' | 'stall';

/** One POST as the receiver saw it. */
export interface ReceivedWebhook {
  /** The tenant whose endpoint (path) it reached. */
  readonly endpointTenant: string;
  readonly atMs: number;
  readonly answer: ReceiverAnswer;
  /** The signature verified with the endpoint's secret (and `webhook-id` is the event's id). */
  readonly verified: boolean;
  readonly verifyError: string | null;
  readonly webhookId: string | null;
  /** From the body: the event's id, type and tenant, and the message id and status of its data. */
  readonly eventId: string | null;
  readonly type: string | null;
  readonly eventTenant: string | null;
  readonly messageId: string | null;
  readonly status: string | null;
  readonly previousStatus: string | null;
}

export interface WebhookReceiver {
  readonly port: number;
  /** The URL of a tenant's endpoint. */
  url(tenant: string): string;
  /** The secret of a tenant's endpoint, once created (verification starts then). */
  setSecret(tenant: string, secret: string): void;
  readonly received: readonly ReceivedWebhook[];
  close(): Promise<void>;
}

/** After this long a stalled POST is closed by the receiver itself (Postdate should have given up at 10 s). */
export const RECEIVER_STALL_MS = 15_000;

export async function startWebhookReceiver(options: {
  readonly random: () => number;
  readonly failureRate: number;
  readonly stallRate: number;
}): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const verifiers = new Map<string, Webhook>();
  const stalled = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const match = /^\/hooks\/([a-z0-9_-]+)$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !match?.[1]) {
        res.statusCode = 404;
        res.end();
        return;
      }
      const tenant = match[1];
      const body = Buffer.concat(chunks).toString('utf8');
      const draw = options.random();
      const answer: ReceiverAnswer =
        draw < options.failureRate ? 'fail' : draw < options.failureRate + options.stallRate ? 'stall' : 'ok';
      received.push({
        endpointTenant: tenant,
        atMs: Date.now(),
        answer,
        ...verify(verifiers.get(tenant), body, req.headers),
        ...eventFields(body),
      });
      if (answer === 'fail') {
        res.statusCode = 500;
        res.end('chaos: failing on purpose');
      } else if (answer === 'stall') {
        stalled.add(res);
        const timer = setTimeout(() => res.destroy(), RECEIVER_STALL_MS);
        res.on('close', () => {
          clearTimeout(timer);
          stalled.delete(res);
        });
      } else {
        res.statusCode = 200;
        res.end('ok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (tenant) => `http://127.0.0.1:${port}/hooks/${tenant}`,
    setSecret: (tenant, secret) => {
      verifiers.set(tenant, new Webhook(secret));
    },
    received,
    close: async () => {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function verify(
  verifier: Webhook | undefined,
  body: string,
  headers: IncomingHttpHeaders,
): Pick<ReceivedWebhook, 'verified' | 'verifyError' | 'webhookId'> {
  const header = (name: string) => {
    const value = headers[name];
    return typeof value === 'string' ? value : null;
  };
  const webhookId = header('webhook-id');
  if (!verifier) return { verified: false, verifyError: 'no secret for this endpoint', webhookId };
  try {
    verifier.verify(body, {
      'webhook-id': webhookId ?? '',
      'webhook-timestamp': header('webhook-timestamp') ?? '',
      'webhook-signature': header('webhook-signature') ?? '',
    });
    return { verified: true, verifyError: null, webhookId };
  } catch (error) {
    return {
      verified: false,
      verifyError: error instanceof Error ? error.message : String(error),
      webhookId,
    };
  }
}

function eventFields(
  body: string,
): Pick<ReceivedWebhook, 'eventId' | 'type' | 'eventTenant' | 'messageId' | 'status' | 'previousStatus'> {
  let event: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed !== null && typeof parsed === 'object') event = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: every field stays null and the checker reports it.
  }
  const data = (event.data !== null && typeof event.data === 'object' ? event.data : {}) as Record<
    string,
    unknown
  >;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return {
    eventId: text(event.id),
    type: text(event.type),
    eventTenant: text(event.tenant),
    messageId: text(data.id),
    status: text(data.status),
    previousStatus: text(data.previous_status),
  };
}
