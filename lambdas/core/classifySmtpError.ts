/**
 * Classification of an SMTP failure (DESIGN §5) from the shape of nodemailer's errors:
 * `code` (ECONNECTION, EAUTH, …), `responseCode` (the reply's number), `command` (the SMTP command
 * in flight: 'CONN', 'AUTH PLAIN', 'MAIL FROM', 'RCPT TO', 'DATA', …) and `response` (the reply
 * text, often with an RFC 3463 enhanced status code such as "550 5.1.1 User unknown").
 *
 * Pure and total: any value at all gives a classification, nothing throws. docs/smtp-classification.md
 * is the operator's table of these rules and is checked against this function by a test.
 *
 * One thing nodemailer's error cannot tell: whether the connection broke *after* the body and its
 * final dot were written. nodemailer 10 reports that case exactly like a break before DATA
 * (`code` ECONNECTION or ETIMEDOUT, `command` 'CONN', no reply), so the caller, which sees the body
 * being handed over, says so with `context.bodySent`; only then is such a failure `ambiguous`.
 */
import { ERROR_CLASS, type ErrorClass } from './postdateError.js';

/**
 * Where a failure happened, which decides whose it is (DESIGN §5; lambdas/core/sendDecision.ts
 * decides what each makes of the message):
 * - `outage`: before MAIL FROM, at the relay — connection refused or timed out, DNS, a reply at the
 *   greeting or EHLO (421 included), TLS, the login, the relay login unreadable. The relay's, not
 *   the message's: no attempt, and the breaker opens for every sender.
 * - `local`: before MAIL FROM, on our own side: refused by our own SMTP client before anything was
 *   sent (nodemailer's envelope checks, command `API`), or an attachment our own store could not
 *   give when the sender asked for it ({@link classifyAttachmentRead}): no attempt, and nothing for
 *   the breaker.
 * - `throttle`: the relay says it is throttling the sender (SES's `454 Throttling failure: …`), at
 *   any step: the fleet's pressure, no attempt, never dead.
 * - `transaction`: a reply to this message's own commands (MAIL, RCPT, DATA, the final dot), 421
 *   included, whatever command nodemailer files it under; a break once MAIL FROM may have been sent;
 *   the message's own stream failing after 354 (an attachment that cannot be read): this message's
 *   outcome, one attempt.
 */
export const FAILURE_ORIGIN = {
  outage: 'outage',
  local: 'local',
  throttle: 'throttle',
  transaction: 'transaction',
} as const;
export type FailureOrigin = (typeof FAILURE_ORIGIN)[keyof typeof FAILURE_ORIGIN];

export interface SmtpErrorClassification {
  readonly class: ErrorClass;
  /** Where it happened, and so whose failure it is. */
  readonly origin: FailureOrigin;
  /** The SMTP reply code ("451") when there was a reply, else nodemailer's code ("ECONNECTION"), else null. */
  readonly code: string | null;
  /** RFC 3463 enhanced status code from the reply text ("5.1.1"), if any. */
  readonly enhancedCode: string | null;
  /** Why, in words an operator understands. Never contains the reply text or an address. */
  readonly reason: string;
  /**
   * The reply says the recipient's address is bad for good (DESIGN §12): a permanent refusal with an
   * RFC 3463 subject-1 code (addressing), which as a refusal of a recipient puts the address on the
   * tenant's suppression list. Never our sender's address ({@link SENDER_ADDRESS_CODES}: `config`).
   */
  readonly hardBounce: boolean;
  /** The `throttle` origin only: which limit the relay says we hit ({@link ThrottleKind}). */
  readonly throttle?: ThrottleKind;
}

/**
 * What a throttling reply says we ran into: `rate`, the relay's sending rate (it passes in a second);
 * `quota`, its daily quota (SES: a rolling 24 hours; it comes back only as the day's sends age out,
 * so the fleet holds for minutes, not seconds: core/relayBreaker.ts `throttled`).
 */
export type ThrottleKind = 'rate' | 'quota';

export interface SmtpFailureContext {
  /**
   * True once the whole message body, final dot included, was handed to the connection. A break
   * without a reply after that point is ambiguous: the relay may have accepted the message.
   */
  readonly bodySent?: boolean;
  /**
   * True when the failure came while the session was being set up (the login read, connect,
   * greeting, EHLO, STARTTLS, AUTH): before MAIL FROM whatever the error looks like — nodemailer
   * reports a setup that ran out of time like any other timeout.
   */
  readonly beforeTransaction?: boolean;
  /**
   * True once the message was handed to a ready session: MAIL FROM is on its way. From then on a
   * reply is to this message's own commands whatever command nodemailer files it under (with
   * PIPELINING a 421 at RCPT TO ends the session and comes back under `CONN`, like a 421 greeting),
   * and a failure of the message's stream (`ESTREAM` at `API`: an attachment that cannot be read)
   * comes after the relay's 354, since the stream is read only then: both are this message's outcome.
   */
  readonly transactionStarted?: boolean;
}

/** nodemailer codes that mean our own configuration (credentials, TLS, settings) is wrong. */
const CONFIG_CODES: ReadonlySet<string> = new Set([
  'EAUTH',
  'ENOAUTH',
  'EOAUTH2',
  'ETLS',
  'EREQUIRETLS',
  'ECONFIG',
  'EPROXY',
  'ERR_ACCESS_DENIED',
]);

/** nodemailer codes, without a reply, that mean this message can never be sent as it is. */
const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'EENVELOPE',
  'EMESSAGE',
  'EMAXRECIPIENTS',
  'EFILEACCESS',
  'EURLACCESS',
]);

/** Connection-level codes (nodemailer's and Node's) that are transient before the body is sent. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'EPROTOCOL',
  'EABORT',
  'EMAXLIMIT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Node's TLS verification codes (`tls.TLSSocket` `verifyError()`, `checkServerIdentity`) that say the
 * relay's certificate is not trusted: self-signed, from an unknown issuer, expired, for another name.
 * nodemailer reports them as `ESOCKET` at `CONN` and keeps Node's code in `originalCode` (10.x) or
 * in the `cause`; they are our setup to fix (the relay's certificate or our trust store), never a
 * network blip, so they are config.
 */
export const TLS_CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Relays' throttling replies, read here, at the edge, into the `throttle` origin; matched
 * case-insensitively, only on a 4xx reply. Nothing downstream reads reply text.
 * - Amazon SES: its SMTP interface documents `454 Throttling failure: Maximum sending rate exceeded`
 *   and `454 Throttling failure: Daily message quota exceeded`, and may answer MAIL FROM with 421 or
 *   454 and the same words. No enhanced code tells them apart from any other 4xx.
 * - Microsoft 365: three SMTP AUTH connections per mailbox; more are refused with `432 4.3.2
 *   STOREDRV.ClientSubmit; sender thread limit exceeded` or `432 4.3.2 concurrent connection limit
 *   exceeded` (decision 0203). 4.3.2 alone is not enough: `STOREDRV.Deliver; recipient thread limit
 *   exceeded` is a recipient's mailbox.
 */
export const THROTTLE_PHRASES: readonly string[] = [
  'throttling failure',
  'maximum sending rate exceeded',
  'daily message quota exceeded',
  'sender thread limit exceeded',
  'concurrent connection limit exceeded',
  'concurrent connections limit exceeded',
];

/** Of THROTTLE_PHRASES, the words that name the daily quota rather than the rate. */
export const SES_QUOTA_PHRASES: readonly string[] = ['daily message quota exceeded'];

/**
 * Other relays' documented daily-quota replies (docs/smtp-classification.md, decisions 0198, 0203): a
 * 5xx that refuses the sender for the day, not the message, so a `throttle` of kind `quota` like SES's.
 * Matched narrowly: a reply code of the entry's, its enhanced code and its words (case-insensitive)
 * together. Microsoft documents the enhanced codes and words, not the reply code: 550 or 554.
 */
export const QUOTA_REPLIES: readonly {
  readonly codes: readonly number[];
  readonly enhanced: string;
  readonly words: string;
}[] = [
  // Google Workspace / Gmail (smtp.gmail.com).
  { codes: [550], enhanced: '5.4.5', words: 'daily user sending limit exceeded' },
  { codes: [550], enhanced: '5.4.5', words: 'daily sending quota exceeded' },
  // Google Workspace SMTP relay (smtp-relay.gmail.com), per user or for the whole customer.
  { codes: [550], enhanced: '5.4.5', words: 'daily smtp relay limit exceeded' },
  // Microsoft 365 (smtp.office365.com): the mailbox's recipient or message limit, the tenant's
  // external recipients (a trial tenant: 5.7.232).
  { codes: [554], enhanced: '5.2.0', words: 'submissionquotaexceededexception' },
  { codes: [550, 554], enhanced: '5.1.90', words: 'daily limit for message recipients' },
  { codes: [550, 554], enhanced: '5.2.2', words: 'submission quota exceeded' },
  { codes: [550, 554], enhanced: '5.7.232', words: 'daily limit for sending email to external recipients' },
  { codes: [550, 554], enhanced: '5.7.233', words: 'daily limit for sending email to external recipients' },
];

/**
 * The one place a reply's words decide (docs/smtp-classification.md, "Amazon SES"): SES answers a
 * sender it will not send for (identity not verified, IAM user not allowed, account paused) with a
 * bare `554` and no enhanced code, the same reply as a refused message. Matched case-insensitively,
 * only on a 554 without an enhanced code.
 */
export const SES_CONFIG_PHRASES: readonly string[] = [
  'email address is not verified',
  'not authorized to send',
  'is not authorized to perform',
  'sending paused for this account',
];

/** Codes the credentials source (lambdas/adapters/smtpCredentials.ts) gives a failed secret read. */
const CREDENTIALS_READ_CODE = 'ESECRETREAD';

/**
 * RFC 3463 X.1.7 (bad sender's mailbox address syntax) and X.1.8 (bad sender's system address): the
 * relay refuses *our sender*, not a recipient. Config wherever they come: Postfix checks the sender at
 * RCPT TO by default (`smtpd_delay_reject`), so "553 5.1.8 Sender address rejected" answers every
 * recipient in turn; each is still pending, none is suppressed, and the message is never `failed` for it.
 */
export const SENDER_ADDRESS_CODES: ReadonlySet<string> = new Set(['5.1.7', '5.1.8']);

/**
 * Postfix's words for a refusal of our sender, whatever the code it carries: every sender check
 * answers "<sender>: Sender address rejected: …" — reject_unlisted_sender with `550 5.1.0` (X.1.0,
 * other address status: the recipient's check says 5.1.1), reject_sender_login_mismatch with
 * `553 5.7.1` — and with `smtpd_delay_reject` at each RCPT TO. Read as {@link SENDER_ADDRESS_CODES}
 * are: `config`, never a recipient's hard bounce (decision 0256). Matched case-insensitively.
 */
export const SENDER_REFUSAL_PHRASE = 'sender address rejected';

/**
 * Whether the relay's own words say {@link SENDER_REFUSAL_PHRASE}: an address it echoes is left out
 * first — a quoted string (a quoted local part may hold any words, RFC 5321 §4.1.2) and then an
 * `<…>` path — so a recipient `"sender address rejected"@example.com` refused for its own address
 * stays its own hard bounce (decision 0267). Postfix puts the phrase after the path, outside it.
 */
function saysSenderRefused(response: string): boolean {
  const text = response.replace(/"(?:[^"\\]|\\.)*"/g, '').replace(/<[^>]*>/g, '');
  return text.toLowerCase().includes(SENDER_REFUSAL_PHRASE);
}

/** An RFC 3463 code of class 5, subject 1 (addressing): 5.1.1 bad mailbox, 5.1.2 bad system, … */
const ADDRESSING_CODE = /^5\.1\.\d{1,3}$/;

/** Reply codes that say authentication or encryption is missing or wrong (RFC 4954, 3207). */
const CONFIG_REPLY_CODES: ReadonlySet<number> = new Set([530, 534, 535, 538]);
/** Enhanced codes that say the same (RFC 4954 §6, RFC 3463 X.7.x). */
const CONFIG_ENHANCED_CODES: ReadonlySet<string> = new Set(['5.7.0', '5.7.8', '5.7.9', '5.7.11', '5.7.14']);

/** nodemailer's code for a failure of the message stream it was reading (an attachment's source). */
const STREAM_CODE = 'ESTREAM';

/** Setup-phase timeouts nodemailer marks with `timeoutType`: always before any body. */
const SETUP_TIMEOUTS: ReadonlySet<string> = new Set([
  'CONNECT_TIMEOUT',
  'GREETING_TIMEOUT',
  'UPGRADE_TIMEOUT',
]);

const MAX_TEXT = 2000;
const MAX_CAUSE_DEPTH = 3;

interface ErrorShape {
  readonly code: string | null;
  readonly responseCode: number | null;
  readonly command: string | null;
  readonly response: string | null;
  readonly timeoutType: string | null;
  /** Node's TLS certificate code, from nodemailer's `originalCode`, the `code` or the `cause` chain. */
  readonly certificateCode: string | null;
  /** Node's failed system call (`connect`, `getaddrinfo`, `read`, …), when the error carries one. */
  readonly syscall: string | null;
  /**
   * The retry class a Postdate typed error carries (lambdas/core/postdateError.ts), e.g. the
   * attachment store's AttachmentMissingError (`permanent`) that nodemailer hands back as `ESTREAM`.
   */
  readonly declaredClass: ErrorClass | null;
}

/** Classifies any thrown value. Never throws. */
export function classifySmtpError(error: unknown, context: SmtpFailureContext = {}): SmtpErrorClassification {
  try {
    const shape = readShape(error);
    const bodySent = readBodySent(context);
    const origin = originOf(
      shape,
      bodySent,
      safeGet(context, 'beforeTransaction') === true,
      safeGet(context, 'transactionStarted') === true,
    );
    const classified = classifyShape(shape, bodySent);
    if (origin !== FAILURE_ORIGIN.throttle)
      return { ...classified, origin, hardBounce: isHardBounce(classified) };
    const throttle: ThrottleKind = isQuotaReply(shape) ? 'quota' : 'rate';
    return {
      ...classified,
      class: 'transient',
      origin,
      reason: `the relay is throttling our sending (${classified.code}, its ${throttle === 'quota' ? 'daily quota' : 'rate'}) at ${commandName(shape.command ?? '')}; every sender slows down`,
      hardBounce: false,
      throttle,
    };
  } catch {
    // Only reachable through hostile objects (e.g. a Proxy whose traps throw on every access).
    return {
      class: 'transient',
      origin: FAILURE_ORIGIN.transaction,
      code: null,
      enhancedCode: null,
      reason: 'unreadable error; retried as transient',
      hardBounce: false,
    };
  }
}

/**
 * An attachment the sender could not get from our own store when it asked for every file before
 * MAIL FROM (DESIGN §2, §5; decision 0171): origin `local`, so no attempt, nothing for the breaker and
 * never `dead` — an outage of our storage is not the message's fault. Permanent only when the store
 * says no retry brings the file back (AttachmentMissingError: the object is gone); anything else (a
 * 5xx, throttling, a network error, access denied) is transient. Never throws.
 */
export function classifyAttachmentRead(error: unknown): SmtpErrorClassification {
  const gone = errorClassOf(safeGet(error, 'class')) === ERROR_CLASS.permanent;
  return {
    class: gone ? 'permanent' : 'transient',
    origin: FAILURE_ORIGIN.local,
    code: null,
    enhancedCode: null,
    // No recipient refused anything: nobody is suppressed.
    hardBounce: false,
    reason: gone
      ? 'an attachment of the message is gone from the store; nothing was sent (no SMTP transaction)'
      : 'an attachment could not be read from the store before MAIL FROM; retried later, no attempt counted',
  };
}

/**
 * A refusal that is about the recipient's address for good: permanent and subject 1. Other permanent
 * refusals (5.7.1 policy, 5.2.2 mailbox full, 5.4.x routing) say nothing about the address for good;
 * the sender's own codes (5.1.7, 5.1.8) never reach here as permanent, they are `config`.
 */
function isHardBounce(classified: Classified): boolean {
  return (
    classified.class === 'permanent' &&
    classified.enhancedCode !== null &&
    ADDRESSING_CODE.test(classified.enhancedCode)
  );
}

/** Codes that say no connection to the relay was ever made. */
const NO_CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EDNS',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  CREDENTIALS_READ_CODE,
]);

/** Commands of the session's setup: a failure there came before any mail transaction. */
const SETUP_COMMANDS = /^(EHLO|HELO|LHLO|STARTTLS|AUTH\b)/;

/**
 * Once the transaction began, a failure that can only have come from inside it: a reply (the relay
 * answered one of this message's commands) or the message's stream failing (read only after 354).
 */
function isTransactionsOwn(shape: ErrorShape): boolean {
  return shape.responseCode !== null || shape.code === STREAM_CODE;
}

function shapeReachedRelay(shape: ErrorShape): boolean {
  if (shape.certificateCode !== null) return false;
  if (shape.code !== null && (CONFIG_CODES.has(shape.code) || NO_CONNECTION_CODES.has(shape.code))) {
    return false;
  }
  if (shape.timeoutType !== null && SETUP_TIMEOUTS.has(shape.timeoutType)) return false;
  // nodemailer reports a refused or unreachable connect as ESOCKET at CONN; Node's `syscall`
  // says the socket never connected (`connect`) or the name never resolved (`getaddrinfo`).
  if (shape.syscall === 'connect' || shape.syscall === 'getaddrinfo') return false;
  const command = shape.command ?? '';
  // nodemailer's own checks before it sends anything (an empty or invalid envelope).
  if (command === 'API' && shape.responseCode === null) return false;
  // nodemailer reports the greeting's reply under CONN; a break without a reply may come at any step.
  if (command === 'CONN' && shape.responseCode !== null) return false;
  return !SETUP_COMMANDS.test(command);
}

/** Where the failure happened ({@link FAILURE_ORIGIN}); throttling first, at whatever step it came. */
function originOf(
  shape: ErrorShape,
  bodySent: boolean,
  beforeTransaction: boolean,
  transactionStarted: boolean,
): FailureOrigin {
  if (isThrottleReply(shape)) return FAILURE_ORIGIN.throttle;
  if (bodySent) return FAILURE_ORIGIN.transaction;
  if (transactionStarted && isTransactionsOwn(shape)) return FAILURE_ORIGIN.transaction;
  if (shape.command === 'API' && shape.responseCode === null) return FAILURE_ORIGIN.local;
  if (beforeTransaction || !shapeReachedRelay(shape)) return FAILURE_ORIGIN.outage;
  return FAILURE_ORIGIN.transaction;
}

/** A 4xx reply in a relay's throttling words (THROTTLE_PHRASES), or another relay's quota reply. */
function isThrottleReply(shape: ErrorShape): boolean {
  const reply = shape.responseCode;
  if (reply === null || shape.response === null) return false;
  if (isOtherQuotaReply(shape)) return true;
  if (reply < 400 || reply >= 500) return false;
  const lower = shape.response.toLowerCase();
  return THROTTLE_PHRASES.some((phrase) => lower.includes(phrase));
}

/** A throttling reply (isThrottleReply) that names the daily quota (SES_QUOTA_PHRASES, QUOTA_REPLIES). */
function isQuotaReply(shape: ErrorShape): boolean {
  const lower = shape.response?.toLowerCase() ?? '';
  return SES_QUOTA_PHRASES.some((phrase) => lower.includes(phrase)) || isOtherQuotaReply(shape);
}

/** One of QUOTA_REPLIES: its reply code, its enhanced code and its words. */
function isOtherQuotaReply(shape: ErrorShape): boolean {
  if (shape.response === null) return false;
  const lower = shape.response.toLowerCase();
  const enhanced = extractEnhancedCode(shape.response);
  return QUOTA_REPLIES.some(
    (quota) =>
      shape.responseCode !== null &&
      quota.codes.includes(shape.responseCode) &&
      enhanced === quota.enhanced &&
      lower.includes(quota.words),
  );
}

/** The RFC 3463 enhanced status code in a reply text, preferring the one right after the reply code. */
export function extractEnhancedCode(response: string): string | null {
  if (typeof response !== 'string') return null;
  const text = response.slice(0, MAX_TEXT);
  const leading = /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})(?![\d.])/.exec(text);
  if (leading?.[1] !== undefined) return leading[1];
  const anywhere = /(?<![\d.])([245]\.\d{1,3}\.\d{1,3})(?![\d.])/.exec(text);
  return anywhere?.[1] ?? null;
}

/** The classification before its origin and what it means for the list are added. */
type Classified = Omit<SmtpErrorClassification, 'origin' | 'hardBounce'>;

function classifyShape(shape: ErrorShape, bodySent: boolean): Classified {
  const enhancedCode = shape.response === null ? null : extractEnhancedCode(shape.response);
  const reply = shape.responseCode;
  const command = shape.command ?? '';
  const code = reply !== null ? String(reply) : shape.code;
  const result = (cls: ErrorClass, reason: string): Classified => ({
    class: cls,
    code,
    enhancedCode,
    reason,
  });

  if (shape.code !== null && CONFIG_CODES.has(shape.code)) {
    return result('config', configCodeReason(shape.code));
  }
  if (shape.certificateCode !== null && reply === null) {
    return result(
      'config',
      `the relay's TLS certificate is not trusted (${shape.certificateCode}): fix the relay's certificate, SMTP_HOST or the trust store`,
    );
  }

  if (reply !== null) {
    if (reply === 421) return result('transient', 'the relay is closing the connection (421); retried later');
    if (reply >= 400 && reply < 500) {
      if (enhancedCode === '4.2.2')
        return result('transient', 'the mailbox is full for now (4.2.2); retried later');
      return result('transient', `temporary refusal (${reply}) at ${commandName(command)}; retried later`);
    }
    if (reply >= 500 && reply < 600)
      return classifyPermanentReply(reply, enhancedCode, command, shape.response, result);
    return result('transient', `unexpected reply ${reply} at ${commandName(command)}; retried as transient`);
  }

  if (bodySent) {
    return result(
      'ambiguous',
      'the connection broke after the message body was sent and before the final reply; the relay may have accepted it',
    );
  }
  if (shape.code === null) return result('transient', 'an error without an SMTP code; retried as transient');
  if (PERMANENT_CODES.has(shape.code)) return result('permanent', permanentCodeReason(shape.code));
  if (shape.code === CREDENTIALS_READ_CODE) {
    return result('transient', 'the relay login could not be read from Secrets Manager; retried later');
  }
  if (shape.timeoutType !== null && SETUP_TIMEOUTS.has(shape.timeoutType)) {
    return result('transient', 'the connection could not be set up in time; retried later');
  }
  if (shape.code === STREAM_CODE) {
    // Only the source can say a retry will not help (the attachment is gone from the store).
    return shape.declaredClass === ERROR_CLASS.permanent
      ? result(
          'permanent',
          'the message could not be read while it was sent (ESTREAM), and its source says it never will be (an attachment gone from the store)',
        )
      : result(
          'transient',
          'the message could not be read while it was sent (ESTREAM: an attachment could not be read); retried later',
        );
  }
  if (CONNECTION_CODES.has(shape.code)) {
    return result(
      'transient',
      `network or protocol failure (${shape.code}) before the message was sent; retried later`,
    );
  }
  return result('transient', `unrecognised error code ${shape.code}; retried as transient`);
}

function classifyPermanentReply(
  reply: number,
  enhancedCode: string | null,
  command: string,
  response: string | null,
  result: (cls: ErrorClass, reason: string) => Classified,
): Classified {
  const at = commandName(command);
  /** The reply's codes as a reason quotes them: `550 5.1.0`, or `550` alone. */
  const codes = enhancedCode === null ? `${reply}` : `${reply} ${enhancedCode}`;
  if (CONFIG_REPLY_CODES.has(reply) || (enhancedCode !== null && CONFIG_ENHANCED_CODES.has(enhancedCode))) {
    return result(
      'config',
      `the relay requires authentication or encryption we did not satisfy (${reply}) at ${at}`,
    );
  }
  if (command.startsWith('AUTH')) {
    return result('config', `the relay refused our login (${reply})`);
  }
  if (
    (enhancedCode !== null && SENDER_ADDRESS_CODES.has(enhancedCode)) ||
    (response !== null && saysSenderRefused(response))
  ) {
    return result(
      'config',
      `the relay refused our sender address (${codes}) at ${at}: fix the from address or its domain`,
    );
  }
  if (command === 'MAIL FROM' && enhancedCode !== null && enhancedCode.startsWith('5.7.')) {
    return result('config', `the relay does not allow our sender address (${codes}) at MAIL FROM`);
  }
  if (isSesSenderRefusal(reply, enhancedCode, response)) {
    return result(
      'config',
      `the relay (Amazon SES) will not send for our account or sender (${reply}) at ${at}: verify the identity or the sending permission`,
    );
  }
  if (reply === 503) {
    return result(
      'transient',
      'bad sequence of commands (503): a session problem, retried on a new connection',
    );
  }
  switch (enhancedCode) {
    case '5.1.1':
      return result('permanent', 'the recipient address does not exist (5.1.1)');
    case '5.2.2':
      return result('permanent', 'the mailbox is full and the relay says so permanently (5.2.2)');
    case '5.3.4':
      return result('permanent', 'the message is too big for the relay (5.3.4)');
    case '5.7.1':
      return result('permanent', `the relay refused by policy (5.7.1) at ${at}`);
    default:
      return result('permanent', `permanent refusal (${codes}) at ${at}`);
  }
}

/** A bare 554 from SES whose text holds one of SES_CONFIG_PHRASES; an enhanced code always wins. */
function isSesSenderRefusal(reply: number, enhancedCode: string | null, response: string | null): boolean {
  if (reply !== 554 || enhancedCode !== null || response === null) return false;
  const lower = response.toLowerCase();
  return SES_CONFIG_PHRASES.some((phrase) => lower.includes(phrase));
}

function configCodeReason(code: string): string {
  switch (code) {
    case 'EAUTH':
    case 'ENOAUTH':
    case 'EOAUTH2':
      return `SMTP authentication failed (${code}): check the relay credentials`;
    case 'ETLS':
    case 'EREQUIRETLS':
      return `TLS could not be established with the relay (${code}): check SMTP_SECURE / SMTP_REQUIRE_TLS and certificates`;
    default:
      return `the SMTP configuration is invalid (${code})`;
  }
}

function permanentCodeReason(code: string): string {
  switch (code) {
    case 'EENVELOPE':
      return 'the envelope has no valid sender or recipient (EENVELOPE)';
    case 'EMAXRECIPIENTS':
      return 'too many recipients for the transport (EMAXRECIPIENTS)';
    default:
      return `the message cannot be sent as it is (${code})`;
  }
}

function commandName(command: string): string {
  if (command === '') return 'an unknown step';
  if (command === 'CONN') return 'the connection';
  if (command === 'API') return 'the client';
  return command;
}

function readBodySent(context: unknown): boolean {
  return safeGet(context, 'bodySent') === true;
}

/** Reads the fields from the error, or from its `cause` chain when the top level has none (wrapped errors). */
function readShape(error: unknown): ErrorShape {
  const refusedAll = everyRecipientRefused(error);
  if (refusedAll !== null) return refusedAll;
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH; depth += 1) {
    const shape = shapeOf(current);
    if (shape.code !== null || shape.responseCode !== null) return shape;
    const cause = safeGet(current, 'cause');
    if (cause === undefined || cause === current) return shapeOf(error);
    current = cause;
  }
  return shapeOf(error);
}

/**
 * nodemailer's error when every recipient was refused at RCPT TO (`EENVELOPE`, with each refusal in
 * `rejectedErrors`) carries one reply for all: the envelope's first 4xx, else the last reply. Which one
 * that is follows the recipients' order, and it decides whose failure this is. Here the replies decide
 * together instead, so any order gives the same answer (decision 0323), the first of the strongest:
 * a refusal of our own setup (`config`, e.g. Postfix's "Sender address rejected" at each RCPT TO), then
 * a recipient deferred by a 4xx that is no throttle (the message's own transient failure: one attempt),
 * then a throttle (the fleet's pressure: no attempt), then refusals for good. Each recipient's own
 * refusal stands whichever reply speaks here (lambdas/sender: `refused`). Null for any other error.
 */
function everyRecipientRefused(error: unknown): ErrorShape | null {
  const shape = shapeOf(error);
  const refusals = safeGet(error, 'rejectedErrors');
  if (shape.code !== 'EENVELOPE' || shape.command !== 'RCPT TO' || !Array.isArray(refusals)) return null;
  const replies = refusals.map(shapeOf).filter((reply) => reply.responseCode !== null);
  const strength = (reply: ErrorShape): number => {
    if (isThrottleReply(reply)) return 2;
    const cls = classifyShape(reply, false).class;
    return cls === 'config' ? 0 : cls === 'permanent' ? 3 : 1;
  };
  const speaking = replies.reduce<ErrorShape | undefined>(
    (best, reply) => (best === undefined || strength(reply) < strength(best) ? reply : best),
    undefined,
  );
  return speaking === undefined ? null : { ...speaking, code: shape.code, command: shape.command };
}

function shapeOf(error: unknown): ErrorShape {
  const response = text(safeGet(error, 'response'));
  return {
    certificateCode: certificateCodeOf(error),
    code: codeOf(safeGet(error, 'code')),
    responseCode: replyCodeOf(safeGet(error, 'responseCode')) ?? replyCodeFromText(response),
    command: text(safeGet(error, 'command'))?.trim().toUpperCase() ?? null,
    response,
    timeoutType: text(safeGet(error, 'timeoutType')),
    syscall: text(safeGet(error, 'syscall')),
    declaredClass: errorClassOf(safeGet(error, 'class')),
  };
}

const ERROR_CLASSES: ReadonlySet<unknown> = new Set(Object.values(ERROR_CLASS));

function errorClassOf(value: unknown): ErrorClass | null {
  return ERROR_CLASSES.has(value) ? (value as ErrorClass) : null;
}

/** The first TLS certificate code in `originalCode` or `code`, on the error or down its `cause` chain. */
function certificateCodeOf(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current !== undefined; depth += 1) {
    for (const key of ['originalCode', 'code']) {
      const code = codeOf(safeGet(current, key));
      if (code !== null && TLS_CERTIFICATE_CODES.has(code)) return code;
    }
    const cause = safeGet(current, 'cause');
    if (cause === current) return null;
    current = cause;
  }
  return null;
}

function safeGet(value: unknown, key: string): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value.slice(0, MAX_TEXT) : null;
}

function codeOf(value: unknown): string | null {
  const code = text(value)?.trim().toUpperCase();
  return code !== undefined && /^[A-Z0-9_]{1,40}$/.test(code) ? code : null;
}

function replyCodeOf(value: unknown): number | null {
  const number = typeof value === 'string' && /^\d{3}$/.test(value.trim()) ? Number(value.trim()) : value;
  return typeof number === 'number' && Number.isInteger(number) && number >= 200 && number <= 599
    ? number
    : null;
}

function replyCodeFromText(response: string | null): number | null {
  const match = response === null ? null : /^([2-5]\d{2})(?:[ -]|$)/.exec(response);
  return match?.[1] === undefined ? null : Number(match[1]);
}
