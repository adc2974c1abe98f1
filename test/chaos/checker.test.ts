import { describe, expect, it } from 'vitest';
import {
  type AcceptedMessage,
  type CheckInput,
  checkRun,
  copyId,
  type FinalView,
  formatReport,
  type ReceivedCopy,
} from '../../chaos/checker.js';

const accepted = (id: string, expectedFate: AcceptedMessage['expectedFate'] = 'send'): AcceptedMessage => ({
  id,
  idempotencyKey: `key-${id}`,
  expectedFate,
});
const view = (id: string, status: string, outcomes: string[] = []): FinalView => ({
  id,
  status,
  history: outcomes.map((outcome) => ({ outcome })),
});
const copy = (id: string, outcome: ReceivedCopy['outcome'] = 'accepted'): ReceivedCopy => ({
  postdateId: id,
  messageId: `<${id}@postdate.local>`,
  outcome,
});

function run(input: Partial<CheckInput>) {
  return checkRun({ accepted: [], views: {}, smtpLog: [], ...input });
}

describe('checkRun', () => {
  it('passes a clean run: each message to send received once, cancelled ones never', () => {
    const result = run({
      accepted: [accepted('A'), accepted('B'), accepted('C', 'cancelled')],
      views: {
        A: view('A', 'sent', ['sent']),
        B: view('B', 'sent', ['transient', 'sent']),
        C: view('C', 'cancelled'),
      },
      smtpLog: [copy('A'), copy('B', 'refused'), copy('B')],
    });
    expect(result.ok).toBe(true);
    expect(result.problems).toEqual([]);
    expect(result.counts).toMatchObject({
      accepted: 3,
      received: 2,
      deliveredOnce: 2,
      refusedCopies: 1,
      lost: 0,
    });
    expect(result.byStatus).toEqual({ sent: 2, cancelled: 1 });
  });

  it('counts as lost a message the API no longer knows', () => {
    const result = run({ accepted: [accepted('A')], views: { A: null } });
    expect(result.ok).toBe(false);
    expect(result.problems).toEqual([
      { kind: 'lost', id: 'A', reason: expect.stringContaining('does not know') },
    ]);
  });

  it('counts as lost a message that is not terminal at the end', () => {
    for (const status of ['scheduled', 'sending', 'retrying']) {
      const result = run({ accepted: [accepted('A')], views: { A: view('A', status) } });
      expect(result.counts.lost).toBe(1);
      expect(result.ok).toBe(false);
    }
  });

  it('counts as lost a message reported sent that the SMTP server never received', () => {
    const result = run({
      accepted: [accepted('A')],
      views: { A: view('A', 'sent', ['sent']) },
      smtpLog: [copy('A', 'refused')],
    });
    expect(result.counts.lost).toBe(1);
    expect(result.problems[0]?.reason).toContain('never received');
  });

  it('accepts failed, dead and unknown as truthful ends of a message to send', () => {
    const result = run({
      accepted: [accepted('F'), accepted('D'), accepted('U')],
      views: {
        F: view('F', 'failed', ['permanent']),
        D: view('D', 'dead'),
        U: view('U', 'unknown', ['ambiguous']),
      },
      smtpLog: [copy('U', 'dropped')],
    });
    expect(result.ok).toBe(true);
  });

  it('explains a duplicate by an ambiguous attempt in the history', () => {
    const result = run({
      accepted: [accepted('A')],
      views: { A: view('A', 'sent', ['ambiguous', 'sent']) },
      smtpLog: [copy('A', 'dropped'), copy('A')],
    });
    expect(result.ok).toBe(true);
    expect(result.counts).toMatchObject({ duplicated: 1, explainedDuplicates: 1, unexplainedDuplicates: 0 });
    expect(result.explained).toEqual([{ id: 'A', copies: 2, ambiguous: 1 }]);
  });

  it('flags a duplicate without an ambiguous attempt as unexplained', () => {
    const result = run({
      accepted: [accepted('A')],
      views: { A: view('A', 'sent', ['transient', 'sent']) },
      smtpLog: [copy('A'), copy('A')],
    });
    expect(result.ok).toBe(false);
    expect(result.counts.unexplainedDuplicates).toBe(1);
    expect(result.problems[0]).toMatchObject({ kind: 'unexplained-duplicate', id: 'A' });
  });

  it('needs one ambiguous attempt per extra copy', () => {
    const result = run({
      accepted: [accepted('A')],
      views: { A: view('A', 'sent', ['ambiguous', 'sent']) },
      smtpLog: [copy('A', 'stalled'), copy('A'), copy('A')],
    });
    expect(result.counts.unexplainedDuplicates).toBe(1);
  });

  it('flags a copy of a message that was never accepted, or that has no id', () => {
    const result = run({
      accepted: [accepted('A')],
      views: { A: view('A', 'sent', ['sent']) },
      smtpLog: [copy('A'), copy('Z'), { postdateId: null, messageId: null, outcome: 'accepted' }],
    });
    expect(result.counts.unexpected).toBe(2);
    expect(result.problems.map((problem) => problem.id)).toEqual(['Z', '(no id)']);
  });

  it('flags a received copy of a cancelled, superseded or expired message', () => {
    for (const fate of ['cancelled', 'superseded', 'expired'] as const) {
      const result = run({
        accepted: [accepted('A', fate)],
        views: { A: view('A', fate) },
        smtpLog: [copy('A')],
      });
      expect(result.ok).toBe(false);
      expect(result.problems).toEqual([expect.objectContaining({ kind: 'unexpected', id: 'A' })]);
    }
  });

  it('flags a message whose final status contradicts what the client was told', () => {
    const result = run({
      accepted: [accepted('A', 'cancelled'), accepted('B', 'superseded')],
      views: { A: view('A', 'sent', ['sent']), B: view('B', 'cancelled') },
      smtpLog: [copy('A')],
    });
    expect(result.counts.wrongFate).toBe(2);
    expect(result.counts.unexpected).toBe(1);
  });

  it('accepts either end of a message whose group was raised just before it was due', () => {
    const result = run({
      accepted: [
        accepted('A', 'send-or-superseded'),
        accepted('B', 'send-or-superseded'),
        accepted('C', 'send-or-superseded'),
      ],
      views: { A: view('A', 'sent', ['sent']), B: view('B', 'superseded'), C: view('C', 'superseded') },
      smtpLog: [copy('A'), copy('C')],
    });
    expect(result.problems).toEqual([expect.objectContaining({ kind: 'unexpected', id: 'C' })]);
  });

  it('reads the id from the Message-ID when X-Postdate-Id is missing', () => {
    expect(copyId({ postdateId: null, messageId: '<01ABC@postdate.local>', outcome: 'accepted' })).toBe(
      '01ABC',
    );
    expect(copyId({ postdateId: ' 01XYZ ', messageId: null, outcome: 'accepted' })).toBe('01XYZ');
    expect(copyId({ postdateId: null, messageId: 'garbage', outcome: 'accepted' })).toBeNull();
  });
});

describe('formatReport', () => {
  it('fits one screen and names the problems', () => {
    const accepted20 = Array.from({ length: 20 }, (_, index) => accepted(`M${index}`));
    const result = run({
      accepted: accepted20,
      views: Object.fromEntries(accepted20.map((message) => [message.id, view(message.id, 'scheduled')])),
    });
    const text = formatReport(result);
    expect(text.split('\n').length).toBeLessThanOrEqual(24);
    expect(text).toContain('FAIL');
    expect(text).toContain('lost (20)');
    expect(text).toContain('15 more');
  });
});
