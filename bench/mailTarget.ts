import { randomUUID } from 'node:crypto';
import { formatLocalDateTime, localDateTimeAt } from '../lambdas/core/localTime.js';
import type { LocalStack } from '../local/localStack.js';
import { enqueue, inParallel, waitForDelivery } from './benchStack.js';

/**
 * A system that takes messages, immediate or due after a delay, and delivers them to an SMTP
 * sink: Postdate on the local stack, or a peer (bench/bullmqPeer.ts). The end-to-end and the
 * lateness measurements (pipeline.ts, lateness.ts) run against it and count at the sink.
 */
export interface MailTarget {
  /** Sends a few messages through every part first (cold imports, pools), not recorded. */
  warm(): Promise<void>;
  /**
   * Submits one message due `delaySeconds` from now (0: immediate); resolves with the key the sink
   * knows it by and its due time (epoch ms) as the system itself states it.
   */
  submit(input: {
    readonly bodyBytes: number;
    readonly delaySeconds: number;
    /** Postdate only: give the time as `send_at_local` in this zone (bench/lateness.ts, localTimeCases). */
    readonly timeZone?: string;
  }): Promise<SubmittedMail>;
  /** Waits until the sink has every key; each key's first receive time. */
  received(keys: readonly string[], timeoutMs: number): Promise<Map<string, Date>>;
}

export interface SubmittedMail {
  readonly key: string;
  readonly dueAt: number;
}

const WARM_MESSAGES = 20;

/** Postdate on the local stack: the message id is the key, `send_at` as the API states it the due time. */
export function postdateTarget(stack: LocalStack): MailTarget {
  return {
    async warm() {
      const warm = await inParallel(Array.from({ length: WARM_MESSAGES }), 8, () =>
        enqueue(stack, { bodyBytes: 10, key: randomUUID() }),
      );
      await waitForDelivery(
        stack,
        warm.map((m) => m.id),
        60_000,
      );
      await stack.idle();
    },
    async submit({ bodyBytes, delaySeconds, timeZone }) {
      // The wall clock of the next whole second at least delaySeconds away (send_at_local has no fractions).
      const local =
        timeZone === undefined
          ? undefined
          : {
              timeZone,
              sendAtLocal: formatLocalDateTime(
                localDateTimeAt(
                  new Date(Math.ceil((Date.now() + delaySeconds * 1000) / 1000) * 1000),
                  timeZone,
                ),
              ),
            };
      const message = await enqueue(stack, {
        bodyBytes,
        key: randomUUID(),
        // No delay_seconds at all for 0 s: the immediate path as a client takes it.
        ...(local ?? (delaySeconds > 0 ? { delaySeconds } : {})),
      });
      // The API's send_at is the truth (the acceptance time for 0 s).
      return { key: message.id, dueAt: message.sendAt.getTime() };
    },
    received: (keys, timeoutMs) => waitForDelivery(stack, keys, timeoutMs),
  };
}
