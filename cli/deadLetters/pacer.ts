/** A wait before each send so that at most `rate` go out per second; no wait without a rate. */
export function pacer(
  rate: number | undefined,
  sleep: ((ms: number) => Promise<void>) | undefined,
): () => Promise<void> {
  if (rate === undefined) return async () => {};
  const interval = 1000 / rate;
  const wait = sleep ?? defaultSleep;
  let next = 0;
  return async () => {
    const now = Date.now();
    if (next > now) await wait(next - now);
    next = Math.max(now, next) + interval;
  };
}

export function defaultSleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
