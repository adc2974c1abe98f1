import { describe, expect, it } from 'vitest';
import { postfixDelays } from '../../bench/burst.js';

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
