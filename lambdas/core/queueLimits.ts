/**
 * The send queue's `maxReceiveCount`: only a backstop (DESIGN §5, "Dead means dead"). The sender
 * itself moves a copy to the DLQ when the message's SMTP attempts are exhausted; receives that are
 * no attempt (a live lease, a batch out of time, a released claim) must not reach it first, and the
 * sender replaces a copy that comes close to it (lambdas/sender/createSenderHandler.ts).
 */
export function backstopReceiveCount(maxAttempts: number): number {
  return Math.min(1000, 3 * maxAttempts + 10);
}
