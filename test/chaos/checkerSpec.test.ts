import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AcceptedMessage,
  type CheckInput,
  type CheckResult,
  checkRun,
  DOT_TRANSIT_MS,
  EXPLAIN_SLACK_MS,
  type FinalView,
  type KillRecord,
  type SessionCut,
  type SmtpTransaction,
} from '../../chaos/checker.js';

/**
 * The checker's own specification (issue 35): for each way to break the promise "nothing lost,
 * nothing doubled, nothing reported falsely", a synthetic history of what the harness injected and
 * what the relay received, which must FAIL; beside it, the honest variant of the same history, which
 * must PASS. Written from DESIGN §2 and §5 and the harness's record (chaos/checker.ts's input), not
 * from the checker's code: a checker that passes a broken history proves nothing.
 */

const message = (id: string, extra: Partial<AcceptedMessage> = {}): AcceptedMessage => ({
  id,
  idempotencyKey: `key-${id}`,
  expectedFate: 'send',
  recipients: [`r-${id}@chaos.test`],
  ...extra,
});
const ended = (id: string, status: string): FinalView => ({ id, status, history: [] });

let port = 40_000;
/** A transaction whose 250 the client heard at dot + 5 ms; it then sent QUIT and closed. */
function copy(id: string, dotAt: number, extra: Partial<SmtpTransaction> = {}): SmtpTransaction {
  port += 1;
  return {
    connection: port,
    index: 0,
    postdateId: id,
    messageId: `<${id}@postdate.local>`,
    fault: 'accept',
    outcome: 'accepted',
    mailFromAtMs: dotAt - 30,
    dataCommandAtMs: dotAt - 10,
    recipients: [{ address: `r-${id}@chaos.test`, code: 250, atMs: dotAt - 20 }],
    clientPort: port,
    finalDotAtMs: dotAt,
    reply: { code: 250, text: '250 2.0.0 Ok: queued', atMs: dotAt + 5, delivered: true },
    clientCommandAfterDotAtMs: dotAt + 6,
    closedAtMs: dotAt + 50,
    closedBy: 'client',
    ...extra,
  };
}
/** The relay read the dot, then the connection died at `closedAt` with no reply heard. */
const cutCopy = (id: string, dotAt: number, closedAt: number, extra: Partial<SmtpTransaction> = {}) =>
  copy(id, dotAt, { reply: null, clientCommandAfterDotAtMs: null, closedAtMs: closedAt, ...extra });
/** The relay dropped the connection right after reading the dot (an injected fault). */
const droppedCopy = (id: string, dotAt: number) =>
  cutCopy(id, dotAt, dotAt + 2, { fault: 'data-drop', outcome: 'dropped', closedBy: 'server' });
/** A transaction refused at RCPT TO: no body, so no id; only the recipient names the message. */
const refusedAtRcpt = (id: string, at: number, code: number): SmtpTransaction => ({
  ...copy(id, at),
  postdateId: null,
  messageId: null,
  fault: code >= 500 ? 'rcpt-550' : 'rcpt-451',
  outcome: null,
  dataCommandAtMs: null,
  recipients: [{ address: `r-${id}@chaos.test`, code, atMs: at }],
  finalDotAtMs: null,
  reply: null,
  clientCommandAfterDotAtMs: at + 2,
});
const sigkill = (atMs: number): KillRecord => ({ kind: 'sender-sigkill', atMs });
const outageCut = (atMs: number, transaction: SmtpTransaction): SessionCut => ({
  kind: 'relay-outage',
  atMs,
  clientPort: transaction.clientPort ?? -1,
});

function check(input: Partial<CheckInput>): CheckResult {
  return checkRun({ accepted: [], views: {}, transactions: [], kills: [], cuts: [], ...input });
}
const kinds = (result: CheckResult) => result.problems.map((problem) => problem.kind);

describe('the checker FAILS a double send, and PASSES the same copies when a fault explains the first', () => {
  it('FAILS: two copies, the first answered 250 to a sender that heard it', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [copy('A', 1_000), copy('A', 60_000)],
    });
    expect(result.ok).toBe(false);
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('PASSES: the relay dropped the connection after reading the first dot', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [droppedCopy('A', 1_000), copy('A', 60_000)],
    });
    expect(result.problems).toEqual([]);
  });
});

describe('the checker FAILS a lie about a copy the relay holds, and PASSES the truthful ends', () => {
  const held = [droppedCopy('A', 1_000)];

  it('FAILS: the relay holds the only copy (ambiguous to the sender), the message ended failed', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'failed') },
      transactions: held,
    });
    expect(kinds(result)).toEqual(['wrong-fate']);
  });

  it('FAILS: the same copy ended dead, or unknown under the retry policy', () => {
    for (const status of ['dead', 'unknown']) {
      const result = check({
        accepted: [message('A')],
        views: { A: ended('A', status) },
        transactions: held,
      });
      expect(kinds(result)).toEqual(['wrong-fate']);
    }
  });

  it('FAILS: a permanent refusal came, but before the copy (the copy still reached the recipient)', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'failed') },
      transactions: [refusedAtRcpt('A', 500, 550), droppedCopy('A', 1_000)],
    });
    expect(kinds(result)).toEqual(['wrong-fate']);
  });

  it('PASSES: retried and sent; unknown under hold; failed when a later RCPT TO got a 5xx; dead after its attempts ran out', () => {
    const result = check({
      accepted: [message('A'), message('H', { onAmbiguous: 'hold' }), message('F'), message('D')],
      views: {
        A: ended('A', 'sent'),
        H: ended('H', 'unknown'),
        F: ended('F', 'failed'),
        D: ended('D', 'dead'),
      },
      transactions: [
        droppedCopy('A', 1_000),
        copy('A', 9_000),
        droppedCopy('H', 1_000),
        droppedCopy('F', 1_000),
        refusedAtRcpt('F', 9_000, 550),
        droppedCopy('D', 1_000),
        refusedAtRcpt('D', 9_000, 451),
        refusedAtRcpt('D', 19_000, 451),
      ],
      // Three attempts the relay saw: POSTDATE_MAX_ATTEMPTS of this scenario.
      maxAttempts: 3,
    });
    expect(result.problems).toEqual([]);
  });
});

describe('the checker FAILS a copy sent after a heard 250, whatever cut a later copy', () => {
  it('FAILS: the first copy was heard and uncut; the second, a minute later, was cut by a kill', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [copy('A', 1_000), cutCopy('A', 60_000, 60_010)],
      kills: [sigkill(60_005)],
    });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('FAILS whatever order the harness listed the copies in', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [cutCopy('A', 60_000, 60_010), copy('A', 1_000)],
      kills: [sigkill(60_005)],
    });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('PASSES: the kill cut the first copy, and the second was heard', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [copy('A', 60_000), cutCopy('A', 1_000, 1_010)],
      kills: [sigkill(1_005)],
    });
    expect(result.problems).toEqual([]);
  });
});

describe('the checker FAILS a cut the harness did not inject, and PASSES the one it recorded', () => {
  const first = cutCopy('A', 1_000, 1_500);
  const history = { accepted: [message('A')], views: { A: ended('A', 'sent') } };

  it('FAILS: the connection died after the dot with no reply, and nothing the harness did explains it', () => {
    const result = check({ ...history, transactions: [first, copy('A', 9_000)] });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('FAILS: the outage cut another session, not this one', () => {
    const other = copy('B', 1_000);
    const result = check({
      ...history,
      transactions: [first, copy('A', 9_000)],
      cuts: [outageCut(1_499, other)],
    });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('FAILS: the session was cut before its dot went (the relay read a dot sent after the cut)', () => {
    const result = check({
      ...history,
      transactions: [first, copy('A', 9_000)],
      cuts: [outageCut(1_000 - DOT_TRANSIT_MS - 1, first)],
    });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('PASSES: the tap read the dot 18 ms after the cut (the proxy had passed it on before; seen in a run)', () => {
    const result = check({
      ...history,
      transactions: [first, copy('A', 9_000)],
      cuts: [outageCut(982, first)],
    });
    expect(result.problems).toEqual([]);
  });

  it('PASSES: the relay outage began after the dot and cut this very session', () => {
    const result = check({
      ...history,
      transactions: [first, copy('A', 9_000)],
      cuts: [outageCut(1_499, first)],
    });
    expect(result.problems).toEqual([]);
    expect(result.explained).toEqual([{ id: 'A', copies: 2, explainedCopies: 1, by: ['relay-outage'] }]);
  });
});

describe('the checker FAILS a kill that came after the close, and PASSES one that came before it', () => {
  const history = (killAt: number) =>
    check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [cutCopy('A', 1_000, 1_010), copy('A', 9_000)],
      kills: [sigkill(killAt)],
    });

  it('FAILS: the kill came 1.7 s after the connection had already closed', () => {
    expect(kinds(history(1_010 + 1_700))).toEqual(['unexplained-duplicate']);
  });

  it('FAILS: the kill came before the dot, or long before the close', () => {
    expect(kinds(history(1_010 - EXPLAIN_SLACK_MS - 1))).toEqual(['unexplained-duplicate']);
  });

  it('PASSES: the kill came after the dot and the connection closed with it', () => {
    expect(history(1_005).problems).toEqual([]);
    expect(history(1_010).problems).toEqual([]);
  });
});

describe('the checker FAILS a lost message, and PASSES a delivered one', () => {
  it('FAILS: reported sent, never received; still sending at the end; unknown to the API', () => {
    const result = check({
      accepted: [message('A'), message('B'), message('C')],
      views: { A: ended('A', 'sent'), B: ended('B', 'sending'), C: null },
      transactions: [refusedAtRcpt('A', 1_000, 451)],
    });
    expect(kinds(result)).toEqual(['lost', 'lost', 'lost']);
  });

  it('PASSES: received once and ended sent', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [refusedAtRcpt('A', 500, 451), copy('A', 1_000)],
    });
    expect(result.problems).toEqual([]);
    expect(result.counts.deliveredOnce).toBe(1);
  });
});

describe('the checker FAILS a wrong fate, and PASSES the right one', () => {
  it('FAILS: a cancelled message sent; a 250 heard yet failed; failed with no 5xx from the relay', () => {
    const result = check({
      accepted: [message('C', { expectedFate: 'cancelled' }), message('H'), message('N')],
      views: { C: ended('C', 'sent'), H: ended('H', 'failed'), N: ended('N', 'failed') },
      transactions: [copy('C', 1_000), copy('H', 1_000), refusedAtRcpt('N', 1_000, 451)],
    });
    expect(kinds(result).sort()).toEqual(['unexpected', 'wrong-fate', 'wrong-fate', 'wrong-fate']);
  });

  it('PASSES: cancelled and never sent; failed after a 5xx at RCPT TO; failed after a 554 to the dot', () => {
    const refusedAtDot = copy('D', 1_000, {
      fault: 'data-554',
      outcome: 'refused',
      reply: { code: 554, text: '554 5.6.0 Content rejected', atMs: 1_005, delivered: true },
    });
    const result = check({
      accepted: [message('C', { expectedFate: 'cancelled' }), message('F'), message('D')],
      views: { C: ended('C', 'cancelled'), F: ended('F', 'failed'), D: ended('D', 'failed') },
      transactions: [refusedAtRcpt('F', 1_000, 550), refusedAtDot],
    });
    expect(result.problems).toEqual([]);
  });
});

describe('the verdict does not depend on the order the harness lists the transactions in', () => {
  it('holds for any order of an honest and a broken history', () => {
    const transactions = [
      droppedCopy('A', 1_000),
      copy('A', 9_000),
      copy('B', 2_000),
      copy('B', 30_000),
      refusedAtRcpt('C', 3_000, 550),
      cutCopy('D', 4_000, 4_010),
      copy('D', 40_000),
    ];
    const input = {
      accepted: [message('A'), message('B'), message('C'), message('D')],
      views: {
        A: ended('A', 'sent'),
        B: ended('B', 'sent'),
        C: ended('C', 'failed'),
        D: ended('D', 'sent'),
      },
      kills: [sigkill(4_005)],
    };
    const expected = check({ ...input, transactions });
    expect(expected.problems).toEqual([expect.objectContaining({ kind: 'unexplained-duplicate', id: 'B' })]);
    fc.assert(
      fc.property(fc.shuffledSubarray(transactions, { minLength: transactions.length }), (shuffled) => {
        const result = check({ ...input, transactions: shuffled });
        expect(result.problems).toEqual(expected.problems);
      }),
    );
  });
});
