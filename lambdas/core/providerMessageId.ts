/**
 * The relay's own id for a message it accepted (DESIGN §5, "The relay's own id"): the queue id its
 * final 250 reply names, stored as `provider_message_id`. It is what an operator quotes to the
 * provider or greps for in the relay's logs.
 *
 * Only reply shapes seen in real transcripts are read (docs/decisions/, "The relay's id"); any
 * other reply yields null. A wrong id is worse than none: an operator would chase another message.
 */

/** The longest id kept: real ones are 10 to 60 characters; anything longer is not an id. */
export const MAX_PROVIDER_MESSAGE_ID_LENGTH = 128;

interface ReplyShape {
  /** Who answers this way, for the reader of this table. */
  readonly relays: string;
  /** Matched against the final line of the reply; group 1 is the id. */
  readonly pattern: RegExp;
}

/**
 * The known shapes, most specific first. Each is anchored on the whole final line so that a reply
 * which only resembles one (an extra word, a list of ids) is left alone.
 */
const REPLY_SHAPES: readonly ReplyShape[] = [
  {
    // 250 Ok 01000154dc729264-93fdd7ea-f039-43d6-91ed-653e8547867c-000000
    relays: 'Amazon SES',
    pattern:
      /^250 Ok ([0-9a-f]{16}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9a-f]{6})$/i,
  },
  {
    // 250 OK id=1l3vRq-0000HP-OZ (before 4.97), 250 OK id=1xBuT1-000000003QH-0Qqz (4.97 and later)
    relays: 'Exim',
    pattern: /^250 OK id=([A-Za-z0-9]{6}-[A-Za-z0-9]{6,11}-[A-Za-z0-9]{2,4})$/,
  },
  {
    // 250 2.6.0 <message-id> [InternalId=105849469029151, Hostname=AS8PR07MB7669.eurprd07.prod.outlook.com]
    //   29353 bytes in 0.060, 472.320 KB/sec Queued mail for delivery (Exchange 2010: no Hostname)
    // The bracketed Message-ID is our own, echoed; InternalId is the mail item's id on that server
    // (the InternalMessageId of Exchange's message tracking log).
    relays: 'Microsoft 365 / Exchange',
    pattern:
      /^250 2\.6\.0 <[^<>\s]+> \[InternalId=(\d{1,20})(?:, Hostname=[^\]\s]+)?\].* Queued mail for delivery$/,
  },
  {
    // 250 2.0.0 t3FEbkN2017123 Message accepted for delivery
    relays: 'Sendmail',
    pattern: /^250 2\.0\.0 ([A-Za-z0-9]{10,20}) Message accepted for delivery$/,
  },
  {
    // 250 2.0.0 Ok: queued as 4Bx1Ym2Zq3z4 (Postfix), 250 Ok: queued as nhIMmON9SFOPcT0ii4nt2A
    // (SendGrid), 250 OK queued as a08b7f37-ed61-423a-ba75-38ed2fd4b54c (Mailjet), and the relays
    // that answer in Postfix's words (Postmark's SMTP service among them, as far as its logs show).
    relays: 'Postfix, SendGrid, Mailjet, Postfix-like relays',
    pattern: /^250 (?:[245]\.\d{1,3}\.\d{1,3} )?(?:Ok|OK|ok):? queued as ([A-Za-z0-9][A-Za-z0-9._-]*)$/,
  },
  {
    // 250 Message queued as 16uyqwtv: MailDev, `npm start`'s relay; the id is the mail's in its
    // viewer (`GET /api/email/{id}`), 8 of a-z 0-9 (@maildev/core makeId; decision 0253).
    relays: 'MailDev (the local stack)',
    pattern: /^250 Message queued as ([a-z0-9]{8})$/,
  },
];

/**
 * The relay's id in the final reply to DATA, or null when the reply names none in a known shape
 * (Mailgun's "250 Great success", smtp-server's "250 OK: message queued", an unknown relay). A
 * multi-line reply (lines joined by newlines) is read on its last line, the one with "250 ".
 */
export function providerMessageIdOf(reply: string | null | undefined): string | null {
  if (typeof reply !== 'string') return null;
  const lines = reply.split(/\r?\n/);
  const finalLine = (lines[lines.length - 1] ?? '').trim();
  for (const shape of REPLY_SHAPES) {
    const id = shape.pattern.exec(finalLine)?.[1];
    if (id !== undefined && id.length <= MAX_PROVIDER_MESSAGE_ID_LENGTH) return id;
  }
  return null;
}
