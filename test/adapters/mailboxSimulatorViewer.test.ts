import { afterEach, describe, expect, it } from 'vitest';
import { MailboxSimulator, showSimulatedMailIn } from '../../lambdas/adapters/MailboxSimulator.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';

/**
 * The simulator's local hook (DESIGN §14: test messages "visible in the mail viewer";
 * docs/decisions/0094-test-mail-in-the-viewer.md): a registered viewer is told of each message whose
 * body the simulator took, with the recipients a relay's sink would hold it for, and of nothing a
 * relay would have refused before DATA. Without one (AWS) the simulator answers exactly the same.
 */

const at = (mailbox: string) => `${mailbox}@simulator.postdate.test`;
const email = (envelope: string[]): OutgoingEmail => ({
  id: '01JTESTMESSAGE0000000000000',
  from: 'ops@example.com',
  to: envelope,
  cc: [],
  bcc: [],
  replyTo: null,
  subject: 'Hello',
  text: 'Hello',
  html: null,
  headers: {},
  envelope,
});

describe('the mailbox simulator and the local viewer', () => {
  afterEach(() => showSimulatedMailIn(undefined));

  it('shows what it took, for the accepted recipients only, and nothing it refused', async () => {
    const shown: { id: string; recipients: readonly string[] }[] = [];
    showSimulatedMailIn((message, recipients) => shown.push({ id: message.id, recipients }));
    const first = new MailboxSimulator({ attemptsBefore: 0 });

    await first.send(email([at('delivered'), at('bounce'), 'Ada <ada@example.org>']));
    expect(shown).toEqual([
      { id: '01JTESTMESSAGE0000000000000', recipients: [at('delivered'), 'Ada <ada@example.org>'] },
    ]);

    shown.length = 0;
    await first.send(email([at('bounce'), at('reject')]));
    await first.send(email([at('defer')]));
    expect(shown).toEqual([]);

    // The body went out before the cut: a relay's sink holds it, whatever the outcome.
    const ambiguous = await first.send(email([at('ambiguous')]));
    expect(ambiguous.delivered).toBe(false);
    expect(shown.map((entry) => entry.recipients)).toEqual([[at('ambiguous')]]);

    shown.length = 0;
    await new MailboxSimulator({ attemptsBefore: 1 }).send(email([at('defer')]));
    expect(shown.map((entry) => entry.recipients)).toEqual([[at('defer')]]);
  });

  it('answers the same with a viewer as without one', async () => {
    const envelope = [at('delivered'), at('bounce'), at('defer'), 'someone@example.org'];
    const without = await new MailboxSimulator({ attemptsBefore: 0 }).send(email(envelope));
    showSimulatedMailIn(() => undefined);
    const withViewer = await new MailboxSimulator({ attemptsBefore: 0 }).send(email(envelope));
    expect({ ...withViewer, durationMs: 0 }).toEqual({ ...without, durationMs: 0 });
  });
});
