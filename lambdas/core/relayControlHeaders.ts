/**
 * Headers that steer a relay instead of describing a message (compared case-insensitively): a
 * tenant could pick another tenant's configuration set, sending identity or IP pool, turn tracking
 * on, or add recipients. A configuration set belongs to the API key, set by an operator. Each is a
 * relay's documented control header (or family of them):
 *
 * - Amazon SES: `X-SES-CONFIGURATION-SET`, `X-SES-MESSAGE-TAGS`, `X-SES-SOURCE-ARN`,
 *   `X-SES-FROM-ARN`, `X-SES-RETURN-PATH-ARN` — all `X-SES-*`
 *   (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-send-email.html,
 *   https://docs.aws.amazon.com/ses/latest/dg/using-configuration-sets-in-email.html, SendRawEmail).
 * - SendGrid: `X-SMTPAPI`, a JSON object of recipients, substitutions, filters and settings
 *   (https://www.twilio.com/docs/sendgrid/for-developers/sending-email/building-an-x-smtpapi-header).
 * - Mailgun: `X-Mailgun-Tag`, `-Dkim`, `-Drop-Message`, `-Track*`, `-Sending-Ip(-Pool)`,
 *   `-Require-TLS`, `-Variables`, … — all `X-Mailgun-*`
 *   (https://documentation.mailgun.com/docs/mailgun/user-manual/sending-messages/pass-sending-options).
 * - Postmark: `X-PM-Message-Stream`, `X-PM-Tag`, `X-PM-Metadata-*`, … — all `X-PM-*`
 *   (https://postmarkapp.com/support/article/1207-how-to-create-and-send-through-message-streams;
 *   tag and metadata as read by Postmark's own ActiveCampaign/swiftmailer-postmark transport).
 * - Mandrill (Mailchimp Transactional): `X-MC-Tags`, `-Track`, `-Template`, `-MergeVars`,
 *   `-Metadata`, `-Subaccount`, `-BccAddress`, `-IpPool`, `-ReturnPathDomain`, `-SendAt`, … — all
 *   `X-MC-*` (https://mandrill.zendesk.com/hc/en-us/articles/360039280433-How-to-Use-SMTP-Headers-to-Customize-Your-Messages).
 * - SparkPost: `X-MSYS-API`, a JSON object of campaign, metadata and options
 *   (https://developers.sparkpost.com/api/smtp/).
 * - Mailjet: `X-Mailjet-Campaign`, `X-Mailjet-TrackOpen`, …, `X-MJ-CustomID`, `X-MJ-EventPayload`,
 *   `X-MJ-TemplateID`, `X-MJ-Vars`, … — all `X-Mailjet-*` and `X-MJ-*`
 *   (https://dev.mailjet.com/docs/smtp_relay/custom_headers).
 */
export const RELAY_CONTROL_HEADERS: {
  /** Whole names. */
  readonly names: readonly string[];
  /** Every name that starts with one of these. */
  readonly prefixes: readonly string[];
} = {
  names: ['X-SMTPAPI', 'X-MSYS-API'],
  prefixes: ['X-SES-', 'X-Mailgun-', 'X-PM-', 'X-MC-', 'X-Mailjet-', 'X-MJ-'],
};

const RELAY_CONTROL_NAMES: ReadonlySet<string> = new Set(
  RELAY_CONTROL_HEADERS.names.map((name) => name.toLowerCase()),
);
const RELAY_CONTROL_PREFIXES = RELAY_CONTROL_HEADERS.prefixes.map((prefix) => prefix.toLowerCase());

/** Whether a header name is one of a relay's control headers (case-insensitive). */
export function isRelayControlHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RELAY_CONTROL_NAMES.has(lower) || RELAY_CONTROL_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

export const RELAY_CONTROL_MESSAGE = 'header controls the relay and may not be given';
