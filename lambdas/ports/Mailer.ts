import type { SmtpErrorClassification } from '../core/classifySmtpError.js';

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
}

/** A recipient the relay refused while it accepted the message for others (partial rejection). */
export interface RejectedRecipient {
  readonly address: string;
  readonly code: string | null;
  readonly enhancedCode: string | null;
}

/** What became of one attempt. The relay's reply text is raw here; callers redact it before storing. */
export type SendOutcome =
  | {
      readonly delivered: true;
      /** The final reply (250 …) after DATA. */
      readonly reply: string | null;
      readonly accepted: readonly string[];
      readonly rejected: readonly RejectedRecipient[];
      readonly durationMs: number;
    }
  | {
      readonly delivered: false;
      readonly failure: SmtpErrorClassification;
      /** The relay's reply text when there was one. */
      readonly reply: string | null;
      readonly durationMs: number;
    };

/** The SMTP relay. `send` never throws: every failure comes back classified. */
export interface Mailer {
  send(email: OutgoingEmail): Promise<SendOutcome>;
  /** Closes pooled connections (tests, local stack shutdown). */
  close(): Promise<void>;
}
