import { describe, expect, it } from 'vitest';
import { providerMessageIdOf } from '../../lambdas/core/providerMessageId.js';

/**
 * Final replies to DATA as relays really send them (public transcripts and relay logs; the
 * sources are named in docs/decisions/, "The relay's id"), with the id an operator would quote.
 */
const REAL_REPLIES: readonly { relay: string; reply: string; id: string | null }[] = [
  {
    relay: 'Amazon SES',
    reply: '250 Ok 01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
    id: '01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000',
  },
  {
    relay: 'Amazon SES',
    reply: '250 Ok 0100016e4ab7c399-5058a2a5-d4ad-407b-92b8-94472f229325-000000',
    id: '0100016e4ab7c399-5058a2a5-d4ad-407b-92b8-94472f229325-000000',
  },
  { relay: 'Postfix', reply: '250 2.0.0 Ok: queued as 224B824BD40', id: '224B824BD40' },
  {
    relay: 'Postfix (long queue ids)',
    reply: '250 2.0.0 Ok: queued as 4Bx1Ym2Zq3z4Ab',
    id: '4Bx1Ym2Zq3z4Ab',
  },
  { relay: 'Exim before 4.97', reply: '250 OK id=1l3vRq-0000HP-OZ', id: '1l3vRq-0000HP-OZ' },
  { relay: 'Exim 4.97 and later', reply: '250 OK id=1xBuT1-000000003QH-0Qqz', id: '1xBuT1-000000003QH-0Qqz' },
  {
    relay: 'Sendmail',
    reply: '250 2.0.0 x1AbCdEf012345 Message accepted for delivery',
    id: 'x1AbCdEf012345',
  },
  {
    relay: 'Microsoft 365 / Exchange Online',
    reply:
      '250 2.6.0 <JIRA.938152.1690810170000.3399613.1691573583862@Atlassian.JIRA> [InternalId=105849469029151, Hostname=AS8PR07MB7669.eurprd07.prod.outlook.com] 29353 bytes in 0.060, 472.320 KB/sec Queued mail for delivery',
    id: '105849469029151',
  },
  {
    relay: 'Exchange 2010 (no Hostname)',
    reply: '250 2.6.0 <20111025103822.7F94E1C0299@ASTNAGIOS> [InternalId=274498] Queued mail for delivery',
    id: '274498',
  },
  {
    relay: 'Exchange, older: only our own Message-ID echoed',
    reply: '250 2.6.0 <4798911130a2069f3483fda756b8e81c@www.example.com> Queued mail for delivery',
    id: null,
  },
  { relay: 'SendGrid', reply: '250 Ok: queued as nhIMmON9SFOPcT0ii4nt2A', id: 'nhIMmON9SFOPcT0ii4nt2A' },
  {
    relay: 'Mailjet',
    reply: '250 OK queued as a08b7f37-ed61-423a-ba75-38ed2fd4b54c',
    id: 'a08b7f37-ed61-423a-ba75-38ed2fd4b54c',
  },
  // Postmark documents no SMTP reply format; the one public relay log found answers in Postfix's words.
  { relay: 'Postmark (Postfix form)', reply: '250 2.0.0 Ok: queued as 6A59', id: '6A59' },
  // MailDev (`npm start`'s relay and viewer; @maildev/smtp's reply, its id from @maildev/core makeId):
  // the id is the mail's in the viewer, `GET /api/email/{id}` (decision 0253).
  { relay: 'MailDev', reply: '250 Message queued as 16uyqwtv', id: '16uyqwtv' },
  { relay: 'MailDev-like, not its id', reply: '250 Message queued as 16UYQWTV-and-more', id: null },
  // Mailgun names no id in its reply (its id comes through its API and events).
  { relay: 'Mailgun', reply: '250 Great success', id: null },
  // smtp-server's default reply to the final dot (node_modules/smtp-server, DATA_OK).
  { relay: 'smtp-server (default)', reply: '250 OK: message queued', id: null },
  { relay: 'Google (gsmtp)', reply: '250 2.0.0 OK 1376056636 i3si9508927obz.16 - gsmtp', id: null },
];

describe("the relay's own id in its final reply", () => {
  it.each(REAL_REPLIES)('$relay: $reply', ({ reply, id }) => {
    expect(providerMessageIdOf(reply)).toBe(id);
  });

  it('reads a multi-line reply on its last line', () => {
    expect(providerMessageIdOf('250-Accepted, scanning done\n250 2.0.0 Ok: queued as 224B824BD40')).toBe(
      '224B824BD40',
    );
  });

  it('stores nothing for shapes that only resemble a known one', () => {
    for (const reply of [
      null,
      undefined,
      '',
      '250 OK',
      '250 Ok',
      // Several ids, one per recipient: which one would an operator quote?
      '250 2.0.0 OK: queued as em_4yM2nTvR8oPcX3uZiKeLg7sB,em_5zN3oUwS9pQdY4vAjLfMh8tC',
      // Trailing words after the id.
      '250 2.0.0 Ok: queued as 224B824BD40 (after scanning)',
      // Not a 250.
      '451 4.3.0 queued as 224B824BD40',
      // An SES-like reply whose token is not SES's id.
      '250 Ok 0100018abc-1234-5678-000000',
      // An id far longer than any relay's.
      `250 Ok: queued as ${'a'.repeat(200)}`,
    ]) {
      expect(providerMessageIdOf(reply)).toBeNull();
    }
  });
});
