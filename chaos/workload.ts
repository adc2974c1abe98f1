import { directDelayMax } from './chaosTiming.js';
import { AMBIGUOUS_RECIPIENT_PREFIX } from './smtpFaultScript.js';

/** What a planned message exercises: a send now or later, a cancel, a reschedule, a group raise, an expiry. */
export type MessageKind =
  | 'immediate'
  | 'short'
  | 'long'
  | 'cancel'
  | 'reschedule'
  | 'supersede'
  | 'group-fresh'
  | 'expire';

/** One message of the workload: its enqueue body and idempotency key, before the stack is up. */
export interface PlannedMessage {
  readonly index: number;
  readonly kind: MessageKind;
  readonly key: string;
  readonly body: Record<string, unknown>;
}

/** The workload, reproducible from the seed. */
export function planWorkload(
  count: number,
  random: () => number,
  runId: string,
  scale = 1,
): PlannedMessage[] {
  const between = (low: number, high: number) => {
    const [from, to] = [Math.round(low * scale), Math.round(high * scale)];
    return from + Math.floor(random() * (to - from + 1));
  };
  const direct = directDelayMax(scale);
  // Longer than the direct maximum: through the Scheduler emulator, fired `lead` early.
  const later = () => direct + 2 + Math.floor(random() * Math.max(1, Math.round(22 * scale)));
  const plans: PlannedMessage[] = [];
  // The first two immediate messages are pinned: `hold`, and a recipient whose first copy the relay
  // drops after the dot (chaos/smtpFaultScript.ts), so every run has a hold message meeting an
  // ambiguous fault (it must end `unknown`, never be sent again: DESIGN §5). Two, because a kill or
  // a stall at RCPT TO may settle one `unknown` before its drop (seed 7: a sender kill in its stall).
  let ambiguityPinned = 0;
  for (let index = 0; index < count; index += 1) {
    const roll = random();
    const kind: MessageKind =
      roll < 0.33
        ? 'immediate'
        : roll < 0.6
          ? 'short'
          : roll < 0.8
            ? 'long'
            : roll < 0.85
              ? 'cancel'
              : roll < 0.9
                ? 'reschedule'
                : roll < 0.94
                  ? 'supersede'
                  : roll < 0.97
                    ? 'group-fresh'
                    : 'expire';
    const pinAmbiguity = kind === 'immediate' && ambiguityPinned < 2;
    if (pinAmbiguity) ambiguityPinned += 1;
    const body: Record<string, unknown> = {
      to: [
        kind === 'expire'
          ? `expire-${index}@chaos.test`
          : pinAmbiguity
            ? `${AMBIGUOUS_RECIPIENT_PREFIX}${index}@chaos.test`
            : `r${index}@chaos.test`,
      ],
      subject: `chaos ${runId} #${index}`,
      // Every second message's body is too large to go inside its state record
      // (docs/decisions/0105-small-bodies-in-the-state-record.md): both forms are sent, and the
      // sender's body read, with the faults injected on it, stays on the path.
      text:
        index % 2 === 1
          ? `message ${index} of chaos run ${runId} ${incompressibleText(index, 8192)}`
          : `message ${index} of chaos run ${runId}`,
      tags: { kind },
    };
    if (random() < 0.1 || pinAmbiguity) body.on_ambiguous = 'hold';
    switch (kind) {
      case 'immediate':
        break;
      case 'short':
        body.delay_seconds = 1 + Math.floor(random() * direct);
        break;
      case 'long':
        body.delay_seconds = later();
        break;
      case 'cancel':
        body.delay_seconds = between(20, 40);
        break;
      case 'reschedule':
        body.delay_seconds = between(20, 40);
        break;
      case 'supersede':
        body.delay_seconds = between(25, 40);
        body.group = { key: `chaos-${runId}-g${index}`, version: 1 };
        break;
      case 'group-fresh':
        body.delay_seconds = between(0, 5);
        body.group = { key: `chaos-${runId}-fresh${index}`, version: 3 };
        break;
      case 'expire':
        // send_at and not_after are set at enqueue time (see datedBody): due in 0–3 s, 4 s to live.
        body.delay_seconds = between(0, 3);
        break;
    }
    plans.push({ index, kind, key: `chaos-${runId}-${index}`, body });
  }
  return plans;
}

/** `bytes` characters that compress poorly, from the index alone (the seeded sequence is not used). */
function incompressibleText(seed: number, bytes: number): string {
  let state = (seed + 1) >>> 0;
  let text = '';
  while (text.length < bytes) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    text += (state >>> 4).toString(36);
  }
  return text.slice(0, bytes);
}

/** An expiring message gets absolute times when it is sent (the plan is made before the stack is up). */
export function datedBody(planned: PlannedMessage): PlannedMessage {
  if (planned.kind !== 'expire') return planned;
  const { delay_seconds: delay, ...rest } = planned.body;
  const sendAt = Date.now() + Number(delay) * 1000;
  return {
    ...planned,
    body: {
      ...rest,
      send_at: new Date(sendAt).toISOString(),
      not_after: new Date(sendAt + 4000).toISOString(),
    },
  };
}
