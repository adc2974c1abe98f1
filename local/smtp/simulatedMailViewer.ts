/**
 * Test messages in the local mail viewer (DESIGN §14: they "are visible in the API and the mail
 * viewer"), without the relay. A test message never reaches SMTP: the sender hands it to the
 * mailbox simulator (lambdas/adapters/MailboxSimulator.ts), which opens no connection. Locally, this
 * file is a preload of the function sandboxes: in a sender sandbox it registers the simulator's
 * local hook, which composes the message exactly as the relay would receive it (the mailer's own
 * composer, `composeMessage`), marks it `X-Postdate-Test: true`, and posts the bytes on a
 * BroadcastChannel — an in-process message between threads, not a socket. The viewer that `npm
 * start` runs (MailDev, maildevViewer.ts) listens on that channel in the stack's main thread and
 * stores the message as if its SMTP server had received it.
 *
 * The channel is named after the relay the functions send live mail to (SMTP_HOST:SMTP_PORT, the
 * first of POSTDATE_RELAYS): test mail goes to the viewer live mail goes to, and two stacks in one
 * process never see each other's. In AWS nothing preloads this file and nothing is registered.
 */
import { Buffer } from 'node:buffer';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel, isMainThread, workerData } from 'node:worker_threads';
import { showSimulatedMailIn } from '../../lambdas/adapters/MailboxSimulator.js';
import { composeMessage } from '../../lambdas/adapters/NodemailerMailer.js';
import { configTargetOf, loadConfig } from '../../lambdas/core/config.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';

/** The mark on every test message the viewer shows: it never went to a relay. */
export const TEST_MAIL_HEADER = 'X-Postdate-Test';

/** This file, as a function sandbox's preload (`LocalStackOptions.functionPreload`). */
export const SIMULATED_MAIL_PRELOAD = fileURLToPath(import.meta.url);

/** One test message as the simulator took it: the envelope and the composed bytes. */
export interface SimulatedMail {
  readonly from: string;
  readonly recipients: readonly string[];
  readonly raw: Uint8Array;
}

/** The channel of the viewer behind the relay at `host:port`. */
function channelName(host: string, port: number): string {
  return `postdate-simulated-mail:${host}:${port}`;
}

/**
 * Listens, in the stack's thread, for the test messages of the sandboxes whose relay is
 * `host:port`, and hands each to `store`. A failure to store is one line on stderr, never thrown:
 * the viewer is a convenience, the message's outcome was decided without it.
 */
export function receiveSimulatedMail(
  relay: { readonly host: string; readonly port: number },
  store: (mail: SimulatedMail) => Promise<unknown>,
): { close(): void } {
  const channel = new BroadcastChannel(channelName(relay.host, relay.port));
  channel.unref();
  channel.onmessage = (event) => {
    const mail = (event as { readonly data: SimulatedMail }).data;
    store(mail).catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      process.stderr.write(`mail viewer: a test message could not be shown: ${reason}\n`);
    });
  };
  return { close: () => channel.close() };
}

/** The address of a mailbox (`Ada <ada@example.com>` → `ada@example.com`), as MAIL FROM carries it. */
function addressOf(mailbox: string): string {
  return /<([^>]*)>\s*$/.exec(mailbox)?.[1] ?? mailbox.trim();
}

/** The message with the test mark, set after (and over) any header of that name the caller gave. */
function markedAsTest(email: OutgoingEmail): OutgoingEmail {
  const headers = Object.fromEntries(
    Object.entries(email.headers).filter(([name]) => name.toLowerCase() !== TEST_MAIL_HEADER.toLowerCase()),
  );
  return { ...email, headers: { ...headers, [TEST_MAIL_HEADER]: 'true' } };
}

/**
 * Registers the simulator's local hook in this sandbox (its environment is the functions'): each
 * message it takes is composed and posted to the viewer of the functions' relay. Composing reads
 * the attachments from the store as the relay would; it runs after the simulator answered, and a
 * failure is a warning in the log.
 */
function showSimulatedMailFromThisSandbox(): void {
  const config = loadConfig(process.env, configTargetOf(process.env));
  const relay = config.relays[0];
  if (relay === undefined) return;
  // Where the sender sends live mail (lambdas/sender/senderDependencies.ts, the same defaults).
  const host = relay.host ?? 'localhost';
  const port = relay.port ?? (relay.secure ? 465 : 587);
  const channel = new BroadcastChannel(channelName(host, port));
  channel.unref();
  showSimulatedMailIn((email, recipients) => {
    const chunks: Buffer[] = [];
    composeMessage(markedAsTest(email), config.messageIdDomain)
      .on('data', (chunk: Buffer) => chunks.push(chunk))
      .on('end', () => {
        const mail: SimulatedMail = {
          from: addressOf(email.from),
          recipients: recipients.map(addressOf),
          raw: Buffer.concat(chunks),
        };
        channel.postMessage(mail);
      })
      .on('error', (error) => {
        process.stderr.write(
          `sender: a test message could not be composed for the mail viewer: ${error.message}\n`,
        );
      });
  });
}

/**
 * A function sandbox (its `workerData`, local/runners/functionSandbox.ts). A sandbox runs this file
 * only as a preload: its bundle holds the preloads and the handler, and no handler imports local/.
 */
function preloadedInSandbox(): boolean {
  const preload = (workerData as { preload?: unknown } | null)?.preload;
  return !isMainThread && Array.isArray(preload);
}

if (preloadedInSandbox()) showSimulatedMailFromThisSandbox();
