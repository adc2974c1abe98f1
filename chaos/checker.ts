/**
 * The total-queue checker of the chaos and restart runs (in the spirit of Jepsen's total-queue
 * checker): from what the clients were told (the accepted messages and the fate each should
 * reach), what the API says at the end (status and attempt history of each message), and what
 * the SMTP server received (one entry per copy whose body it read in full), it counts per message:
 *
 * - lost: accepted but not terminal at the end (stuck), missing from the API, or `sent` and
 *   never received;
 * - duplicated: received more than once; a duplicate is explained when the message's history
 *   records at least one ambiguous attempt per extra copy (SMTP cannot promise exactly-once when
 *   the connection breaks after the final dot), otherwise it is an unexplained duplicate;
 * - unexpected: a copy received for an id never accepted, or for a message that was
 *   cancelled, superseded or expired (by its expected fate or its final status);
 * - wrong fate: the final status contradicts what the client was told (e.g. a cancel answered
 *   200 but the message ended `sent`).
 *
 * Pure: no I/O, no clock. `chaos/checkReport.ts` prints and writes its result.
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
] as const;

/**
 * What the client's answers promise about a message:
 * - `send`: it should be delivered (or end `failed`/`dead`/`unknown` when the relay refused it for
 *   good, which the history shows: those are truthful terminal states, not losses);
 * - `cancelled`: DELETE answered 200 before any send began;
 * - `superseded`: its group's head was raised above its version before it was due;
 * - `expired`: its `not_after` passed while the relay kept refusing it;
 * - `send-or-superseded`: its group was raised, but the client saw the answer only shortly before
 *   the message was due, so either end is right (a copy may be received only if it ended `sent`).
 */
export type ExpectedFate = 'send' | 'cancelled' | 'superseded' | 'expired' | 'send-or-superseded';

export interface AcceptedMessage {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly expectedFate: ExpectedFate;
  /** How the client got its answer (e.g. which process, after how many tries): shown with a loss. */
  readonly acceptedBy?: string;
}

/** One attempt of the API's history (the fields the checker reads). */
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

/** One copy the SMTP server received in full (it read the final dot). */
export interface ReceivedCopy {
  /** The X-Postdate-Id header, or the id parsed from `Message-ID: <{id}@domain>`. */
  readonly postdateId: string | null;
  readonly messageId: string | null;
  /**
   * What the server did after the final dot. `accepted` is a delivery; `dropped` and `stalled` are
   * deliveries too as far as the receiver is concerned (it has the body; the sender cannot know);
   * `refused` (4xx/5xx after the dot) is not a delivery.
   */
  readonly outcome: 'accepted' | 'dropped' | 'stalled' | 'refused';
}

export interface CheckInput {
  readonly accepted: readonly AcceptedMessage[];
  /** Keyed by message id; a missing entry or `null` means the API does not know the message. */
  readonly views: Readonly<Record<string, FinalView | null>>;
  readonly smtpLog: readonly ReceivedCopy[];
}

export type Problem =
  | { readonly kind: 'lost'; readonly id: string; readonly reason: string }
  | { readonly kind: 'unexplained-duplicate'; readonly id: string; readonly reason: string }
  | { readonly kind: 'unexpected'; readonly id: string; readonly reason: string }
  | { readonly kind: 'wrong-fate'; readonly id: string; readonly reason: string };

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
    readonly ambiguousAttempts: number;
    readonly refusedCopies: number;
  };
  readonly byStatus: Readonly<Record<string, number>>;
  readonly byExpectedFate: Readonly<Record<string, number>>;
  readonly problems: readonly Problem[];
  /** Duplicates that the history explains: id, copies received, ambiguous attempts recorded. */
  readonly explained: readonly { readonly id: string; readonly copies: number; readonly ambiguous: number }[];
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);
const NOT_TO_BE_SENT: ReadonlySet<string> = new Set(['cancelled', 'superseded', 'expired']);

/** The final statuses each expected fate allows. */
const ALLOWED_STATUSES: Readonly<Record<ExpectedFate, ReadonlySet<string>>> = {
  send: new Set(['sent', 'failed', 'dead', 'unknown']),
  cancelled: new Set(['cancelled']),
  superseded: new Set(['superseded']),
  // A message that runs out of attempts before its deadline is `dead`: truthful, not delivered.
  expired: new Set(['expired', 'dead']),
  'send-or-superseded': new Set(['sent', 'failed', 'dead', 'unknown', 'superseded']),
};

/** The message id of a copy: X-Postdate-Id, else the local part of `<{id}@domain>`. */
export function copyId(copy: ReceivedCopy): string | null {
  if (copy.postdateId) return copy.postdateId.trim();
  const match = copy.messageId ? /^<?([^@<>\s]+)@/.exec(copy.messageId.trim()) : null;
  return match?.[1] ?? null;
}

export function isDelivery(copy: ReceivedCopy): boolean {
  return copy.outcome !== 'refused';
}

export function checkRun(input: CheckInput): CheckResult {
  const problems: Problem[] = [];
  const explained: { id: string; copies: number; ambiguous: number }[] = [];
  const acceptedIds = new Map<string, AcceptedMessage>();
  for (const message of input.accepted) acceptedIds.set(message.id, message);

  const copies = new Map<string, number>();
  let received = 0;
  let refusedCopies = 0;
  for (const copy of input.smtpLog) {
    if (!isDelivery(copy)) {
      refusedCopies += 1;
      continue;
    }
    received += 1;
    const id = copyId(copy);
    if (id === null || !acceptedIds.has(id)) {
      problems.push({
        kind: 'unexpected',
        id: id ?? '(no id)',
        reason: 'received a copy of a message that was never accepted',
      });
      continue;
    }
    copies.set(id, (copies.get(id) ?? 0) + 1);
  }

  const byStatus: Record<string, number> = {};
  const byExpectedFate: Record<string, number> = {};
  let deliveredOnce = 0;
  let duplicated = 0;
  let ambiguousAttempts = 0;
  for (const message of input.accepted) {
    byExpectedFate[message.expectedFate] = (byExpectedFate[message.expectedFate] ?? 0) + 1;
    const view = input.views[message.id] ?? null;
    const count = copies.get(message.id) ?? 0;
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
    const ambiguous = view.history.filter((entry) => entry.outcome === 'ambiguous').length;
    ambiguousAttempts += ambiguous;

    if (!TERMINAL.has(view.status)) {
      problems.push({
        kind: 'lost',
        id: message.id,
        reason: `still ${view.status} at the end of the run (not terminal)`,
      });
    } else if (view.status === 'sent' && count === 0) {
      problems.push({ kind: 'lost', id: message.id, reason: 'sent, but the SMTP server never received it' });
    }

    if (count > 1) {
      duplicated += 1;
      if (count - 1 <= ambiguous) {
        explained.push({ id: message.id, copies: count, ambiguous });
      } else {
        problems.push({
          kind: 'unexplained-duplicate',
          id: message.id,
          reason: `received ${count} times, but its history records ${ambiguous} ambiguous attempt(s)`,
        });
      }
    }

    if (count > 0 && (NOT_TO_BE_SENT.has(message.expectedFate) || NOT_TO_BE_SENT.has(view.status))) {
      problems.push({
        kind: 'unexpected',
        id: message.id,
        reason: `received ${count} time(s), but expected ${message.expectedFate} and ended ${view.status}`,
      });
    }

    if (TERMINAL.has(view.status) && !ALLOWED_STATUSES[message.expectedFate].has(view.status)) {
      problems.push({
        kind: 'wrong-fate',
        id: message.id,
        reason: `expected ${message.expectedFate}, ended ${view.status}`,
      });
    }
  }

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
    ambiguousAttempts,
    refusedCopies,
  };
  return {
    ok: problems.length === 0,
    counts,
    byStatus,
    byExpectedFate,
    problems,
    explained,
  };
}

/** A one-screen text report: the counts, the statuses, and the first few problems of each kind. */
export function formatReport(result: CheckResult, title = 'Postdate chaos check'): string {
  const c = result.counts;
  const lines = [
    `${title}: ${result.ok ? 'PASS' : 'FAIL'}`,
    `  accepted ${c.accepted}   copies received ${c.received}   delivered exactly once ${c.deliveredOnce}   refused after DATA ${c.refusedCopies}`,
    `  lost ${c.lost}   duplicated ${c.duplicated} (explained ${c.explainedDuplicates}, unexplained ${c.unexplainedDuplicates})   unexpected ${c.unexpected}   wrong fate ${c.wrongFate}`,
    `  ambiguous attempts recorded ${c.ambiguousAttempts}`,
    `  final status: ${formatCounts(result.byStatus)}`,
    `  expected fate: ${formatCounts(result.byExpectedFate)}`,
  ];
  const kinds: Problem['kind'][] = ['lost', 'unexplained-duplicate', 'unexpected', 'wrong-fate'];
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
