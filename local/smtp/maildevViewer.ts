/**
 * MailDev (npm `maildev`, MIT) as the mail viewer of `npm start` (DESIGN §7, issue 17 §4): an SMTP
 * server that keeps what it receives and a web page that shows it as a developer expects — the
 * rendered HTML, the text, the headers, search, delete, attachments — with a REST API beside it.
 *
 * Postdate's sender is not changed for it: `npm start` points `SMTP_HOST`/`SMTP_PORT` at MailDev's
 * SMTP port as it would at any relay. The small in-process sink (smtpSink.ts, mailViewer.ts) stays
 * what the tests use: it starts in milliseconds and its messages can be read from code.
 */
import { PortInUseError } from '../localEnv.js';

export interface MaildevViewerOptions {
  /** MailDev's SMTP port; 0 picks a free one. */
  readonly smtpPort: number;
  /** The web page's (and REST API's) port; 0 picks a free one. */
  readonly webPort: number;
  readonly host: string;
  /** Keep the mail on disk (one `.eml` per message) instead of in memory. */
  readonly mailDirectory?: string;
}

export interface MaildevViewer {
  readonly smtpHost: string;
  readonly smtpPort: number;
  /** The page a person opens (the REST API lives under it: `GET {url}/email`). */
  readonly url: string;
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
  const maildev = new module.MailDev({
    smtp: options.smtpPort,
    ip: options.host,
    web: options.webPort,
    webIp: options.host,
    hideExtensions: ['STARTTLS'],
    silent: true,
    verbose: false,
    ...(options.mailDirectory ? { mailDirectory: options.mailDirectory } : {}),
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
  if (!web) {
    await maildev.stop();
    throw new Error('MailDev started without its web page');
  }
  return {
    smtpHost: options.host,
    smtpPort: smtp.port,
    url: `http://${options.host}:${web.port}`,
    stop: () => maildev.stop(),
  };
}
