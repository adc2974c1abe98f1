/**
 * One precise timer per armed key. Node's setTimeout fires within a few milliseconds, unlike a
 * polling loop; delays beyond setTimeout's limit (~24.8 days) are re-armed in steps.
 */

const MAX_TIMEOUT_MS = 2_147_483_647;

export class FireTimers {
  readonly #timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly onDue: (key: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** (Re)arms `key` to call `onDue(key)` at `atMs` (immediately when it is already past). */
  arm(key: string, atMs: number): void {
    this.disarm(key);
    const wait = Math.max(0, atMs - this.now());
    const timer = setTimeout(
      () => {
        this.#timers.delete(key);
        // Beyond setTimeout's limit, or a millisecond early (timers run on a monotonic clock that
        // Date.now() can be ahead of): arm again for the rest, so nothing ever fires before its time.
        if (this.now() < atMs) this.arm(key, atMs);
        else this.onDue(key);
      },
      Math.min(wait, MAX_TIMEOUT_MS),
    );
    this.#timers.set(key, timer);
  }

  disarm(key: string): void {
    const timer = this.#timers.get(key);
    if (timer) clearTimeout(timer);
    this.#timers.delete(key);
  }

  clear(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  get size(): number {
    return this.#timers.size;
  }
}
