import { CONFIG_SETTINGS } from '../lambdas/core/configSpec.js';
import { OUTCOME_WRITE_RESERVE_MS } from '../lambdas/core/sendTiming.js';
import { SESSION_ENDING_FAULTS, SLOW_FAULT, THROTTLE_FAULT } from './smtpFaultScript.js';

/**
 * The total-queue checker of the chaos and restart runs (in the spirit of Jepsen's total-queue
 * checker). Its input is what the harness itself saw, never what Postdate recorded about its own
 * sends: what the clients were told (the accepted messages and the fate each should reach), the
 * API's final view of each message (status only: what the promise is about), every SMTP
 * transaction the relay saw (from the TCP tap in front of it and the relay's own fault script) and
 * every kill the harness dealt (SIGKILLs of the sender or the whole stack, timeout kills of a sender
 * invocation by the local runner). Per message it counts:
 *
 * - lost: accepted but not terminal at the end (stuck), missing from the API, or `sent` and
 *   never received;
 * - duplicated: received more than once. The copies are ordered by the time their final dot went,
 *   and every copy but the last needs its own explanation by a fault the harness injected on THAT
 *   copy, one that leaves the relay holding the body while the sender cannot know it
 *   (`explainCopy`): the relay dropped the connection or stalled after reading the final dot, the
 *   relay outage cut the session, or a kill cut the connection after that copy's final dot went and
 *   before its sender could have acted on the reply. Anything else is an unexplained duplicate (a
 *   fault on a later copy explains nothing about an earlier one);
 * - unexpected: a copy received for an id never accepted, or for a message that was
 *   cancelled, superseded, expired or suppressed (by its expected fate or its final status);
 * - wrong fate: the final status contradicts what the client was told (e.g. a cancel answered
 *   200 but the message ended `sent`); or it ended in a state that is not `sent` without a cause
 *   the harness injected (`endUnbelievable`): `failed` needs a 5xx the relay gave it (after its
 *   last copy, if the relay holds one); `dead` needs as many failed attempts as the scenario's
 *   POSTDATE_MAX_ATTEMPTS, counted from the tap (a 454 throttle is no attempt) plus the kills and
 *   outage cuts that may have interrupted one unseen; `unknown` needs `on_ambiguous: "hold"` and a
 *   last attempt that met an ambiguous fault (a drop or stall after the dot, a slow 250 its sender
 *   no longer waited for, a cut or kill after it, or a kill that may have left its lease to expire); `suppressed` needs every recipient suppressed by the harness or
 *   refused 5xx at RCPT TO by the relay before (DESIGN §12). Under `hold` an ambiguous copy is the
 *   last: a copy after it is a duplicate, and the end is `unknown` unless its sender heard a 250;
 * - early: an attempt the relay saw before the message's `send_at` (the earliest the client set),
 *   less `EARLY_TOLERANCE_MS`.
 *
 * Pure: no I/O, no clock. `chaos/check.ts` prints and writes its result.
 */

/** Statuses a message may end in (DESIGN §2): terminal, or terminal until an operator acts. */
export const TERMINAL_STATUSES = [
  'sent',
  'failed',
  'dead',
  'cancelled',
  'superseded',
  'expired',
  'unknown',
  'suppressed',
] as const;

/**
 * How long after a kill (or a cut) the tap may see the close of a connection it cut: the kernel
 * closes a dead process's sockets at once, but the tap sees the close on its own event loop. One-sided:
 * a connection that closed before the kill did not die of it.
 */
export const EXPLAIN_SLACK_MS = 2_000;

/**
 * A timeout kill is recorded once the runner's `worker.terminate()` resolved, after the worker's
 * sockets closed: its connections may close this long before its record.
 */
export const TERMINATE_MS = 1_000;

/** How long the final dot may take from a client killed right after writing it to the relay's read. */
export const DOT_TRANSIT_MS = 250;

/**
 * After its sender heard the reply to the final dot, a kill explains the copy only this soon: the
 * time the sender reserves for its outcome write (lambdas/core/sendTiming.ts). Later, the sender
 * could have recorded what the relay said.
 */
export const REPLY_ACT_MS = OUTCOME_WRITE_RESERVE_MS;

/**
 * How much before its `send_at` the relay may see a message's attempt without it counting as early:
 * the harness and the stack read the same clock, so this only covers the stored `send_at`'s
 * millisecond and the tap's event loop noticing MAIL FROM late (never early).
 */
export const EARLY_TOLERANCE_MS = 1_000;

/**
 * What the client's answers promise about a message:
 * - `send`: it should be delivered (or end `failed`/`dead`/`unknown`/`suppressed`, truthful
 *   terminal states when the harness injected their cause);
 * - `cancelled`: DELETE answered 200 before any send began;
 * - `superseded`: its group's head was raised above its version before it was due (or `unknown`
 *   under hold after a kill once it was due: the group is checked under the claim, and a sender
 *   that dies holding the lease leaves an ambiguous end, DESIGN §4, §5);
 * - `expired`: its `not_after` passed while the relay kept refusing it (or `unknown` under hold
 *   after a kill that may have cut the claim of an attempt, as above);
 * - `send-or-superseded`: its group was raised, but the client saw the answer only shortly before
 *   the message was due, so either end is right (a copy may be received only if it ended `sent`).
 */
export type ExpectedFate = 'send' | 'cancelled' | 'superseded' | 'expired' | 'send-or-superseded';

export interface AcceptedMessage {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly expectedFate: ExpectedFate;
  /**
   * Its envelope recipients, as the client enqueued them: unique to the message in the workload, so
   * a refusal at RCPT TO (before any body, hence any id, went) is attributed by its address.
   */
  readonly recipients: readonly string[];
  /** Its `on_ambiguous` policy (DESIGN §5). @default 'retry' */
  readonly onAmbiguous?: 'retry' | 'hold';
  /** How the client got its answer (e.g. which process, after how many tries): shown with a loss. */
  readonly acceptedBy?: string;
  /**
   * The earliest `send_at` the client set (the enqueue's answer, or a reschedule it asked for, which
   * may have landed even if its answer was lost), epoch ms. Absent: not checked.
   */
  readonly sendAtMs?: number;
}

/** One attempt of the API's history (kept in the report for a reader; the verdict ignores it). */
export interface HistoryEntry {
  readonly outcome: string;
  readonly at?: string;
  readonly code?: string | null;
}

/** The API's final view of one message; `null` when GET answered 404. */
export interface FinalView {
  readonly id: string;
  readonly status: string;
  readonly history: readonly HistoryEntry[];
}

/** What the relay did once it had read the final dot (its own record of the behaviour it applied). */
export type RelayOutcome = 'accepted' | 'refused' | 'dropped' | 'stalled';

/**
 * One SMTP transaction (from MAIL FROM on) as the harness saw it: the TCP tap in front of the relay
 * (client bytes, the relay's replies, the close, with times) and the relay's fault script.
 */
export interface SmtpTransaction {
  /**
   * The relay whose tap saw it, in a run with several relays (docs/design.md §15 Failover across
   * relays); absent with one. A copy at any relay is a delivery; copies at two are a duplicate.
   */
  readonly relay?: string;
  /** The tap's number of the connection (per relay), and the transaction's place on it (0, 1, …). */
  readonly connection: number;
  readonly index: number;
  /** From the body's headers as they went through the tap: X-Postdate-Id and Message-ID. */
  readonly postdateId: string | null;
  readonly messageId: string | null;
  /** The fault the harness told the relay to inject for this transaction (`accept` for none). */
  readonly fault: string;
  /** What the relay did after reading the final dot; null when it never read the body in full. */
  readonly outcome: RelayOutcome | null;
  readonly mailFromAtMs: number;
  readonly dataCommandAtMs: number | null;
  /** When the client's final dot went through the tap; null when the body never went. */
  readonly finalDotAtMs: number | null;
  /**
   * The relay's reply to the final dot, when it went through the tap, and whether the client's side
   * of the connection was still open to take it.
   */
  readonly reply: {
    readonly code: number;
    readonly text: string;
    readonly atMs: number;
    readonly delivered: boolean;
  } | null;
  /** Every RCPT TO of the transaction with the relay's reply (null: none went through the tap). */
  readonly recipients?: readonly RecipientReply[];
  /**
   * The client's port as the tap saw it: the port of the outage proxy's session towards the tap, by
   * which the proxy reports the sessions it cut (`SessionCut`).
   */
  readonly clientPort?: number;
  /** When the client sent its first command after the final dot on this connection; null if none. */
  readonly clientCommandAfterDotAtMs: number | null;
  /** When the connection closed (either side); null when it was still open at the end. */
  readonly closedAtMs: number | null;
  readonly closedBy: 'client' | 'server' | null;
}

/** One RCPT TO and the relay's reply to it, as it went through the tap. */
export interface RecipientReply {
  readonly address: string;
  readonly code: number | null;
  readonly atMs: number | null;
}

/**
 * A session the harness cut on its own: the relay outage (local/smtp/relayOutage.ts) closes every
 * session open when it begins, including transactions already past the dot.
 */
export interface SessionCut {
  readonly kind: 'relay-outage';
  /** The relay whose outage cut it (several relays: each has its own proxy, and its own ports). */
  readonly relay?: string;
  readonly atMs: number;
  /** The cut session's port towards the tap (the tap's `clientPort`). */
  readonly clientPort: number;
}

/** A kill the harness dealt. */
export interface KillRecord {
  /**
   * `sender-sigkill`: the sender process alone; `stack-sigkill`: the whole stack (the sender with
   * it); `function-timeout`: the local runner killed one sender invocation at its function timeout.
   */
  readonly kind: 'sender-sigkill' | 'stack-sigkill' | 'function-timeout';
  readonly atMs: number;
  /** A timeout kill: the message ids of the killed invocation's records (only those can be cut). */
  readonly ids?: readonly string[];
  readonly startedAtMs?: number;
  readonly functionName?: string;
  /**
   * A SIGKILL: the taps' sessions still open when it was dealt (by the tap's client port, and the
   * relay in a run with several). The tap only ever sees a close late, so each of them was open at
   * the kill, and its process died with it: its close is the kill's however late the tap saw it.
   */
  readonly openSessions?: readonly { readonly relay?: string; readonly clientPort: number }[];
}

export interface CheckInput {
  readonly accepted: readonly AcceptedMessage[];
  /** Keyed by message id; a missing entry or `null` means the API does not know the message. */
  readonly views: Readonly<Record<string, FinalView | null>>;
  readonly transactions: readonly SmtpTransaction[];
  readonly kills: readonly KillRecord[];
  /** Sessions the harness cut (none in a saved report from before they were recorded). */
  readonly cuts?: readonly SessionCut[];
  /** The scenario's POSTDATE_MAX_ATTEMPTS. @default the configuration's default (8) */
  readonly maxAttempts?: number;
  /** Addresses the harness put on the suppression list before their messages were due. @default none */
  readonly suppressed?: readonly string[];
}

export type Problem =
  | { readonly kind: 'lost'; readonly id: string; readonly reason: string }
  | { readonly kind: 'unexplained-duplicate'; readonly id: string; readonly reason: string }
  | { readonly kind: 'unexpected'; readonly id: string; readonly reason: string }
  | { readonly kind: 'wrong-fate'; readonly id: string; readonly reason: string }
  | { readonly kind: 'early'; readonly id: string; readonly reason: string };

/** What explains one copy the relay holds: an injected fault after the final dot. */
export type Explanation = 'relay-drop' | 'relay-stall' | SessionCut['kind'] | KillRecord['kind'];

/** A transaction of the input with the checker's reading of it. */
export interface CheckedTransaction {
  readonly relay?: string;
  readonly connection: number;
  readonly index: number;
  readonly id: string | null;
  readonly fault: string;
  readonly outcome: RelayOutcome | null;
  /** The relay holds the body (a delivery as far as the recipient is concerned). */
  readonly copy: boolean;
  readonly explainedBy: Explanation | null;
  /** The kill or cut that explains it, if one does. */
  readonly killAtMs?: number;
}

export interface CheckResult {
  readonly ok: boolean;
  readonly counts: {
    readonly accepted: number;
    readonly received: number;
    readonly deliveredOnce: number;
    readonly lost: number;
    readonly duplicated: number;
    readonly explainedDuplicates: number;
    readonly unexplainedDuplicates: number;
    readonly unexpected: number;
    readonly wrongFate: number;
    readonly early: number;
    readonly transactions: number;
    readonly refusedCopies: number;
    /** Copies that an injected fault after the dot explains (the bound on duplicates). */
    readonly explainedCopies: number;
    readonly kills: number;
  };
  /** Explained copies by what explains them. */
  readonly explainedBy: Readonly<Record<string, number>>;
  /** Copies each relay holds, in a run with several relays (empty with one). */
  readonly copiesByRelay: Readonly<Record<string, number>>;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly byExpectedFate: Readonly<Record<string, number>>;
  readonly problems: readonly Problem[];
  /** Duplicates that the harness's faults explain: id, copies, explained copies and by what. */
  readonly explained: readonly {
    readonly id: string;
    readonly copies: number;
    readonly explainedCopies: number;
    readonly by: readonly Explanation[];
  }[];
  /** Every transaction, in input order, with its reading. */
  readonly transactions: readonly CheckedTransaction[];
  /** Every kill, with the ids whose final dot had gone and whose connection then died with it. */
  readonly kills: readonly (KillRecord & { readonly afterTheDot: readonly string[] })[];
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);
const NOT_TO_BE_SENT: ReadonlySet<string> = new Set(['cancelled', 'superseded', 'expired', 'suppressed']);

/** The final statuses each expected fate allows. */
const ALLOWED_STATUSES: Readonly<Record<ExpectedFate, ReadonlySet<string>>> = {
  send: new Set(['sent', 'failed', 'dead', 'unknown', 'suppressed']),
  cancelled: new Set(['cancelled']),
  // `unknown` only as `endUnbelievable` believes it: hold, and a kill after it was due, no copy.
  superseded: new Set(['superseded', 'unknown']),
  // A message that runs out of attempts before its deadline is `dead`: truthful, not delivered.
  // `unknown` as for `superseded`: each attempt before its not_after is claimed, and a kill may cut one.
  expired: new Set(['expired', 'dead', 'unknown']),
  'send-or-superseded': new Set(['sent', 'failed', 'dead', 'unknown', 'suppressed', 'superseded']),
};

/** The message id of a copy: X-Postdate-Id, else the local part of `<{id}@domain>`. */
export function copyId(copy: Pick<SmtpTransaction, 'postdateId' | 'messageId'>): string | null {
  if (copy.postdateId?.trim()) return copy.postdateId.trim();
  const match = copy.messageId ? /^<?([^@<>\s]+)@/.exec(copy.messageId.trim()) : null;
  return match?.[1] ?? null;
}

/** The relay holds the body: it read the final dot and did not refuse it. */
export function isCopy(transaction: Pick<SmtpTransaction, 'outcome'>): boolean {
  return transaction.outcome !== null && transaction.outcome !== 'refused';
}

/**
 * Whether `kill` cut `transaction` after its final dot, before its sender could know the answer:
 * the dot went before the kill; the connection died with the kill (closed at or after it, within
 * the slack, or later if the tap held it open when the kill was dealt);
 * if the client heard a reply, the kill came before it could have acted on it (`REPLY_ACT_MS`),
 * and if it heard none, it had sent nothing more (a client that gave up on its own is no victim of
 * the kill); a timeout kill cuts only the copies of its own invocation.
 */
export function killCut(kill: KillRecord, transaction: SmtpTransaction, endedByAFault: boolean): boolean {
  const dot = transaction.finalDotAtMs;
  const closed = transaction.closedAtMs;
  if (dot === null || closed === null) return false;
  const reply = transaction.reply;
  // The kill is recorded just before the signal; bytes the client wrote before it died may reach the
  // relay a moment after that record. A dot read up to DOT_TRANSIT_MS after the kill was still sent
  // before it — by a transaction that had begun before it (a new process cannot get that far so fast).
  if (kill.atMs < dot && (dot - kill.atMs > DOT_TRANSIT_MS || transaction.mailFromAtMs > kill.atMs)) {
    return false;
  }
  const killBegan = kill.kind === 'function-timeout' ? kill.atMs - TERMINATE_MS : kill.atMs;
  // A session a later transaction's injected fault ended tells nothing of the sender's outcome write
  // for a reply it heard before: judged by the reply's time alone, as if the session were still open.
  const closedBefore = closed < killBegan && !(endedByAFault && reply?.delivered);
  if (closedBefore || (closed - kill.atMs > EXPLAIN_SLACK_MS && !openAtKill(kill, transaction))) {
    return false;
  }
  if (reply?.delivered) {
    if (kill.atMs > reply.atMs + REPLY_ACT_MS) return false;
  } else if (transaction.clientCommandAfterDotAtMs !== null) {
    return false;
  }
  if (kill.kind === 'function-timeout' && kill.ids !== undefined) {
    const id = copyId(transaction);
    if (id === null || !kill.ids.includes(id)) return false;
  }
  return true;
}

/** The kill found the transaction's session open (the tap had not seen it close). */
function openAtKill(kill: KillRecord, transaction: SmtpTransaction): boolean {
  return (kill.openSessions ?? []).some(
    (session) =>
      session.clientPort === transaction.clientPort &&
      (session.relay ?? null) === (transaction.relay ?? null),
  );
}

/**
 * Whether the harness's own cut of a session (the relay outage's start) cut `transaction` after its
 * final dot, before its sender heard the reply: the same session (by the tap's client port), the dot
 * went before the cut (read by the tap at most `DOT_TRANSIT_MS` after it), the connection closed at or after the cut (within the slack), and the sender
 * sent nothing more after the dot (it had heard nothing). A reply the tap passed on less than
 * `DOT_TRANSIT_MS` before the cut may still have been in the proxy when it was destroyed.
 */
export function sessionCut(cut: SessionCut, transaction: SmtpTransaction): boolean {
  const dot = transaction.finalDotAtMs;
  const closed = transaction.closedAtMs;
  if (dot === null || closed === null || transaction.clientPort !== cut.clientPort) return false;
  // Two relays' sessions may share a client port: a cut explains only a session of its own relay.
  if ((cut.relay ?? null) !== (transaction.relay ?? null)) return false;
  // The proxy forwards nothing after the cut: a dot the tap read just after it was sent before it.
  if (dot > cut.atMs + DOT_TRANSIT_MS || closed < cut.atMs || closed - cut.atMs > EXPLAIN_SLACK_MS) {
    return false;
  }
  if (transaction.clientCommandAfterDotAtMs !== null) return false;
  const reply = transaction.reply;
  return reply === null || !reply.delivered || reply.atMs > cut.atMs - DOT_TRANSIT_MS;
}

/** What explains one transaction's copy, if anything does (null for a refused or missing body too). */
export function explainCopy(
  transaction: SmtpTransaction,
  kills: readonly KillRecord[],
  cuts: readonly SessionCut[],
  endedByAFault: boolean,
): { by: Explanation; killAtMs?: number } | null {
  if (!isCopy(transaction)) return null;
  if (transaction.outcome === 'dropped') return { by: 'relay-drop' };
  if (transaction.outcome === 'stalled') return { by: 'relay-stall' };
  const cut = cuts.find((candidate) => sessionCut(candidate, transaction));
  if (cut) return { by: cut.kind, killAtMs: cut.atMs };
  const kill = kills.find((candidate) => killCut(candidate, transaction, endedByAFault));
  return kill ? { by: kill.kind, killAtMs: kill.atMs } : null;
}

/**
 * Whether the session's close is the harness's doing, not its sender's: a later transaction of the
 * same session (relay and connection) met a fault that ends the session (`SESSION_ENDING_FAULTS`,
 * decision 0309), or the harness cut the session itself (a relay outage's start: same relay and
 * client port) at most `EXPLAIN_SLACK_MS` before the tap saw it close (decision 0318).
 */
function sessionsEndedByAFault(
  transactions: readonly SmtpTransaction[],
  cuts: readonly SessionCut[],
): (transaction: SmtpTransaction) => boolean {
  const session = (t: SmtpTransaction) => `${t.relay ?? ''}|${t.connection}`;
  const lastFault = new Map<string, number>();
  for (const t of transactions) {
    if (SESSION_ENDING_FAULTS.has(t.fault)) {
      lastFault.set(session(t), Math.max(lastFault.get(session(t)) ?? -1, t.index));
    }
  }
  const cutByTheHarness = (t: SmtpTransaction) => {
    const closed = t.closedAtMs;
    return (
      closed !== null &&
      cuts.some(
        (cut) =>
          cut.clientPort === t.clientPort &&
          (cut.relay ?? null) === (t.relay ?? null) &&
          cut.atMs <= closed &&
          closed - cut.atMs <= EXPLAIN_SLACK_MS,
      )
    );
  };
  return (t) => (lastFault.get(session(t)) ?? -1) > t.index || cutByTheHarness(t);
}

/** When a transaction's copy went: its final dot (a copy always has one; the MAIL FROM otherwise). */
const copyTime = (transaction: SmtpTransaction): number =>
  transaction.finalDotAtMs ?? transaction.mailFromAtMs;

/**
 * The relay refused the message in this transaction: a 4xx/5xx to its RCPT TO, or to its final dot.
 * Its time, and whether it was permanent (5xx); null when it did not.
 */
function refusal(
  transaction: SmtpTransaction,
  recipients: ReadonlySet<string>,
): { atMs: number; permanent: boolean } | null {
  for (const rcpt of transaction.recipients ?? []) {
    if (rcpt.code !== null && rcpt.code >= 400 && recipients.has(rcpt.address.toLowerCase())) {
      return { atMs: rcpt.atMs ?? transaction.mailFromAtMs, permanent: rcpt.code >= 500 };
    }
  }
  const reply = transaction.reply;
  if (transaction.outcome === 'refused' && reply !== null && reply.code >= 400) {
    return { atMs: reply.atMs, permanent: reply.code >= 500 };
  }
  return null;
}

/** A 2xx to the final dot that its sender heard and had the time to record (nothing cut it). */
function heardAcceptance(transaction: SmtpTransaction, explanation: Explanation | null): boolean {
  const reply = transaction.reply;
  return (
    transaction.outcome === 'accepted' &&
    explanation === null &&
    reply?.delivered === true &&
    reply.code >= 200 &&
    reply.code < 300
  );
}

/** A 2xx to the final dot went through the tap while its sender's side was open (it could hear it). */
function replyReachedSender(transaction: SmtpTransaction): boolean {
  const reply = transaction.reply;
  return reply?.delivered === true && reply.code >= 200 && reply.code < 300;
}

/** The ends that are true only when the harness injected their cause (`endUnbelievable`). */
const BELIEVED_ON_CAUSE: ReadonlySet<string> = new Set(['failed', 'dead', 'unknown', 'suppressed']);

const DEFAULT_MAX_ATTEMPTS = CONFIG_SETTINGS.maxAttempts.local;

/** What the harness injected across the run, beside the message's own transactions. */
interface Injected {
  readonly kills: readonly KillRecord[];
  readonly cuts: readonly SessionCut[];
  readonly maxAttempts: number;
  /** Lower-cased addresses the harness suppressed. */
  readonly suppressed: ReadonlySet<string>;
}

/**
 * Why a message's `failed`, `dead`, `unknown` or `suppressed` end is not believable from what the
 * harness injected (never from what Postdate says about its sends); null when it is.
 */
function endUnbelievable(
  status: string,
  message: AcceptedMessage,
  wire: MessageWire,
  copies: MessageWire['copies'],
  injected: Injected,
): string | null {
  if (wire.heard > 0) {
    return `the relay answered 250 to a sender that heard it and was not cut, but it ended ${status}`;
  }
  const recipients = new Set(message.recipients.map((address) => address.toLowerCase()));
  const refusals = wire.transactions.flatMap((transaction) => {
    const refused = refusal(transaction, recipients);
    return refused ? [refused] : [];
  });
  // DESIGN §5: a throttle is the fleet's pressure, no attempt of the message.
  const attempts = wire.transactions
    .filter((transaction) => transaction.fault !== THROTTLE_FAULT)
    .sort((a, b) => a.mailFromAtMs - b.mailFromAtMs);
  const count = copies.length;
  const lastCopyAt = count === 0 ? null : Math.max(...copies.map((copy) => copyTime(copy.transaction)));
  const held = `the relay holds ${count} copy(ies) (${copies.map((copy) => copy.transaction.fault).join(', ')})`;
  // A kill while the message may have been claimed: its sender's lease then expires mid-send, which
  // Postdate counts as an ambiguous attempt whether or not the relay saw it (DESIGN §2, §5).
  const earliest = (message.sendAtMs ?? Number.NEGATIVE_INFINITY) - EARLY_TOLERANCE_MS;
  const interrupts: readonly { readonly atMs: number }[] = [
    ...injected.kills.filter(
      (kill) =>
        kill.atMs >= earliest &&
        (kill.kind !== 'function-timeout' || kill.ids === undefined || kill.ids.includes(message.id)),
    ),
    // An outage's cut between MAIL FROM and the dot is an attempt Postdate counts, and after a body
    // handed over it is ambiguous, whether or not the tap could tie it to this message.
    ...injected.cuts.filter((cut) => cut.atMs >= earliest),
  ];
  switch (status) {
    case 'failed': {
      const refused =
        lastCopyAt === null
          ? refusals.some((r) => r.permanent)
          : refusals.some((r) => r.permanent && r.atMs > lastCopyAt);
      if (refused) return null;
      return lastCopyAt === null
        ? 'it ended failed, but the relay never refused it with a 5xx'
        : `${held}, but it ended failed with no 5xx after the last copy`;
    }
    case 'dead': {
      if (attempts.length + interrupts.length < injected.maxAttempts) {
        return `it ended dead after ${attempts.length} attempt(s) the relay saw and ${interrupts.length} kill(s) or cut(s) that may have cut one unseen, fewer than the ${injected.maxAttempts} attempts POSTDATE_MAX_ATTEMPTS allows`;
      }
      if (lastCopyAt !== null && !attempts.some((t) => t.mailFromAtMs > lastCopyAt)) {
        return `${held}, but it ended dead with no attempt after the last copy`;
      }
      return null;
    }
    case 'unknown': {
      if (message.onAmbiguous !== 'hold') return 'it ended unknown, but its on_ambiguous policy is retry';
      const last = attempts.at(-1);
      const lastCopy = last === undefined ? undefined : copies.find((copy) => copy.transaction === last);
      if (lastCopy?.explanation != null) return null;
      // The slow relay's 250 came after its sender stopped waiting: an ambiguous end the harness caused.
      if (last?.fault === SLOW_FAULT && last.finalDotAtMs !== null && !replyReachedSender(last)) return null;
      const since = last?.mailFromAtMs ?? earliest;
      if (interrupts.some((kill) => kill.atMs >= since)) return null;
      return `it ended unknown, but its last attempt met no ambiguous fault the harness injected (${last === undefined ? 'the relay saw none, and no kill came' : `${last.fault}, ${last.outcome ?? 'no body'}`})`;
    }
    case 'suppressed': {
      // DESIGN §12: the relay's 5xx at RCPT TO suppresses the address (the script's is 5.1.1).
      const refusedForGood = new Set(
        wire.transactions.flatMap((transaction) =>
          (transaction.recipients ?? []).flatMap((rcpt) =>
            rcpt.code !== null && rcpt.code >= 500 ? [rcpt.address.toLowerCase()] : [],
          ),
        ),
      );
      const cause = [...recipients].every(
        (address) => injected.suppressed.has(address) || refusedForGood.has(address),
      );
      return cause
        ? null
        : 'it ended suppressed, but the harness suppressed none of its recipients and the relay never refused them with a 5xx';
    }
    default:
      return null;
  }
}

/** What the harness saw of one accepted message over the wire. */
interface MessageWire {
  /** Its copies, in the order their final dot went, each with what explains it (and the kill's or cut's time). */
  readonly copies: {
    readonly transaction: SmtpTransaction;
    readonly explanation: Explanation | null;
    readonly killAtMs?: number;
  }[];
  /** Copies answered 2xx to a sender that heard it, uncut. */
  heard: number;
  /** Every transaction of the message (by its id, or its recipient's address). */
  readonly transactions: SmtpTransaction[];
}

export function checkRun(input: CheckInput): CheckResult {
  const problems: Problem[] = [];
  const cuts = input.cuts ?? [];
  const explained: { id: string; copies: number; explainedCopies: number; by: Explanation[] }[] = [];
  const acceptedIds = new Map<string, AcceptedMessage>();
  const byRecipient = new Map<string, string>();
  for (const message of input.accepted) {
    acceptedIds.set(message.id, message);
    for (const address of message.recipients) byRecipient.set(address.toLowerCase(), message.id);
  }
  /** The message a transaction was for: its body's id, else the owner of a recipient it named. */
  const ownerOf = (transaction: SmtpTransaction): string | null => {
    const id = copyId(transaction);
    if (id !== null) return id;
    for (const rcpt of transaction.recipients ?? []) {
      const owner = byRecipient.get(rcpt.address.toLowerCase());
      if (owner !== undefined) return owner;
    }
    return null;
  };

  const perMessage = new Map<string, MessageWire>();
  const wireOf = (id: string): MessageWire => {
    const found = perMessage.get(id);
    if (found) return found;
    const created: MessageWire = { copies: [], heard: 0, transactions: [] };
    perMessage.set(id, created);
    return created;
  };
  const transactions: CheckedTransaction[] = [];
  const explainedBy: Record<string, number> = {};
  const copiesByRelay: Record<string, number> = {};
  let received = 0;
  let refusedCopies = 0;
  let explainedCopies = 0;
  const endedByAFault = sessionsEndedByAFault(input.transactions, cuts);
  for (const transaction of input.transactions) {
    const id = copyId(transaction);
    const copy = isCopy(transaction);
    const explanation = explainCopy(transaction, input.kills, cuts, endedByAFault(transaction));
    transactions.push({
      ...(transaction.relay === undefined ? {} : { relay: transaction.relay }),
      connection: transaction.connection,
      index: transaction.index,
      id,
      fault: transaction.fault,
      outcome: transaction.outcome,
      copy,
      explainedBy: explanation?.by ?? null,
      ...(explanation?.killAtMs === undefined ? {} : { killAtMs: explanation.killAtMs }),
    });
    if (transaction.outcome === 'refused') refusedCopies += 1;
    const owner = ownerOf(transaction);
    if (owner !== null && acceptedIds.has(owner)) wireOf(owner).transactions.push(transaction);
    if (!copy) continue;
    received += 1;
    if (transaction.relay !== undefined) {
      copiesByRelay[transaction.relay] = (copiesByRelay[transaction.relay] ?? 0) + 1;
    }
    if (explanation) {
      explainedCopies += 1;
      explainedBy[explanation.by] = (explainedBy[explanation.by] ?? 0) + 1;
    }
    if (id === null || !acceptedIds.has(id)) {
      problems.push({
        kind: 'unexpected',
        id: id ?? '(no id)',
        reason: 'received a copy of a message that was never accepted',
      });
      continue;
    }
    const wire = wireOf(id);
    wire.copies.push({
      transaction,
      explanation: explanation?.by ?? null,
      ...(explanation?.killAtMs === undefined ? {} : { killAtMs: explanation.killAtMs }),
    });
    if (heardAcceptance(transaction, explanation?.by ?? null)) wire.heard += 1;
  }

  const byStatus: Record<string, number> = {};
  const byExpectedFate: Record<string, number> = {};
  let deliveredOnce = 0;
  let duplicated = 0;
  for (const message of input.accepted) {
    byExpectedFate[message.expectedFate] = (byExpectedFate[message.expectedFate] ?? 0) + 1;
    const view = input.views[message.id] ?? null;
    const wire = perMessage.get(message.id) ?? { copies: [], heard: 0, transactions: [] };
    const copies = [...wire.copies].sort((a, b) => copyTime(a.transaction) - copyTime(b.transaction));
    const count = copies.length;
    if (count === 1) deliveredOnce += 1;
    if (view === null) {
      byStatus['(missing)'] = (byStatus['(missing)'] ?? 0) + 1;
      problems.push({
        kind: 'lost',
        id: message.id,
        reason: `accepted (${message.acceptedBy ?? 'answer not recorded'}), but the API does not know it`,
      });
      continue;
    }
    byStatus[view.status] = (byStatus[view.status] ?? 0) + 1;

    if (!TERMINAL.has(view.status)) {
      problems.push({
        kind: 'lost',
        id: message.id,
        reason: `still ${view.status} at the end of the run (not terminal)`,
      });
    } else if (view.status === 'sent' && count === 0) {
      problems.push({ kind: 'lost', id: message.id, reason: 'sent, but the relay never received it' });
    }

    const hold = message.onAmbiguous === 'hold';
    if (count > 1) {
      duplicated += 1;
      // Every copy but the last must be explained by a fault on that very copy. A kill or a cut
      // explains it only when the next copy went after it: a sender cut before it could record the
      // reply cannot have sent the message again before the cut (decision 0318).
      const earlier = copies
        .slice(0, -1)
        .map((copy, index) =>
          copy.killAtMs !== undefined &&
          copyTime(copies[index + 1]?.transaction ?? copy.transaction) <= copy.killAtMs
            ? { ...copy, explanation: null }
            : copy,
        );
      const unexplained = earlier.filter((copy) => copy.explanation === null).length;
      const by = earlier.flatMap((copy) => (copy.explanation === null ? [] : [copy.explanation]));
      if (unexplained === 0 && !hold) {
        explained.push({ id: message.id, copies: count, explainedCopies: by.length, by });
      } else if (unexplained === 0) {
        // DESIGN §5: under `hold` an ambiguous outcome makes the message `unknown`; it is never sent again.
        problems.push({
          kind: 'unexplained-duplicate',
          id: message.id,
          reason: `received ${count} times, but its on_ambiguous policy is hold: it was sent again after an ambiguous fault (${by.join(', ')}) on an earlier copy${relaysOf(copies.map((copy) => copy.transaction))}`,
        });
      } else {
        problems.push({
          kind: 'unexplained-duplicate',
          id: message.id,
          reason:
            `received ${count} times; ${unexplained} of the ${count - 1} copies before the last have no fault after their own dot` +
            (by.length > 0 ? ` (the others: ${by.join(', ')})` : '') +
            `; ${wire.heard} copy(ies) answered 2xx to a sender that heard it` +
            relaysOf(copies.map((copy) => copy.transaction)),
        });
      }
    }

    const notToBeSent = NOT_TO_BE_SENT.has(message.expectedFate) || NOT_TO_BE_SENT.has(view.status);
    if (count > 0 && notToBeSent) {
      problems.push({
        kind: 'unexpected',
        id: message.id,
        reason: `received ${count} time(s), but expected ${message.expectedFate} and ended ${view.status}`,
      });
    }

    const sendAtMs = message.sendAtMs;
    if (sendAtMs !== undefined && Number.isFinite(sendAtMs)) {
      const early = wire.transactions.filter((t) => t.mailFromAtMs < sendAtMs - EARLY_TOLERANCE_MS);
      if (early.length > 0) {
        const first = Math.min(...early.map((t) => t.mailFromAtMs));
        problems.push({
          kind: 'early',
          id: message.id,
          reason: `the relay saw ${early.length} attempt(s) before its send_at, the first ${sendAtMs - first} ms early`,
        });
      }
    }

    const wrongFate = (reason: string) => problems.push({ kind: 'wrong-fate', id: message.id, reason });
    if (!TERMINAL.has(view.status)) continue;
    if (!ALLOWED_STATUSES[message.expectedFate].has(view.status)) {
      wrongFate(`expected ${message.expectedFate}, ended ${view.status}`);
      continue;
    }
    if (view.status === 'sent') {
      if (hold && count > 0 && !copies.some((copy) => replyReachedSender(copy.transaction))) {
        wrongFate(
          `its on_ambiguous policy is hold and no 250 to its final dot reached its sender (${copies.map((copy) => copy.explanation ?? copy.transaction.fault).join(', ')}), so it must end unknown, but it ended sent`,
        );
      }
      continue;
    }
    // The expected-fate check above is all that `cancelled`, `superseded` and `expired` need; their
    // `unknown` (after a kill under the claim) is believed on its cause below, as any other.
    if (!BELIEVED_ON_CAUSE.has(view.status)) continue;
    // A copy of a message that ended suppressed is counted `unexpected` above: one problem is enough.
    if (view.status === 'suppressed' && count > 0) continue;
    const reason = endUnbelievable(view.status, message, wire, copies, {
      kills: input.kills,
      cuts,
      maxAttempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      suppressed: new Set((input.suppressed ?? []).map((address) => address.toLowerCase())),
    });
    if (reason !== null) wrongFate(reason);
  }

  const kills = input.kills.map((kill) => ({
    ...kill,
    afterTheDot: input.transactions
      .filter((transaction) => killCut(kill, transaction, endedByAFault(transaction)))
      .map((transaction) => copyId(transaction) ?? '(no id)'),
  }));

  const count = (kind: Problem['kind']) => problems.filter((problem) => problem.kind === kind).length;
  const counts = {
    accepted: input.accepted.length,
    received,
    deliveredOnce,
    lost: count('lost'),
    duplicated,
    explainedDuplicates: explained.length,
    unexplainedDuplicates: count('unexplained-duplicate'),
    unexpected: count('unexpected'),
    wrongFate: count('wrong-fate'),
    early: count('early'),
    transactions: input.transactions.length,
    refusedCopies,
    explainedCopies,
    kills: input.kills.length,
  };
  return {
    ok: problems.length === 0,
    counts,
    explainedBy,
    copiesByRelay,
    byStatus,
    byExpectedFate,
    problems,
    explained,
    transactions,
    kills,
  };
}

/** Where the copies went, in order, when the run had several relays: ` (at primary, backup)`. */
function relaysOf(copies: readonly SmtpTransaction[]): string {
  const relays = copies.flatMap((copy) => (copy.relay === undefined ? [] : [copy.relay]));
  return relays.length === 0 ? '' : ` (at ${relays.join(', ')})`;
}

/** A one-screen text report: the counts, the statuses, and the first few problems of each kind. */
export function formatReport(result: CheckResult, title = 'Postdate chaos check'): string {
  const c = result.counts;
  const lines = [
    `${title}: ${result.ok ? 'PASS' : 'FAIL'}`,
    `  accepted ${c.accepted}   SMTP transactions ${c.transactions}   copies received ${c.received}   delivered exactly once ${c.deliveredOnce}   refused after the dot ${c.refusedCopies}`,
    `  lost ${c.lost}   duplicated ${c.duplicated} (explained ${c.explainedDuplicates}, unexplained ${c.unexplainedDuplicates})   unexpected ${c.unexpected}   wrong fate ${c.wrongFate}   early ${c.early}`,
    `  copies explained by a fault after the dot ${c.explainedCopies}: ${formatCounts(result.explainedBy)}   kills ${c.kills}`,
    ...(Object.keys(result.copiesByRelay ?? {}).length > 0
      ? [`  copies by relay: ${formatCounts(result.copiesByRelay)}`]
      : []),
    `  final status: ${formatCounts(result.byStatus)}`,
    `  expected fate: ${formatCounts(result.byExpectedFate)}`,
  ];
  const kinds: Problem['kind'][] = ['lost', 'unexplained-duplicate', 'unexpected', 'wrong-fate', 'early'];
  for (const kind of kinds) {
    const ofKind = result.problems.filter((problem) => problem.kind === kind);
    if (ofKind.length === 0) continue;
    lines.push(`  ${kind} (${ofKind.length}):`);
    for (const problem of ofKind.slice(0, 5)) lines.push(`    ${problem.id}: ${problem.reason}`);
    if (ofKind.length > 5) lines.push(`    … ${ofKind.length - 5} more in the JSON report`);
  }
  return lines.join('\n');
}

function formatCounts(counts: Readonly<Record<string, number>>): string {
  const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? '(none)' : entries.map(([key, value]) => `${key} ${value}`).join(', ');
}
