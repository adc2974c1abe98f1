/**
 * A bounded least-recently-used cache, for what is immutable per key: a template version's content
 * and its compiled form (DESIGN §10, "compile once per (template, version) per warm function"). One
 * cache belongs to one wiring (one table), so a key needs only (tenant, name, version). Loads of the
 * same key at the same time share one promise; a failed load or a missing value is not kept.
 *
 * With `maxAgeMs`, it also holds what may change, briefly: an entry is read again once that long has
 * passed since its load began, so a value is never older than the bound (docs/capacity.md: a template
 * head, a webhook endpoint, whether an address is suppressed). The clock is an argument.
 */
export class LruCache<T> {
  private readonly entries = new Map<
    string,
    { readonly value: Promise<T | undefined>; readonly at: number }
  >();

  /**
   * @param maxEntries at most this many keys are kept; the least recently used goes first.
   * @param freshness without it entries never age; with it, one older than `maxAgeMs` by `now` is reloaded.
   */
  constructor(
    readonly maxEntries: number,
    private readonly freshness?: { readonly maxAgeMs: number; readonly now: () => number },
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new RangeError('maxEntries must be at least 1');
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value of `key`, loaded by `load` once while it stays in the cache (and is young enough). */
  getOrLoad(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const now = this.freshness?.now() ?? 0;
    const cached = this.entries.get(key);
    if (cached !== undefined && (!this.freshness || now - cached.at < this.freshness.maxAgeMs)) {
      // Map keeps insertion order: re-inserting makes this key the most recently used.
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached.value;
    }
    const loading = load().then(
      (value) => {
        if (value === undefined) this.forget(key, loading);
        return value;
      },
      (error: unknown) => {
        this.forget(key, loading);
        throw error;
      },
    );
    this.keep(key, loading, now);
    return loading;
  }

  /** Keeps `value` for `key` as if just loaded (this instance wrote it, and knows what it wrote). */
  set(key: string, value: T): void {
    this.keep(key, Promise.resolve(value), this.freshness?.now() ?? 0);
  }

  /** Forgets `key` (its next read goes to the source). */
  delete(key: string): void {
    this.entries.delete(key);
  }

  private keep(key: string, value: Promise<T | undefined>, at: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, at });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  private forget(key: string, loading: Promise<T | undefined>): void {
    if (this.entries.get(key)?.value === loading) this.entries.delete(key);
  }
}

/** The cache key of one template version of one tenant (names and tenants never hold NUL). */
export function templateVersionKey(tenant: string, name: string, version: number): string {
  return `${tenant}\u0000${name}\u0000${version}`;
}
