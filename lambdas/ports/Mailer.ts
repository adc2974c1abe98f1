import type { SmtpErrorClassification, ThrottleKind } from '../core/classifySmtpError.js';

/** One email as the sender hands it to the relay. Every field comes from the message's body item. */
export interface OutgoingEmail {
  /** The Postdate message id: `Message-ID: <{id}@{domain}>` and `X-Postdate-Id: {id}` on every attempt. */
  readonly id: string;
  readonly from: string;
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly replyTo: string | null;
  readonly subject: string;
  readonly text: string | null;
  readonly html: string | null;
  /** The caller's extra headers, passed as headers and nothing else. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The recipients of this attempt's envelope (RCPT TO), as stored in to/cc/bcc: those still
   * pending (DESIGN §5, "Recipients one by one"). The headers always show every recipient.
   */
  readonly envelope: readonly string[];
  /** Files to attach (DESIGN §13); absent or empty: none. */
  readonly attachments?: readonly OutgoingAttachment[];
}

/**
 * One attached file. Its bytes are opened only when the relay takes the body (after 354) and read as
 * they are sent, so a large file is never held whole; an attempt that never reaches DATA opens nothing.
 */
export interface OutgoingAttachment {
  /** Sent RFC 2231-encoded when it is not plain ASCII. */
  readonly filename: string;
  readonly contentType: string;
  /** The bytes in chunks (a Node.js stream is one), read as the relay takes them. */
  open(): Promise<AsyncIterable<Uint8Array>>;
}

/** The time one attempt may take. */
export interface SendLimits {
  /**
   * Epoch milliseconds by which the outcome must be known (the invocation's deadline less the
   * outcome write): the reply to the final dot is waited for until then, never longer. The caller
   * starts a send only when it leaves the phase before the dot and the whole reply timeout.
   */
  readonly endsBy: number;
}

/** A recipient refused at RCPT TO, by its position in the attempt's `envelope`. */
export interface RecipientRefusal {
  readonly index: number;
  readonly code: string | null;
  readonly enhancedCode: string | null;
  /** Rejected for good (class `permanent`); else deferred, still pending (4xx, or our sender refused). */
  readonly permanent: boolean;
  /** The address is bad for good and joins the suppression list (the classification's `hardBounce`). */
  readonly hardBounce: boolean;
  /** The relay throttled us at this RCPT TO (the classification's `throttle`): the fleet's pressure. */
  readonly throttle?: ThrottleKind | undefined;
  /** The relay's reply to this RCPT TO, raw (it may name the address: callers redact it). */
  readonly reply: string | null;
  /**
   * The classification's class and plain-words reason: a recipient still pending after an attempt
   * the relay took for the others is why the message is not sent, its `last_error`.
   */
  readonly failure: Pick<SmtpErrorClassification, 'class' | 'reason'>;
}

/** What became of one attempt. The relay's reply text is raw here; callers redact it before storing. */
export type SendOutcome =
  | {
      readonly delivered: true;
      /** The final reply (250 …) after DATA. */
      readonly reply: string | null;
      /** Recipients refused at RCPT TO while the others were accepted. */
      readonly refused: readonly RecipientRefusal[];
      readonly durationMs: number;
    }
  | {
      readonly delivered: false;
      readonly failure: SmtpErrorClassification;
      /** The relay's reply text when there was one. */
      readonly reply: string | null;
      /** Recipients refused one by one when every one was refused at RCPT TO. */
      readonly refused: readonly RecipientRefusal[];
      readonly durationMs: number;
    };

/** The SMTP relay. `send` never throws: every failure comes back classified. */
export interface Mailer {
  send(email: OutgoingEmail, limits?: SendLimits): Promise<SendOutcome>;
  /** Closes pooled connections (tests, local stack shutdown). */
  close(): Promise<void>;
}
