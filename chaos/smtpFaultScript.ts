import type { SmtpBehaviour, SmtpReply } from '../local/smtp/controllableSmtpServer.js';

/** The slow relay's delay between the final dot and its 250, in seconds at time scale 1. */
export const SLOW_RELAY_SECONDS = { min: 20, max: 35 } as const;

const reply = (code: number, message: string): SmtpReply => ({ code, message });

/**
 * The fault label of SES's throttling reply to the final dot (`454 Throttling failure: Maximum
 * sending rate exceeded`): the fleet's pressure, no attempt of the message (DESIGN §5 Rate).
 */
export const THROTTLE_FAULT = 'data-454-throttle';
/** The fault of a transaction whose 250 the relay holds back (`slowRate`). */
export const SLOW_FAULT = 'data-slow';
/** The relay drops the connection after reading the final dot. */
const DROP_FAULT = 'data-drop';
/** The relay stops answering at RCPT TO, or after the final dot: the client times out. */
const RCPT_STALL_FAULT = 'rcpt-stall';
const DATA_STALL_FAULT = 'data-stall';
/** The faults after which the session is over, whatever its sender meant to do next (chaos/checker.ts). */
export const SESSION_ENDING_FAULTS: ReadonlySet<string> = new Set([
  DROP_FAULT,
  RCPT_STALL_FAULT,
  DATA_STALL_FAULT,
]);

/**
 * Recipients with this prefix pin an ambiguous outcome on their message: the relay drops the
 * connection after the final dot of the first body it reads for one (as the test-mode simulator's
 * `ambiguous@` is cut after the dot, DESIGN §14), whatever the script drew, and accepts it later.
 */
export const AMBIGUOUS_RECIPIENT_PREFIX = 'ambiguous-';

/**
 * The SMTP fault script: one behaviour per mail transaction, in order; the last one repeats. Each
 * behaviour carries its kind as its label, so the relay's record of a transaction says which fault
 * it injected. `slowRate` of the transactions get their 250 20–35 s (× `scale`) after the dot, in
 * runs of 1–6 consecutive transactions (a relay that scans or tarpits is slow for a while, and a
 * batch then meets several slow replies in a row). The transactions at `throttleAt` get SES's 454
 * throttle to their final dot instead of what was drawn, and those at `slowAt` (unless throttled) the
 * slowest 250 (the draws stay, so the seed's workload does not change). Every behaviour drops the
 * first body of an `ambiguous-` recipient.
 */
export function smtpScript(
  length: number,
  random: () => number,
  faultRate: number,
  stallRate: number,
  slowRate = 0,
  scale = 1,
  throttleAt: readonly number[] = [],
  slowAt: readonly number[] = [],
): { behaviours: SmtpBehaviour[]; kinds: string[] } {
  // Messages meant to expire: the relay refuses their recipient (451) until the deadline passes.
  const expireRule = (address: string) =>
    address.startsWith('expire-') ? reply(451, '4.2.1 Mailbox busy, try later') : undefined;
  const behaviours: SmtpBehaviour[] = [];
  const kinds: string[] = [];
  // The `ambiguous-` recipients whose first body was dropped (shared by every behaviour).
  const dropped = new Set<string>();
  const faults: [string, SmtpBehaviour][] = [
    // The expiring messages' own rule comes first: a 550 would rightly end one `failed`, not `expired`.
    ['rcpt-451', { rcptTo: (address) => expireRule(address) ?? reply(451, '4.2.1 Try again later') }],
    ['rcpt-550', { rcptTo: (address) => expireRule(address) ?? reply(550, '5.1.1 User unknown') }],
    ['data-451', { rcptTo: expireRule, afterData: reply(451, '4.3.0 Temporary failure') }],
    ['data-554', { rcptTo: expireRule, afterData: reply(554, '5.6.0 Content rejected') }],
    [DROP_FAULT, { rcptTo: expireRule, afterData: 'drop' }],
    [DROP_FAULT, { rcptTo: expireRule, afterData: 'drop' }],
  ];
  const stalls: [string, SmtpBehaviour][] = [
    [RCPT_STALL_FAULT, { rcptTo: 'stall' }],
    [DATA_STALL_FAULT, { rcptTo: expireRule, afterData: 'stall' }],
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
      ? [SLOW_FAULT, { rcptTo: expireRule, afterData: { acceptAfterMs: slowMs() } }]
      : roll < stallRate
        ? stalls[Math.floor(random() * stalls.length)]
        : roll < stallRate + faultRate
          ? faults[Math.floor(random() * faults.length)]
          : undefined;
    const [kind, behaviour]: [string, SmtpBehaviour] = throttleAt.includes(index)
      ? [
          THROTTLE_FAULT,
          { rcptTo: expireRule, afterData: reply(454, 'Throttling failure: Maximum sending rate exceeded') },
        ]
      : slowAt.includes(index)
        ? [
            SLOW_FAULT,
            { rcptTo: expireRule, afterData: { acceptAfterMs: SLOW_RELAY_SECONDS.max * 1000 * scale } },
          ]
        : (pick ?? ['accept', { rcptTo: expireRule }]);
    kinds.push(kind);
    behaviours.push(pinnedAmbiguity({ ...behaviour, label: kind }, dropped));
  }
  kinds.push('accept');
  behaviours.push(pinnedAmbiguity({ rcptTo: expireRule, label: 'accept' }, dropped));
  return { behaviours, kinds };
}

/**
 * `behaviour`, except for a transaction that names an `ambiguous-` recipient not dropped yet: that
 * recipient is accepted and the body dropped after its dot (labelled `data-drop`, the relay's record
 * is read after the dot). A stall at RCPT TO stays a stall (the next transaction drops it).
 */
function pinnedAmbiguity(behaviour: SmtpBehaviour, dropped: Set<string>): SmtpBehaviour {
  const rule = behaviour.rcptTo;
  if (rule === 'stall') return behaviour;
  let pinned: string | undefined;
  return {
    ...behaviour,
    rcptTo: (address) => {
      if (address.startsWith(AMBIGUOUS_RECIPIENT_PREFIX) && !dropped.has(address)) {
        pinned = address;
        return undefined;
      }
      return typeof rule === 'function' ? rule(address) : rule;
    },
    get afterData() {
      if (pinned === undefined) return behaviour.afterData;
      dropped.add(pinned);
      return 'drop';
    },
    get label() {
      return pinned !== undefined && dropped.has(pinned) ? DROP_FAULT : behaviour.label;
    },
  };
}
