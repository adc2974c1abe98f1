import { describe, expect, it } from 'vitest';
import { postfixDelays, relayAcceptance } from '../../bench/burst.js';
import type { TapTransaction } from '../../chaos/smtpTap.js';

describe('postfixDelaysMs: Postfix’s own part of each relayed message, from its maillog', () => {
  it('reads delay= and delays=a/b/c/d of every sent line and nothing else', () => {
    const maillog = [
      'Dec  2 16:07:40.123 postfix-bench/smtpd[1]: connect from localhost[127.0.0.1]',
      'Dec  2 16:07:41.500 postfix-bench/smtp[2]: 4ABC: to=<bench@example.com>, relay=127.0.0.1[127.0.0.1]:2525, delay=1.2, delays=1/0.01/0.1/0.09, dsn=2.0.0, status=sent (250 OK)',
      'Dec  2 16:07:41.600 postfix-bench/smtp[2]: 4ABD: to=<bench@example.com>, relay=none, delay=0.3, delays=0.2/0/0.1/0, dsn=4.4.1, status=deferred (connect refused)',
      'Dec  2 16:07:41.700 postfix-bench/smtp[3]: 4ABE: to=<bench@example.com>, relay=127.0.0.1[127.0.0.1]:2525, delay=0.05, delays=0.01/0/0.02/0.02, dsn=2.0.0, status=sent (250 OK)',
    ].join('\n');
    expect(postfixDelays(maillog)).toEqual([
      { totalMs: 1200, beforeQueueManagerMs: 1000, inQueueManagerMs: 10, connectMs: 100, transmitMs: 90 },
      { totalMs: 50, beforeQueueManagerMs: 10, inQueueManagerMs: 0, connectMs: 20, transmitMs: 20 },
    ]);
  });
});

describe('relayAcceptance: a message reached the relay when the relay answered 250 to its final dot', () => {
  const transaction = (over: Partial<TapTransaction>): TapTransaction => ({
    connection: 1,
    index: 0,
    upstreamPort: undefined,
    clientPort: undefined,
    connectionOpenedAtMs: 0,
    mailFromAtMs: 0,
    dataCommandAtMs: null,
    recipients: [],
    finalDotAtMs: null,
    postdateId: null,
    messageId: null,
    reply: null,
    clientCommandAfterDotAtMs: null,
    clientCommandAfterDot: null,
    closedAtMs: null,
    closedBy: null,
    ...over,
  });
  const reply = (code: number, atMs: number) => ({ code, text: `${code} ok`, atMs, delivered: true });
  const tap = (transactions: TapTransaction[]) => ({ transactions: () => transactions });

  it('answers the first 250 of a Postdate id, not a refusal before it or a second copy after it', () => {
    const acceptedAt = relayAcceptance(
      tap([
        transaction({ postdateId: 'msg_1', reply: reply(451, 100) }),
        transaction({ postdateId: 'msg_1', reply: reply(250, 200) }),
        transaction({ postdateId: 'msg_1', reply: reply(250, 300) }),
      ]),
    );
    expect(acceptedAt('msg_1')).toBe(200);
  });

  it('finds a baseline message by its Message-ID with or without angle brackets', () => {
    const acceptedAt = relayAcceptance(
      tap([transaction({ messageId: '<a@burst.bench>', reply: reply(250, 42) })]),
    );
    expect(acceptedAt('<a@burst.bench>')).toBe(42);
    expect(acceptedAt('a@burst.bench')).toBe(42);
  });

  it('has no time for a message the relay never accepted, or one still waiting for its reply', () => {
    const acceptedAt = relayAcceptance(
      tap([
        transaction({ postdateId: 'msg_2', reply: reply(554, 10) }),
        transaction({ postdateId: 'msg_3' }),
      ]),
    );
    expect(acceptedAt('msg_2')).toBeNaN();
    expect(acceptedAt('msg_3')).toBeNaN();
    expect(acceptedAt('msg_4')).toBeNaN();
  });
});
