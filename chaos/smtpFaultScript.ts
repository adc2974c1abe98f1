import type { SmtpBehaviour, SmtpReply } from '../local/smtp/controllableSmtpServer.js';

/** The slow relay's delay between the final dot and its 250, in seconds at time scale 1. */
export const SLOW_RELAY_SECONDS = { min: 20, max: 35 } as const;

const reply = (code: number, message: string): SmtpReply => ({ code, message });

/**
 * The SMTP fault script: one behaviour per mail transaction, in order; the last one repeats. Each
 * behaviour carries its kind as its label, so the relay's record of a transaction says which fault
 * it injected. `slowRate` of the transactions get their 250 20–35 s (× `scale`) after the dot, in
 * runs of 1–6 consecutive transactions (a relay that scans or tarpits is slow for a while, and a
 * batch then meets several slow replies in a row).
 */
export function smtpScript(
  length: number,
  random: () => number,
  faultRate: number,
  stallRate: number,
  slowRate = 0,
  scale = 1,
): { behaviours: SmtpBehaviour[]; kinds: string[] } {
  // Messages meant to expire: the relay refuses their recipient (451) until the deadline passes.
  const expireRule = (address: string) =>
    address.startsWith('expire-') ? reply(451, '4.2.1 Mailbox busy, try later') : undefined;
  const behaviours: SmtpBehaviour[] = [];
  const kinds: string[] = [];
  const faults: [string, SmtpBehaviour][] = [
    // The expiring messages' own rule comes first: a 550 would rightly end one `failed`, not `expired`.
    ['rcpt-451', { rcptTo: (address) => expireRule(address) ?? reply(451, '4.2.1 Try again later') }],
    ['rcpt-550', { rcptTo: (address) => expireRule(address) ?? reply(550, '5.1.1 User unknown') }],
    ['data-451', { rcptTo: expireRule, afterData: reply(451, '4.3.0 Temporary failure') }],
    ['data-554', { rcptTo: expireRule, afterData: reply(554, '5.6.0 Content rejected') }],
    ['data-drop', { rcptTo: expireRule, afterData: 'drop' }],
    ['data-drop', { rcptTo: expireRule, afterData: 'drop' }],
  ];
  const stalls: [string, SmtpBehaviour][] = [
    ['rcpt-stall', { rcptTo: 'stall' }],
    ['data-stall', { rcptTo: expireRule, afterData: 'stall' }],
  ];
  const slowMs = () => {
    const [low, high] = [SLOW_RELAY_SECONDS.min * 1000 * scale, SLOW_RELAY_SECONDS.max * 1000 * scale];
    return Math.round(low + random() * (high - low));
  };
  const slowRun = { longest: 6, left: 0 };
  // A run starts with this probability, so that `slowRate` of all transactions are slow.
  const slowStart = slowRate / ((1 + slowRun.longest) / 2);
  for (let index = 0; index < length; index += 1) {
    const roll = random();
    if (slowRun.left === 0 && roll >= stallRate + faultRate && roll < stallRate + faultRate + slowStart) {
      slowRun.left = 1 + Math.floor(random() * slowRun.longest);
    }
    const slow = slowRun.left > 0;
    if (slow) slowRun.left -= 1;
    const pick: [string, SmtpBehaviour] | undefined = slow
      ? ['data-slow', { rcptTo: expireRule, afterData: { acceptAfterMs: slowMs() } }]
      : roll < stallRate
        ? stalls[Math.floor(random() * stalls.length)]
        : roll < stallRate + faultRate
          ? faults[Math.floor(random() * faults.length)]
          : undefined;
    const kind = pick?.[0] ?? 'accept';
    kinds.push(kind);
    behaviours.push({ ...(pick?.[1] ?? { rcptTo: expireRule }), label: kind });
  }
  kinds.push('accept');
  behaviours.push({ rcptTo: expireRule, label: 'accept' });
  return { behaviours, kinds };
}
