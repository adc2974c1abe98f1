import { describe, expect, it } from 'vitest';
import {
  type AcceptedMessage,
  type CheckInput,
  type CheckResult,
  checkRun,
  type FinalView,
  type SessionCut,
  type SmtpTransaction,
} from '../../chaos/checker.js';

/**
 * The checker's specification with two relays (issue 31, docs/design.md §15 Failover across
 * relays): what either relay received is what "the relay received" — a copy at either counts as a
 * delivery, a copy at both is a duplicate unless a fault the harness injected on the earlier copy
 * explains it. Each relay has its own tap and its own outage proxy, so a cut names its relay: the
 * client ports of two relays' sessions may coincide, and a cut at one relay explains nothing at the
 * other. Synthetic histories, written from the contract, not from the checker's code.
 */

const message = (id: string): AcceptedMessage => ({
  id,
  idempotencyKey: `key-${id}`,
  expectedFate: 'send',
  recipients: [`r-${id}@chaos.test`],
});
const ended = (id: string, status: string): FinalView => ({ id, status, history: [] });

/** A transaction at `relay` whose 250 the client heard at dot + 5 ms; it then sent QUIT and closed. */
function copy(relay: string, id: string, dotAt: number, clientPort: number): SmtpTransaction {
  return {
    relay,
    // Each relay's tap numbers its connections from 0: the numbers of two relays coincide.
    connection: 0,
    index: 0,
    postdateId: id,
    messageId: `<${id}@postdate.local>`,
    fault: 'accept',
    outcome: 'accepted',
    mailFromAtMs: dotAt - 30,
    dataCommandAtMs: dotAt - 10,
    recipients: [{ address: `r-${id}@chaos.test`, code: 250, atMs: dotAt - 20 }],
    clientPort,
    finalDotAtMs: dotAt,
    reply: { code: 250, text: '250 2.0.0 Ok: queued', atMs: dotAt + 5, delivered: true },
    clientCommandAfterDotAtMs: dotAt + 6,
    closedAtMs: dotAt + 50,
    closedBy: 'client',
  };
}
/** The relay read the dot, then its outage cut the session before the 250 went. */
function cutAtDot(relay: string, id: string, dotAt: number, clientPort: number): SmtpTransaction {
  return {
    ...copy(relay, id, dotAt, clientPort),
    reply: null,
    clientCommandAfterDotAtMs: null,
    closedAtMs: dotAt + 10,
    closedBy: 'server',
  };
}
const outageCut = (relay: string, atMs: number, clientPort: number): SessionCut => ({
  kind: 'relay-outage',
  relay,
  atMs,
  clientPort,
});

function check(input: Partial<CheckInput>): CheckResult {
  return checkRun({ accepted: [], views: {}, transactions: [], kills: [], cuts: [], ...input });
}
const kinds = (result: CheckResult) => result.problems.map((problem) => problem.kind);

describe('two relays: a copy at each is a duplicate unless a fault explains the first', () => {
  it('FAILS: received once at each relay, the first answered 250 to a sender that heard it', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [copy('primary', 'A', 1_000, 41_000), copy('backup', 'A', 5_000, 42_000)],
    });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
    expect(result.problems[0]?.reason).toMatch(/primary.*backup|at 2 relays/);
  });

  it('FAILS: an outage cut at the other relay, on the same client port, explains nothing', () => {
    // The primary's copy was heard; the backup's outage cut a session of its own on port 41000.
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [cutAtDot('primary', 'A', 1_000, 41_000), copy('backup', 'A', 5_000, 42_000)],
      cuts: [outageCut('backup', 1_005, 41_000)],
    });
    expect(kinds(result)).toEqual(['unexplained-duplicate']);
  });

  it('PASSES: the primary outage cut the first copy past its dot, the second left through the backup', () => {
    const result = check({
      accepted: [message('A')],
      views: { A: ended('A', 'sent') },
      transactions: [cutAtDot('primary', 'A', 1_000, 41_000), copy('backup', 'A', 5_000, 41_000)],
      cuts: [outageCut('primary', 1_005, 41_000)],
    });
    expect(result.problems).toEqual([]);
    expect(result.explained).toEqual([{ id: 'A', copies: 2, explainedCopies: 1, by: ['relay-outage'] }]);
  });
});

describe('two relays: an honest failover PASSES', () => {
  it('PASSES: the primary refused every connection at the greeting (nothing reached its tap), each message once at the backup, then once at the primary after failback', () => {
    const result = check({
      accepted: [message('A'), message('B'), message('C')],
      views: { A: ended('A', 'sent'), B: ended('B', 'sent'), C: ended('C', 'sent') },
      transactions: [
        copy('backup', 'A', 1_000, 41_000),
        copy('backup', 'B', 2_000, 41_001),
        copy('primary', 'C', 9_000, 41_000),
      ],
    });
    expect(result.problems).toEqual([]);
    expect(result.counts.deliveredOnce).toBe(3);
    expect(result.copiesByRelay).toEqual({ backup: 2, primary: 1 });
  });

  it('FAILS: sent, but received by neither relay', () => {
    const result = check({
      accepted: [message('A'), message('B')],
      views: { A: ended('A', 'sent'), B: ended('B', 'sent') },
      transactions: [copy('backup', 'A', 1_000, 41_000)],
    });
    expect(kinds(result)).toEqual(['lost']);
  });
});
