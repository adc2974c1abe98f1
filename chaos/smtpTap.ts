import { connect, createServer, type Server, type Socket } from 'node:net';

/** A moment of a mail transaction the tap saw the client reach. */
export type SmtpMoment = 'data-command' | 'end-of-data';

export interface SmtpTap {
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

const END_OF_DATA = '\r\n.\r\n';

/**
 * A TCP pass-through in front of the test SMTP server that tells, synchronously, when a client
 * sends `DATA` and when it has sent the final dot — after forwarding those bytes, before the
 * server's reply can come back. The chaos run kills the sender process at these moments: mid-send,
 * with the body not yet sent, or sent and not yet acknowledged (the ambiguous case of DESIGN §5).
 */
export async function startSmtpTap(options: {
  readonly targetHost: string;
  readonly targetPort: number;
  readonly onMoment: (moment: SmtpMoment) => void;
}): Promise<SmtpTap> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host: options.targetHost, port: options.targetPort });
    sockets.add(client);
    sockets.add(upstream);
    let inData = false;
    let tail = '';
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      const text = tail + chunk.toString('latin1');
      if (!inData) {
        // Commands are lines; nodemailer waits for each reply, so DATA ends its chunk.
        if (/(^|\r\n)DATA\r\n$/i.test(text)) {
          inData = true;
          tail = '';
          options.onMoment('data-command');
          return;
        }
        tail = text.slice(-8);
        return;
      }
      if (text.endsWith(END_OF_DATA)) {
        inData = false;
        tail = '';
        options.onMoment('end-of-data');
        return;
      }
      tail = text.slice(-END_OF_DATA.length);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close);
    upstream.on('close', close);
    client.on('error', close);
    upstream.on('error', close);
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
