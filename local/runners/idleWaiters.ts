/**
 * `idle()` for the runners: a caller waits for the first quiet polling pass (nothing read, nothing
 * pending, nothing in flight) that STARTED after its call, so everything that was in the stream or
 * queue when it called has been seen and settled.
 */
export class IdleWaiters {
  #pass = 0;
  #waiters: Array<{ after: number; resolve: () => void }> = [];

  /** Marks the start of a polling pass and returns its number. */
  beginPass(): number {
    this.#pass += 1;
    return this.#pass;
  }

  /** Reports that pass `pass` found nothing to do. */
  endQuietPass(pass: number): void {
    const ready = this.#waiters.filter((waiter) => pass > waiter.after);
    this.#waiters = this.#waiters.filter((waiter) => pass <= waiter.after);
    for (const waiter of ready) waiter.resolve();
  }

  wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ after: this.#pass, resolve }));
  }

  /** On stop: nobody is left waiting forever. */
  releaseAll(): void {
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
  }
}
