import { describe, expect, it } from 'vitest';
import {
  isMessageStatus,
  isTerminal,
  MESSAGE_STATUS,
  MESSAGE_STATUSES,
  TERMINAL_STATUSES,
} from '../../lambdas/core/messageStatus.js';

describe('message statuses (DESIGN §2)', () => {
  it('are exactly the eleven statuses of the contract', () => {
    expect([...MESSAGE_STATUSES].sort()).toEqual(
      [
        'cancelled',
        'dead',
        'expired',
        'failed',
        'retrying',
        'scheduled',
        'sending',
        'sent',
        'superseded',
        'suppressed',
        'unknown',
      ].sort(),
    );
    for (const [key, value] of Object.entries(MESSAGE_STATUS)) expect(key).toBe(value);
  });
  it('are terminal except scheduled, sending and retrying', () => {
    expect(MESSAGE_STATUSES.filter((status) => !isTerminal(status))).toEqual([
      'scheduled',
      'sending',
      'retrying',
    ]);
    expect(TERMINAL_STATUSES.size).toBe(8);
  });
  it('recognise only their own names', () => {
    expect(isMessageStatus('sent')).toBe(true);
    for (const value of ['SENT', 'pending', '', null, undefined, 1, {}])
      expect(isMessageStatus(value)).toBe(false);
  });
});
