/**
 * The mailbox simulator (DESIGN §14): the `Mailer` a test message is handed to instead of the relay.
 * It opens no connection. It answers each recipient of the envelope as an SMTP relay would, with the
 * same error shapes nodemailer gives, classified by the same function (core/classifySmtpError.ts),
 * so the sender's ordinary outcome decision decides what becomes of the message — retries,
 * suppressions, `on_ambiguous` and all.
 *
 * The local part at `simulator.postdate.test` picks the answer (a `+label` after it changes nothing):
 * - `delivered` (and any other recipient, at any domain): accepted, 250;
 * - `bounce`: refused at RCPT TO with 550 5.1.1 (the sender then suppresses the address, for the
 *   test side only: its list is the test side's own);
 * - `defer`: 451 4.3.0 at RCPT TO on the message's first attempt, accepted from the second on;
 * - `reject`: refused at RCPT TO with 550 5.7.1;
 * - `ambiguous`: the connection cut right after the final dot (the message's `on_ambiguous` decides);
 * - `slow`: accepted after a slow final reply (`slowReplyMs`, cut short to stay within `endsBy`).
 * Deterministic: the same envelope on the same attempt always gets the same answer. It never reads
 * the attachments: the sender asked the bucket for each before handing the message over, as for a
 * live one (decision 0171), so a file that is gone ends a test message as it ends a live one.
 *
 * Locally, the stack may show what the simulator took to a viewer (`showSimulatedMailIn`): DESIGN
 * §14's "visible in the mail viewer". In AWS nothing is registered and the simulator hands nothing on.
 */
import { parseAddress, preferredLocalPart } from '../core/addresses.js';
import { classifySmtpError } from '../core/classifySmtpError.js';
import { isSimulatorDomain } from '../core/testSide.js';
import type { Mailer, OutgoingEmail, RecipientRefusal, SendLimits, SendOutcome } from '../ports/Mailer.js';

/** The simulator's mailboxes, by local part. */
export const SIMULATED_MAILBOX = {
  delivered: 'delivered',
  bounce: 'bounce',
  defer: 'defer',
  reject: 'reject',
  ambiguous: 'ambiguous',
  slow: 'slow',
} as const;
export type SimulatedMailbox = (typeof SIMULATED_MAILBOX)[keyof typeof SIMULATED_MAILBOX];

/** The replies, as a relay words them. */
const REPLY = {
  accepted: '250 2.0.0 Ok: accepted by the Postdate mailbox simulator',
  bounce: '550 5.1.1 <bounce@simulator.postdate.test>: Recipient address rejected: User unknown',
  defer: '451 4.3.0 <defer@simulator.postdate.test>: Temporary failure, try again later',
  reject: '550 5.7.1 <reject@simulator.postdate.test>: Message rejected by policy',
} as const;

export interface MailboxSimulatorOptions {
  /** The message's attempts before this one: `defer` answers 451 only on the first. */
  readonly attemptsBefore: number;
  /** How long `slow` waits before its final reply; default 3 s (within every sender timeout). */
  readonly slowReplyMs?: number;
  /** The clock the slow reply is measured on; default the real one. */
  readonly now?: () => number;
}

export const DEFAULT_SLOW_REPLY_MS = 3_000;

/** Keeps this much of the attempt's time after a slow reply, for the outcome write. */
const SLOW_REPLY_RESERVE_MS = 1_000;

/**
 * Where a test message the simulator took is shown (the local stack's mail viewer): told once the
 * body went out — the message accepted for `recipients`, or cut after the dot — as a relay's sink
 * would have it. It must not throw, and whatever it does later never changes the outcome.
 */
export type SimulatedMailViewer = (email: OutgoingEmail, recipients: readonly string[]) => void;

/** Set only by the local stack, in the thread its sender runs in (local/smtp/simulatedMailViewer.ts). */
let viewer: SimulatedMailViewer | undefined;

/**
 * The local hook: every simulator of this thread shows the mail it takes in `next` from now on
 * (undefined: nowhere, as in AWS). No connection is opened here or by the simulator.
 */
export function showSimulatedMailIn(next: SimulatedMailViewer | undefined): void {
  viewer = next;
}

/**
 * The simulated mailbox a recipient names, or null for any other (which is accepted). A recipient is
 * read as the relay would get it in RCPT TO: its addr-spec (a display name dropped), the domain and
 * the local part in any case, a quoted local part as the atom it means (`"bounce"` is `bounce`), and
 * a `+label` after a mailbox as that mailbox (`bounce+1` is `bounce`, as in SES's simulator).
 */
export function simulatedMailbox(recipient: string): SimulatedMailbox | null {
  const parsed = parseAddress(recipient);
  if (!parsed.ok || !isSimulatorDomain(parsed.value.domain)) return null;
  // A `+label` names the same mailbox (SES's simulator reads `bounce+run-7@` as `bounce@`): each
  // label is an address of its own, so a suppressed `bounce+run-1@` leaves `bounce+run-2@` bouncing.
  const local = preferredLocalPart(parsed.value.local).toLowerCase().split('+', 1)[0] ?? '';
  return (Object.values(SIMULATED_MAILBOX) as string[]).includes(local) ? (local as SimulatedMailbox) : null;
}

export class MailboxSimulator implements Mailer {
  private readonly now: () => number;

  constructor(private readonly options: MailboxSimulatorOptions) {
    this.now = options.now ?? Date.now;
  }

  async send(email: OutgoingEmail, limits?: SendLimits): Promise<SendOutcome> {
    const started = this.now();
    const refusedErrors: { index: number; error: SmtpReplyError }[] = [];
    const accepted: SimulatedMailbox[] = [];
    const acceptedRecipients: string[] = [];
    email.envelope.forEach((recipient, index) => {
      const mailbox = simulatedMailbox(recipient);
      const reply = this.rcptReply(mailbox);
      if (reply === null) {
        accepted.push(mailbox ?? SIMULATED_MAILBOX.delivered);
        acceptedRecipients.push(recipient);
      } else refusedErrors.push({ index, error: smtpReplyError(reply, 'RCPT TO', recipient) });
    });
    const refused: RecipientRefusal[] = refusedErrors.map(({ index, error }) => {
      const classified = classifySmtpError(error);
      return {
        index,
        code: classified.code,
        enhancedCode: classified.enhancedCode,
        permanent: classified.class === 'permanent',
        hardBounce: classified.hardBounce,
        reply: error.response ?? null,
        failure: { class: classified.class, reason: classified.reason },
      };
    });
    const durationMs = () => Math.round(this.now() - started);

    if (accepted.length === 0) {
      // As nodemailer reports it: the transaction fails at RCPT TO with the last refusal's reply.
      const last = refusedErrors.at(-1)?.error;
      const error = Object.assign(new Error("Can't send mail - all recipients were rejected"), {
        code: 'EENVELOPE',
        command: 'RCPT TO',
        responseCode: last?.responseCode,
        response: last?.response,
      });
      return this.failed(error, { bodySent: false }, refused, durationMs());
    }
    // The body goes out to every accepted recipient (a relay's sink would hold it now).
    viewer?.(email, acceptedRecipients);
    if (accepted.includes(SIMULATED_MAILBOX.ambiguous)) {
      // The body and its final dot went out; the connection broke before the reply.
      const error = Object.assign(new Error('Connection closed unexpectedly'), {
        code: 'ECONNECTION',
        command: 'CONN',
      });
      return this.failed(error, { bodySent: true }, refused, durationMs());
    }
    if (accepted.includes(SIMULATED_MAILBOX.slow)) await this.slowReply(limits);
    return { delivered: true, reply: REPLY.accepted, refused, durationMs: durationMs() };
  }

  /** Nothing to close: the simulator holds no connection. */
  async close(): Promise<void> {}

  /** The reply at RCPT TO, or null when the recipient is accepted. */
  private rcptReply(mailbox: SimulatedMailbox | null): string | null {
    switch (mailbox) {
      case SIMULATED_MAILBOX.bounce:
        return REPLY.bounce;
      case SIMULATED_MAILBOX.reject:
        return REPLY.reject;
      case SIMULATED_MAILBOX.defer:
        return this.options.attemptsBefore === 0 ? REPLY.defer : null;
      default:
        return null;
    }
  }

  private async slowReply(limits: SendLimits | undefined): Promise<void> {
    const wanted = this.options.slowReplyMs ?? DEFAULT_SLOW_REPLY_MS;
    const room = limits === undefined ? wanted : limits.endsBy - this.now() - SLOW_REPLY_RESERVE_MS;
    const wait = Math.max(0, Math.min(wanted, room));
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }

  private failed(
    error: Error,
    context: { readonly bodySent: boolean },
    refused: readonly RecipientRefusal[],
    durationMs: number,
  ): SendOutcome {
    const failure = classifySmtpError(error, context);
    const response = (error as { response?: unknown }).response;
    return {
      delivered: false,
      failure,
      reply: typeof response === 'string' ? response : null,
      refused,
      durationMs,
    };
  }
}

interface SmtpReplyError extends Error {
  readonly code: string;
  readonly command: string;
  readonly responseCode: number;
  readonly response: string;
  readonly recipient: string;
}

/** A relay's reply as nodemailer's error for it. */
function smtpReplyError(reply: string, command: string, recipient: string): SmtpReplyError {
  return Object.assign(new Error(`Recipient command failed: ${reply}`), {
    code: 'EENVELOPE',
    command,
    responseCode: Number(reply.slice(0, 3)),
    response: reply,
    recipient,
  });
}
