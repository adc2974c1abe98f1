import { describe, expect, it } from 'vitest';
import { MailboxSimulator, simulatedMailbox } from '../../lambdas/adapters/MailboxSimulator.js';
import type { OutgoingEmail } from '../../lambdas/ports/Mailer.js';

/** DESIGN §14: the simulator answers each recipient as a relay would, the same way every time. */

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

describe('the mailbox simulator', () => {
  it('reads only its own mailboxes at simulator.postdate.test, in any case', () => {
    expect(simulatedMailbox('Bounce@Simulator.Postdate.Test')).toBe('bounce');
    expect(simulatedMailbox('bounce@example.com')).toBeNull();
    expect(simulatedMailbox('nobody@simulator.postdate.test')).toBeNull();
    expect(simulatedMailbox('not an address')).toBeNull();
  });

  it('reads its domain as RCPT TO carries it, in A-labels (decision 0192: as the relay gets it)', () => {
    // UTS #46 maps `ſ` and fullwidth letters to ASCII: the envelope says bounce@simulator.postdate.test.
    expect(simulatedMailbox('bounce@\u017Fimulator.postdate.test')).toBe('bounce');
    expect(simulatedMailbox('Desk <reject@\uFF53imulator.postdate.test>')).toBe('reject');
  });

  it('reads a +label after a mailbox as that mailbox, as SES’s simulator does (bounce+run-7@…)', () => {
    expect(simulatedMailbox('bounce+1@simulator.postdate.test')).toBe('bounce');
    expect(simulatedMailbox('Reject+CI-run-7@Simulator.Postdate.Test')).toBe('reject');
    expect(simulatedMailbox('"defer+x"@simulator.postdate.test')).toBe('defer');
    expect(simulatedMailbox('delivered+@simulator.postdate.test')).toBe('delivered');
    // Only a label after one of its mailboxes: anything else is still an ordinary (accepted) address.
    expect(simulatedMailbox('bouncer+1@simulator.postdate.test')).toBeNull();
    expect(simulatedMailbox('+bounce@simulator.postdate.test')).toBeNull();
    expect(simulatedMailbox('bounce+1@example.com')).toBeNull();
  });

  it('gives the same outcome for the same envelope and attempt, and defers only the first attempt', async () => {
    const envelope = [
      'delivered@simulator.postdate.test',
      'bounce@simulator.postdate.test',
      'defer@simulator.postdate.test',
      'reject@simulator.postdate.test',
      'someone@example.org',
    ];
    const first = new MailboxSimulator({ attemptsBefore: 0 });
    const outcomes = [await first.send(email(envelope)), await first.send(email(envelope))];
    const withoutTime = outcomes.map((outcome) => ({ ...outcome, durationMs: 0 }));
    expect(withoutTime[0]).toEqual(withoutTime[1]);
    expect(outcomes[0]).toMatchObject({
      delivered: true,
      refused: [
        { index: 1, code: '550', enhancedCode: '5.1.1', permanent: true },
        { index: 2, code: '451', enhancedCode: '4.3.0', permanent: false },
        { index: 3, code: '550', enhancedCode: '5.7.1', permanent: true },
      ],
    });
    const later = await new MailboxSimulator({ attemptsBefore: 1 }).send(
      email(['defer@simulator.postdate.test']),
    );
    expect(later).toMatchObject({ delivered: true, refused: [] });
  });

  it('fails the transaction when every recipient is refused, and cuts the connection after the dot for ambiguous', async () => {
    const simulator = new MailboxSimulator({ attemptsBefore: 0 });
    expect(await simulator.send(email(['bounce@simulator.postdate.test']))).toMatchObject({
      delivered: false,
      failure: { class: 'permanent', code: '550', enhancedCode: '5.1.1', origin: 'transaction' },
      refused: [{ index: 0, permanent: true }],
    });
    expect(await simulator.send(email(['defer@simulator.postdate.test']))).toMatchObject({
      delivered: false,
      failure: { class: 'transient', code: '451' },
    });
    expect(
      await simulator.send(email(['delivered@simulator.postdate.test', 'ambiguous@simulator.postdate.test'])),
    ).toMatchObject({
      delivered: false,
      failure: { class: 'ambiguous', origin: 'transaction' },
      refused: [],
    });
  });

  it('keeps a slow reply within the attempt’s time', async () => {
    const clock = 1_000_000;
    const simulator = new MailboxSimulator({ attemptsBefore: 0, now: () => clock, slowReplyMs: 60_000 });
    // Less than the reserve left: the reply comes at once rather than after the attempt's end.
    const outcome = await simulator.send(email(['slow@simulator.postdate.test']), { endsBy: clock + 500 });
    expect(outcome).toMatchObject({ delivered: true, refused: [] });
  });
});
