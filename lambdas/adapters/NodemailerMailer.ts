import type { Readable } from 'node:stream';
import { domainToASCII } from 'node:url';
import nodemailer, { type SendMailOptions, type SMTPPoolSentMessageInfo, type Transporter } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import { classifySmtpError, reachedRelay } from '../core/classifySmtpError.js';
import { isReservedHeader } from '../core/headerSafety.js';
import { isRelayControlHeader } from '../core/relayControlHeaders.js';
import { MAX_REPLY_WAIT_MS, preDotBudgetMs, replyDeadline, type SendTiming } from '../core/sendTiming.js';
import type { Mailer, OutgoingEmail, RecipientRefusal, SendLimits, SendOutcome } from '../ports/Mailer.js';
import type { SmtpCredentialsSource } from '../ports/SmtpCredentialsSource.js';

/**
 * The SMTP relay through one nodemailer pooled transport per warm container (DESIGN §5), created
 * lazily on the first send with the credentials of the moment.
 *
 * nodemailer reports a connection that broke after the final dot exactly like one that broke before
 * MAIL FROM (ECONNECTION / ETIMEDOUT, command CONN, no reply). Only the sender can see the difference,
 * so this adapter watches the message stream nodemailer hands to the connection: the stream is read
 * only after the relay answered DATA with 354, and it ends when the whole body has been handed over,
 * right before nodemailer writes the final dot. A failure without a reply after that point is
 * `ambiguous` (the relay may have accepted the message); before it, `transient`.
 */

/**
 * Every SMTP timeout, set explicitly (nodemailer's socket default of 10 minutes outlives any Lambda).
 * The phase before the final dot and the wait for its reply have separate limits: a relay that
 * scans content may take minutes to answer the dot, and giving up there duplicates mail (the
 * attempt becomes ambiguous); RFC 5321 §4.5.3.2.6 gives that reply ten minutes.
 */
export interface SmtpTimeouts {
  readonly connectionMs: number;
  readonly greetingMs: number;
  readonly dnsMs: number;
  /**
   * The whole phase before the final dot, queueing for a pooled connection included: past it the
   * send is aborted (its connection closed), even against a relay that trickles its replies.
   */
  readonly preDotMs: number;
  /** The reply to the final dot is waited for at least this long (longer when `endsBy` allows). */
  readonly replyMs: number;
}

/** The defaults of DESIGN §8: POSTDATE_SMTP_TIMEOUT_SECONDS = 20, POSTDATE_SMTP_REPLY_TIMEOUT_SECONDS = 120. */
export const DEFAULT_SMTP_TIMEOUTS: SmtpTimeouts = smtpTimeoutsOf({
  smtpTimeoutSeconds: 20,
  smtpReplyTimeoutSeconds: 120,
});

/** The adapter's timeouts from the configured timing (lambdas/core/sendTiming.ts). */
export function smtpTimeoutsOf(
  timing: Pick<SendTiming, 'smtpTimeoutSeconds' | 'smtpReplyTimeoutSeconds'>,
): SmtpTimeouts {
  const stepMs = timing.smtpTimeoutSeconds * 1000;
  return {
    connectionMs: stepMs,
    greetingMs: stepMs,
    dnsMs: Math.min(5000, stepMs),
    preDotMs: preDotBudgetMs(timing),
    replyMs: timing.smtpReplyTimeoutSeconds * 1000,
  };
}

export interface NodemailerMailerOptions {
  readonly host: string;
  readonly port: number;
  /** TLS from the first byte (port 465). */
  readonly secure: boolean;
  /** Insist on STARTTLS when not `secure` (SMTP_REQUIRE_TLS). */
  readonly requireTls: boolean;
  /** The right side of `Message-ID: <{id}@{domain}>` (POSTDATE_MESSAGE_ID_DOMAIN). */
  readonly messageIdDomain: string;
  readonly credentials: SmtpCredentialsSource;
  /** Pooled connections; keep it at least the sender's per-batch concurrency. Default 4. */
  readonly maxConnections?: number;
  readonly timeouts?: Partial<SmtpTimeouts>;
  /** Monotonic milliseconds, for durations. */
  readonly now?: () => number;
}

/** Where the adapter finds its per-attempt tracker inside nodemailer's copy of the mail data. */
const ATTEMPT_FIELD = 'postdateAttempt';

interface AttemptTracker {
  bodySent: boolean;
  /** One of the attempt's own limits ended it (not the relay, not the network). */
  timedOut: boolean;
  /** Called once the whole body is handed over, right before the final dot. */
  readonly onBodySent: () => void;
}

type PoolTransporter = Transporter<SMTPPoolSentMessageInfo>;

export class NodemailerMailer implements Mailer {
  private transporter: Promise<PoolTransporter> | undefined;
  private readonly trackers = new Map<string, AttemptTracker>();
  private attemptCounter = 0;
  private readonly timeouts: SmtpTimeouts;
  private readonly now: () => number;

  constructor(private readonly options: NodemailerMailerOptions) {
    this.timeouts = { ...DEFAULT_SMTP_TIMEOUTS, ...options.timeouts };
    this.now = options.now ?? (() => performance.now());
  }

  async send(email: OutgoingEmail, limits?: SendLimits): Promise<SendOutcome> {
    const started = this.now();
    const attempt = `a${++this.attemptCounter}`;
    const abort = new AbortController();
    const endsBy = limits?.endsBy ?? Date.now() + this.timeouts.preDotMs + this.timeouts.replyMs;
    // Before the dot: the whole phase has its own limit. After it: wait as long as the invocation allows.
    const timeOut = () => {
      tracker.timedOut = true;
      abort.abort();
    };
    let timer = setTimeout(timeOut, this.timeouts.preDotMs);
    const tracker: AttemptTracker = {
      bodySent: false,
      timedOut: false,
      onBodySent: () => {
        clearTimeout(timer);
        const dotSentAt = Date.now();
        timer = setTimeout(timeOut, replyDeadline(dotSentAt, endsBy, this.timeouts.replyMs) - dotSentAt);
      },
    };
    this.trackers.set(attempt, tracker);
    let transport: PoolTransporter;
    const pending = this.transport();
    try {
      // Reading the login counts inside the phase before the dot: a hanging read ends the attempt.
      transport = await untilAborted(pending, abort.signal);
    } catch (error) {
      // The login could not be read (or not in time): nothing reached the relay.
      clearTimeout(timer);
      this.trackers.delete(attempt);
      if (tracker.timedOut) {
        this.forget(pending);
        return this.failed(attemptTimeout(error), { bodySent: false, reachedRelay: false }, [], started);
      }
      return this.failed(error, { bodySent: false, reachedRelay: false }, [], started);
    }
    const envelope = envelopeOf(email.envelope);
    try {
      const info = await transport.sendMail(this.mailOptions(email, envelope, attempt, abort.signal));
      return {
        delivered: true,
        reply: typeof info.response === 'string' ? info.response : null,
        refused: refusalsOf(info.rejectedErrors, envelope),
        durationMs: Math.round(this.now() - started),
      };
    } catch (thrown) {
      const context = { bodySent: tracker.bodySent };
      // Our own limit aborted it: a timeout, whatever nodemailer calls the abort.
      const error = tracker.timedOut ? attemptTimeout(thrown) : thrown;
      return this.failed(
        error,
        { ...context, reachedRelay: reachedRelay(error, context) },
        refusalsOf(rejectedErrorsOf(error), envelope),
        started,
      );
    } finally {
      clearTimeout(timer);
      this.trackers.delete(attempt);
    }
  }

  private failed(
    error: unknown,
    context: { readonly bodySent: boolean; readonly reachedRelay: boolean },
    refused: readonly RecipientRefusal[],
    started: number,
  ): SendOutcome {
    const failure = classifySmtpError(error, { bodySent: context.bodySent });
    // Only a refused login or a broken TLS setup says the pooled sessions themselves are wrong; a
    // refusal of one sender (5.7.x at MAIL FROM) must not close the pool for every tenant.
    if (failure.class === 'config' && !context.reachedRelay) this.reset();
    return {
      delivered: false,
      failure,
      reply: replyText(error),
      reachedRelay: context.reachedRelay,
      refused,
      durationMs: Math.round(this.now() - started),
    };
  }

  async close(): Promise<void> {
    const pending = this.transporter;
    this.transporter = undefined;
    if (pending === undefined) return;
    try {
      (await pending).close();
    } catch {
      // A transport that never came up has nothing to close.
    }
  }

  /** Drops the transport and the cached login after a config-class failure (e.g. a rotated secret). */
  private reset(): void {
    this.options.credentials.invalidate();
    void this.close();
  }

  /**
   * Drops a transport still being set up past an attempt's limit (a hanging secret read), with the
   * cached login, so the next attempt reads again; closes it should it come up after all.
   */
  private forget(pending: Promise<PoolTransporter>): void {
    if (this.transporter !== pending) return;
    this.transporter = undefined;
    this.options.credentials.invalidate();
    pending.then(
      (late) => late.close(),
      () => {},
    );
  }

  private transport(): Promise<PoolTransporter> {
    if (this.transporter === undefined) {
      const created = this.createTransport();
      this.transporter = created;
      created.catch(() => {
        if (this.transporter === created) this.transporter = undefined;
      });
    }
    return this.transporter;
  }

  private async createTransport(): Promise<PoolTransporter> {
    const credentials = await this.options.credentials.get();
    const transporter = nodemailer.createTransport({
      pool: true,
      maxConnections: this.options.maxConnections ?? 4,
      maxMessages: 100,
      host: this.options.host,
      port: this.options.port,
      secure: this.options.secure,
      requireTLS: !this.options.secure && this.options.requireTls,
      auth: credentials ? { user: credentials.username, pass: credentials.password } : undefined,
      connectionTimeout: this.timeouts.connectionMs,
      greetingTimeout: this.timeouts.greetingMs,
      // Inactivity never ends an attempt first: the attempt's own limits above do (before the dot,
      // and the reply to it), and the reply to the final dot may take minutes.
      socketTimeout: MAX_REPLY_WAIT_MS,
      dnsTimeout: this.timeouts.dnsMs,
      // Nothing a caller wrote may make nodemailer read a file or fetch a URL.
      disableFileAccess: true,
      disableUrlAccess: true,
      logger: false,
      debug: false,
    });
    transporter.use('stream', (mail, done) => {
      const key = (mail.data as Record<string, unknown>)[ATTEMPT_FIELD];
      const tracker = typeof key === 'string' ? this.trackers.get(key) : undefined;
      if (tracker !== undefined) {
        mail.message.processFunc((input: Readable) => {
          // 'end' fires once the connection has read the whole body, i.e. after 354 and right
          // before the final dot: from here on a missing reply is ambiguous.
          input.once('end', () => {
            tracker.bodySent = true;
            tracker.onBodySent();
          });
          return input;
        });
      }
      done();
    });
    return transporter;
  }

  private mailOptions(
    email: OutgoingEmail,
    envelope: readonly EnvelopeRecipient[],
    attempt: string,
    signal: AbortSignal,
  ): SendMailOptions {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(email.headers)) {
      // Set by the sender itself: a caller's header of the same name is dropped, never merged.
      if (isReservedHeader(name.trim())) continue;
      // Refused at enqueue; dropped here too, for what the outbox helper or an older enqueue stored.
      if (isRelayControlHeader(name.trim())) continue;
      headers[name] = String(value).replace(/[\r\n]+/g, ' ');
    }
    headers['X-Postdate-Id'] = email.id;
    const options: SendMailOptions = {
      messageId: `<${email.id}@${this.options.messageIdDomain}>`,
      from: email.from,
      to: [...email.to],
      cc: email.cc.length > 0 ? [...email.cc] : undefined,
      bcc: email.bcc.length > 0 ? [...email.bcc] : undefined,
      replyTo: email.replyTo ?? undefined,
      // Only the pending recipients in RCPT TO; the headers show everyone, as on the first attempt.
      envelope: {
        from: addressparser(email.from, { flatten: true })[0]?.address ?? email.from,
        to: envelope.map((recipient) => recipient.address),
      },
      subject: email.subject,
      // Strings only: never a path, href or stream a caller could point somewhere.
      text: email.text ?? undefined,
      html: email.html ?? undefined,
      headers,
      signal,
      disableFileAccess: true,
      disableUrlAccess: true,
    };
    return Object.assign(options, { [ATTEMPT_FIELD]: attempt });
  }
}

/** One envelope recipient: the bare address nodemailer puts in RCPT TO, and the key it reports back. */
interface EnvelopeRecipient {
  readonly address: string;
  readonly key: string;
}

function envelopeOf(recipients: readonly string[]): EnvelopeRecipient[] {
  return recipients.map((recipient) => {
    const address = addressparser(recipient, { flatten: true })[0]?.address ?? recipient;
    return { address, key: addressKey(address) };
  });
}

/** Compares addresses as nodemailer reports them (it may punycode the domain). */
function addressKey(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return address.toLowerCase();
  const domain = address.slice(at + 1);
  return `${address.slice(0, at)}@${(domainToASCII(domain) || domain).toLowerCase()}`;
}

/** The promise's outcome, or a rejection as soon as the signal aborts (the promise itself runs on). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The error an attempt ended by its own limit is classified as: a timeout on the connection. */
function attemptTimeout(cause: unknown): Error {
  return Object.assign(new Error('the SMTP attempt timed out', { cause }), {
    code: 'ETIMEDOUT',
    command: 'CONN',
  });
}

function rejectedErrorsOf(error: unknown): unknown[] | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const list = (error as { rejectedErrors?: unknown }).rejectedErrors;
  return Array.isArray(list) ? list : undefined;
}

/** nodemailer's per-recipient RCPT TO errors as refusals by envelope position. */
function refusalsOf(
  errors: readonly unknown[] | undefined,
  envelope: readonly EnvelopeRecipient[],
): RecipientRefusal[] {
  const refusals: RecipientRefusal[] = [];
  for (const error of errors ?? []) {
    const recipient = (error as { recipient?: unknown }).recipient;
    if (typeof recipient !== 'string') continue;
    const key = addressKey(recipient);
    const index = envelope.findIndex((candidate) => candidate.key === key);
    if (index < 0 || refusals.some((refusal) => refusal.index === index)) continue;
    const classified = classifySmtpError(error);
    refusals.push({
      index,
      code: classified.code,
      enhancedCode: classified.enhancedCode,
      permanent: classified.class === 'permanent',
    });
  }
  return refusals;
}

function replyText(error: unknown): string | null {
  if (typeof error !== 'object' || error === null) return null;
  const response = (error as { response?: unknown }).response;
  return typeof response === 'string' && response !== '' ? response : null;
}
