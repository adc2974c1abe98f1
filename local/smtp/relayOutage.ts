import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP pass-through in front of an SMTP server that can play a relay outage (DESIGN §5, "An outage
 * is not the message's fault"): while `down`, every new connection is answered
 * `421 4.3.2 Service not available` at the greeting and closed, as Postfix and most relays answer
 * when they shed load or go into maintenance; while `refusing`, nothing listens on the port, so a
 * connect is refused (ECONNREFUSED). Sessions open when the outage begins are cut — transactions
 * already past the final dot included — and each cut is recorded (`cuts`), so that a harness can
 * count it among the faults it injected. It counts every
 * connection attempt it could see, so a test or a benchmark can hold the senders to their bound:
 * at most one probe per interval, plus one failed attempt per sender at the outage's start.
 *
 * Used by the sender's breaker tests, bench/outage.ts and the chaos run; it lives in local/ so that
 * nothing outside test/ imports from test/.
 */
export type RelayMode = 'up' | 'down' | 'refusing';

export interface RelayOutage {
  readonly host: string;
  readonly port: number;
  mode(): RelayMode;
  /** Switches the relay's behaviour for connections from now on. */
  set(mode: RelayMode): Promise<void>;
  /** Connections accepted in each mode so far (`refusing` counts none: nothing listens). */
  readonly connections: Readonly<Record<RelayMode, number>>;
  /** Epoch ms of every connection accepted while `down`. */
  readonly downConnectionTimes: readonly number[];
  /** Each outage (`down` or `refusing`): when it began and, once over, when it ended (epoch ms). */
  readonly outages: readonly { readonly startedAtMs: number; readonly endedAtMs: number | null }[];
  /**
   * Every session the start of an outage cut: when, and the port of the proxy's own connection
   * towards the target (the target sees it as the session's remote port).
   */
  readonly cuts: readonly SessionCutRecord[];
  close(): Promise<void>;
}

/** One session cut by the start of an outage. */
export interface SessionCutRecord {
  readonly atMs: number;
  readonly upstreamPort: number;
}

const OUTAGE_GREETING = '421 4.3.2 Service not available, closing transmission channel\r\n';

export async function startRelayOutage(options: {
  readonly targetHost: string;
  readonly targetPort: number;
  /** @default 127.0.0.1 */
  readonly host?: string;
  /** @default 0 (a free port) */
  readonly port?: number;
}): Promise<RelayOutage> {
  const host = options.host ?? '127.0.0.1';
  let current: RelayMode = 'up';
  const connections: Record<RelayMode, number> = { up: 0, down: 0, refusing: 0 };
  const downConnectionTimes: number[] = [];
  const outages: { startedAtMs: number; endedAtMs: number | null }[] = [];
  const cuts: SessionCutRecord[] = [];
  const open = new Set<Socket>();
  /** The proxy's connection towards the target of each session still open in `up` mode. */
  const upstreams = new Set<Socket>();

  const onConnection = (client: Socket) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    if (current !== 'up') {
      connections.down++;
      downConnectionTimes.push(Date.now());
      client.end(OUTAGE_GREETING);
      return;
    }
    connections.up++;
    const upstream = connect({ host: options.targetHost, port: options.targetPort });
    open.add(upstream);
    upstreams.add(upstream);
    upstream.once('close', () => {
      open.delete(upstream);
      upstreams.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  };

  let server: Server = await listen(onConnection, host, options.port ?? 0);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the relay proxy has no port');
  const port = address.port;

  return {
    host,
    port,
    connections,
    downConnectionTimes,
    outages,
    cuts,
    mode: () => current,
    async set(mode) {
      if (mode === current) return;
      const previous = current;
      current = mode;
      const at = Date.now();
      if (mode !== 'up') {
        if (previous === 'up') {
          outages.push({ startedAtMs: at, endedAtMs: null });
          // The outage cuts the sessions that were open: a fault of its own, recorded as one.
          for (const upstream of upstreams) {
            if (upstream.localPort !== undefined) cuts.push({ atMs: at, upstreamPort: upstream.localPort });
          }
        }
        for (const socket of open) socket.destroy();
      } else {
        const last = outages[outages.length - 1];
        if (last) last.endedAtMs = at;
      }
      if (mode === 'refusing') {
        await closeServer(server);
      } else if (previous === 'refusing') {
        server = await listen(onConnection, host, port);
      }
    },
    async close() {
      for (const socket of open) socket.destroy();
      if (current !== 'refusing') await closeServer(server);
    },
  };
}

function listen(onConnection: (socket: Socket) => void, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(onConnection);
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
