import { connect, createServer, type Server, type Socket } from 'node:net';

/** A moment of a mail transaction the tap saw the client reach. */
export type SmtpMoment = 'data-command' | 'end-of-data';

/** One mail transaction (from MAIL FROM on) as it went through the tap. Times are epoch ms. */
export interface TapTransaction {
  /** The tap's number of the connection (1, 2, …) and the transaction's place on it (0, 1, …). */
  readonly connection: number;
  readonly index: number;
  /** The tap's own port towards the relay: the relay sees it as the session's remote port. */
  readonly upstreamPort: number | undefined;
  /** The client's port (in the chaos run, the outage proxy's session towards the tap). */
  readonly clientPort: number | undefined;
  readonly connectionOpenedAtMs: number;
  readonly mailFromAtMs: number;
  dataCommandAtMs: number | null;
  /**
   * Every RCPT TO and the relay's reply to it (code and time; null until it came): a refusal at RCPT
   * carries no body, so the checker attributes it to its message by the address.
   */
  recipients: { address: string; code: number | null; atMs: number | null }[];
  /** When the client's final dot had been forwarded to the relay. */
  finalDotAtMs: number | null;
  /** From the body's headers as they went through. */
  postdateId: string | null;
  messageId: string | null;
  /** The relay's reply to the final dot, when it was forwarded, and whether the client could still take it. */
  reply: { code: number; text: string; atMs: number; delivered: boolean } | null;
  /** The client's first command on this connection after the final dot. */
  clientCommandAfterDotAtMs: number | null;
  clientCommandAfterDot: string | null;
  closedAtMs: number | null;
  closedBy: 'client' | 'server' | null;
}

export interface SmtpTap {
  readonly host: string;
  readonly port: number;
  /** Every transaction seen so far, in the order their MAIL FROM went through. */
  transactions(): readonly TapTransaction[];
  /** The client ports of the transactions whose connection the tap has not seen close yet. */
  openClientPorts(): number[];
  close(): Promise<void>;
}

const END_OF_DATA = '\r\n.\r\n';
/** Enough of a body to hold its headers. */
const HEAD_BYTES = 64 * 1024;

/**
 * A TCP pass-through in front of the test SMTP server. It tells, synchronously, when a client
 * sends `DATA` and when it has sent the final dot — after forwarding those bytes, before the
 * server's reply can come back — so that the chaos run can kill the sender process at those moments
 * (mid-send with the body not yet sent, or sent and not yet acknowledged: the ambiguous case of
 * DESIGN §5). And it records every transaction: its message id (from the headers that went
 * through), when its final dot went, what the relay answered to it and when, whether the client
 * could still hear that answer, whether the client sent anything more on the connection after the
 * dot, and when and by which side the connection closed. That record is the harness's own account
 * of each copy, against which the checker explains a duplicate (chaos/checker.ts).
 */
export async function startSmtpTap(options: {
  readonly targetHost: string;
  readonly targetPort: number;
  readonly onMoment: (moment: SmtpMoment) => void;
  /** The clock of the record. @default Date.now */
  readonly now?: () => number;
}): Promise<SmtpTap> {
  const now = options.now ?? Date.now;
  const sockets = new Set<Socket>();
  const all: TapTransaction[] = [];
  let connections = 0;
  const server: Server = createServer((client) => {
    connections += 1;
    const connection = connections;
    const openedAt = now();
    const upstream = connect({ host: options.targetHost, port: options.targetPort });
    let upstreamPort: number | undefined;
    upstream.once('connect', () => {
      upstreamPort = upstream.localPort;
    });
    sockets.add(client);
    sockets.add(upstream);

    const mine: TapTransaction[] = [];
    let current: TapTransaction | undefined;
    /**
     * What each reply still to come answers, in order (clients pipeline MAIL, RCPT and DATA): the
     * greeting first, then one reply per command line, and one to the final dot.
     */
    type Answered = string | TapTransaction | TapTransaction['recipients'][number];
    const pending: Answered[] = ['greeting'];
    let inData = false;
    let head = '';
    let tail = '';
    let commandBuffer = '';
    let replyBuffer = '';
    let clientGone = false;

    const onCommand = (line: string, at: number) => {
      for (const transaction of mine) {
        if (transaction.finalDotAtMs !== null && transaction.clientCommandAfterDotAtMs === null) {
          transaction.clientCommandAfterDotAtMs = at;
          transaction.clientCommandAfterDot = line.slice(0, 40);
        }
      }
      const verb = line.split(' ', 1)[0]?.toUpperCase() ?? '';
      const address = /^RCPT TO:\s*<?([^>\s]*)>?/i.exec(line)?.[1];
      if (verb === 'RCPT' && current && address !== undefined) {
        const recipient = { address, code: null, atMs: null };
        current.recipients.push(recipient);
        pending.push(recipient);
        return;
      }
      pending.push(verb);
      if (verb === 'MAIL') {
        current = {
          connection,
          index: mine.length,
          upstreamPort,
          clientPort: client.remotePort,
          connectionOpenedAtMs: openedAt,
          mailFromAtMs: at,
          dataCommandAtMs: null,
          recipients: [],
          finalDotAtMs: null,
          postdateId: null,
          messageId: null,
          reply: null,
          clientCommandAfterDotAtMs: null,
          clientCommandAfterDot: null,
          closedAtMs: null,
          closedBy: null,
        };
        mine.push(current);
        all.push(current);
      } else if (verb === 'DATA' && current) {
        current.dataCommandAtMs = at;
      }
    };

    /** Client bytes outside a body: command lines. True when a DATA command ended the chunk. */
    const readCommands = (text: string, at: number): boolean => {
      commandBuffer += text;
      let sawData = false;
      for (;;) {
        const end = commandBuffer.indexOf('\r\n');
        if (end < 0) break;
        const line = commandBuffer.slice(0, end);
        commandBuffer = commandBuffer.slice(end + 2);
        onCommand(line, at);
        if (/^DATA$/i.test(line)) sawData = true;
      }
      if (commandBuffer.length > 4096) commandBuffer = commandBuffer.slice(-4096);
      return sawData;
    };

    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      const at = now();
      const text = chunk.toString('latin1');
      if (!inData) {
        if (readCommands(text, at)) options.onMoment('data-command');
        return;
      }
      if (head.length < HEAD_BYTES) head += text.slice(0, HEAD_BYTES - head.length);
      const joined = tail + text;
      const end = joined.indexOf(END_OF_DATA);
      if (end < 0) {
        tail = joined.slice(-(END_OF_DATA.length - 1));
        return;
      }
      inData = false;
      tail = '';
      if (current) {
        current.finalDotAtMs = at;
        current.messageId = header(head, 'Message-ID');
        current.postdateId = header(head, 'X-Postdate-Id');
        pending.push(current);
      }
      head = '';
      const rest = joined.slice(end + END_OF_DATA.length);
      options.onMoment('end-of-data');
      if (rest.length > 0) readCommands(rest, at);
    });

    upstream.on('data', (chunk: Buffer) => {
      const delivered = !clientGone && client.writable;
      client.write(chunk);
      const at = now();
      replyBuffer += chunk.toString('latin1');
      for (;;) {
        const end = replyBuffer.indexOf('\r\n');
        if (end < 0) break;
        const line = replyBuffer.slice(0, end);
        replyBuffer = replyBuffer.slice(end + 2);
        const final = /^(\d{3})(?: |$)/.exec(line);
        if (!final) continue; // a continuation line (`250-…`) of a multi-line reply
        const code = Number(final[1]);
        const answered = pending.shift();
        if (typeof answered === 'object' && 'address' in answered) {
          answered.code = code;
          answered.atMs = at;
        } else if (typeof answered === 'object') {
          answered.reply = { code, text: line.slice(0, 200), atMs: at, delivered };
        } else if (answered === 'DATA') {
          inData = code === 354;
        }
      }
      if (replyBuffer.length > 4096) replyBuffer = replyBuffer.slice(-4096);
    });

    let closed = false;
    const close = (by: 'client' | 'server') => {
      if (by === 'client') clientGone = true;
      if (!closed) {
        closed = true;
        const at = now();
        for (const transaction of mine) {
          transaction.closedAtMs = at;
          transaction.closedBy = by;
        }
      }
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('end', () => close('client'));
    client.on('close', () => close('client'));
    client.on('error', () => close('client'));
    upstream.on('end', () => close('server'));
    upstream.on('close', () => close('server'));
    upstream.on('error', () => close('server'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    host: '127.0.0.1',
    port,
    transactions: () => all,
    openClientPorts: () => [
      ...new Set(
        all.flatMap((transaction) =>
          transaction.closedAtMs === null && transaction.clientPort !== undefined
            ? [transaction.clientPort]
            : [],
        ),
      ),
    ],
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The first value of a header in the head of a raw message (unfolded), or null. */
function header(raw: string, name: string): string | null {
  const headEnd = raw.indexOf('\r\n\r\n');
  const head = headEnd < 0 ? raw : raw.slice(0, headEnd);
  const unfolded = head.replace(/\r\n[ \t]+/g, ' ');
  const pattern = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im');
  return pattern.exec(unfolded)?.[1]?.trim() ?? null;
}
