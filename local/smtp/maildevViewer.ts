/**
 * MailDev (npm `maildev`, MIT) as the mail viewer of `npm start` (DESIGN §7, issue 17 §4): an SMTP
 * server that keeps what it receives and a web page that shows it as a developer expects — the
 * rendered HTML, the text, the headers, search, delete, attachments — with a REST API beside it.
 *
 * Postdate's sender is not changed for it: `npm start` points `SMTP_HOST`/`SMTP_PORT` at MailDev's
 * SMTP port as it would at any relay. The small in-process sink (smtpSink.ts, mailViewer.ts) stays
 * what the tests use: it starts in milliseconds and its messages can be read from code.
 *
 * Test messages (DESIGN §14) never come by SMTP: the sandboxes that preload simulatedMailViewer.ts
 * post what the mailbox simulator took, and MailDev stores it as one of its own, marked
 * `X-Postdate-Test: true`.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { PortInUseError } from '../localEnv.js';
import { ownTempDir } from '../ownTempDir.js';
import { receiveSimulatedMail, type SimulatedMail } from './simulatedMailViewer.js';

export interface MaildevViewerOptions {
  /** MailDev's SMTP port; 0 picks a free one. */
  readonly smtpPort: number;
  /** The web page's (and REST API's) port; 0 picks a free one. */
  readonly webPort: number;
  readonly host: string;
  /**
   * Where MailDev keeps the mail (one `.eml` per message): the stack's data directory, kept across
   * restarts. Without one, a directory of this viewer's own, removed when it stops — never MailDev's
   * default `/tmp/maildev`, which every stack on the machine would share.
   */
  readonly mailDirectory?: string;
}

export interface MaildevViewer {
  readonly smtpHost: string;
  readonly smtpPort: number;
  /** The page a person opens (the REST API lives under it: `GET {url}/api/email`). */
  readonly url: string;
  /** Where the mail is kept: the given directory, or this viewer's own (gone after stop). */
  readonly mailDirectory: string;
  stop(): Promise<void>;
}

/** MailDev's package is not installed (a production install without devDependencies). */
export class MaildevMissingError extends Error {
  override readonly name = 'MaildevMissingError';
}

/**
 * Starts MailDev on loopback. STARTTLS is not offered (MailDev's certificate is self-signed, and
 * nodemailer would upgrade opportunistically and then refuse it); nothing leaves this machine.
 *
 * @throws MaildevMissingError when `maildev` cannot be imported, PortInUseError when a port is taken.
 */
export async function startMaildevViewer(options: MaildevViewerOptions): Promise<MaildevViewer> {
  let module: typeof import('maildev');
  try {
    module = await import('maildev');
  } catch (error) {
    throw new MaildevMissingError('the maildev package is not installed (npm ci installs it)', {
      cause: error,
    });
  }
  const { path: mailDirectory, remove: removeOwnDirectory } =
    options.mailDirectory === undefined
      ? await ownTempDir('postdate-maildev-')
      : { path: options.mailDirectory, remove: async () => undefined };
  const maildev = new module.MailDev({
    smtp: options.smtpPort,
    ip: options.host,
    web: options.webPort,
    webIp: options.host,
    hideExtensions: ['STARTTLS'],
    silent: true,
    verbose: false,
    mailDirectory,
  });
  // MailDev's web server prints "MailDev API running at …" with console.info whatever `silent`
  // says; the banner of `npm start` prints the URL itself, once.
  const info = console.info;
  console.info = () => undefined;
  let servers: Awaited<ReturnType<typeof maildev.start>>;
  try {
    servers = await maildev.start();
  } catch (error) {
    await maildev.stop().catch(() => undefined);
    await removeOwnDirectory();
    const { code, port } = error as { code?: unknown; port?: unknown };
    if (code === 'EADDRINUSE') {
      throw port === options.webPort
        ? new PortInUseError('mailViewer', options.webPort)
        : new PortInUseError('smtp', options.smtpPort);
    }
    throw error;
  } finally {
    console.info = info;
  }
  const smtp = servers.smtp.getAddress();
  const web = servers.api?.getAddress();
  if (!web || !servers.api) {
    await maildev.stop();
    await removeOwnDirectory();
    throw new Error('MailDev started without its web page');
  }
  let store: (mail: SimulatedMail) => Promise<string>;
  try {
    store = storeOf(servers.smtp);
  } catch (error) {
    await maildev.stop();
    await removeOwnDirectory();
    throw error;
  }
  servers.api.server.server.prependListener('request', pageUnlessJsonAsked);
  const testMail = receiveSimulatedMail({ host: options.host, port: smtp.port }, store);
  return {
    smtpHost: options.host,
    smtpPort: smtp.port,
    url: `http://${options.host}:${web.port}`,
    mailDirectory,
    stop: async () => {
      testMail.close();
      await maildev.stop();
      await removeOwnDirectory();
    },
  };
}

/**
 * How MailDev's SMTP server stores what it received (its `.eml`, the parsed email, the `new`
 * event the page listens to): `processIncomingEmail(stream, session)`, the step after DATA.
 * It is not in MailDev's typings (private in TypeScript, a plain method in its JavaScript):
 * checked here, so that a MailDev without it fails the start instead of dropping test mail.
 */
interface MaildevIncoming {
  processIncomingEmail(
    stream: Readable,
    session: {
      envelope: { mailFrom: { address: string; args: false }; rcptTo: { address: string; args: false }[] };
      hostNameAppearsAs: string;
      remoteAddress: string;
    },
  ): Promise<string>;
}

/** A test message stored in MailDev as received from the mailbox simulator (no connection). */
function storeOf(smtpServer: object): (mail: SimulatedMail) => Promise<string> {
  const incoming = smtpServer as Partial<MaildevIncoming>;
  if (typeof incoming.processIncomingEmail !== 'function') {
    throw new Error("MailDev's SMTP server has no processIncomingEmail: test mail cannot be shown");
  }
  const processIncomingEmail = incoming.processIncomingEmail.bind(smtpServer);
  return (mail) =>
    processIncomingEmail(Readable.from([Buffer.from(mail.raw)]), {
      envelope: {
        mailFrom: { address: mail.from, args: false },
        rcptTo: mail.recipients.map((address) => ({ address, args: false })),
      },
      hostNameAppearsAs: 'postdate-mailbox-simulator',
      remoteAddress: 'mailbox-simulator',
    });
}

/**
 * MailDev serves its page only to a request that says `Accept: text/html`, and answers anything
 * else at `/` with a JSON 404: `curl` of the URL the banner prints looked broken. The page is the
 * answer to `GET /` unless the request asks for JSON. Runs before MailDev's own listener.
 */
function pageUnlessJsonAsked(request: IncomingMessage): void {
  const path = request.url?.split('?')[0];
  const accept = request.headers.accept ?? '';
  if (request.method === 'GET' && path === '/' && !accept.includes('application/json'))
    request.headers.accept = 'text/html';
}
