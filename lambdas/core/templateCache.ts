/**
 * A bounded least-recently-used cache, for what is immutable per key: a template version's content
 * and its compiled form (DESIGN §10, "compile once per (template, version) per warm function"). One
 * cache belongs to one wiring (one table), so a key needs only (tenant, name, version). Loads of the
 * same key at the same time share one promise; a failed load or a missing value is not kept.
 */
export class LruCache<T> {
  private readonly entries = new Map<string, Promise<T | undefined>>();

  /** @param maxEntries at most this many keys are kept; the least recently used goes first. */
  constructor(readonly maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new RangeError('maxEntries must be at least 1');
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value of `key`, loaded by `load` once while it stays in the cache. */
  getOrLoad(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const cached = this.entries.get(key);
    if (cached !== undefined) {
      // Map keeps insertion order: re-inserting makes this key the most recently used.
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
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
    this.entries.set(key, loading);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return loading;
  }

  private forget(key: string, loading: Promise<T | undefined>): void {
    if (this.entries.get(key) === loading) this.entries.delete(key);
  }
}

/** The cache key of one template version of one tenant (names and tenants never hold NUL). */
export function templateVersionKey(tenant: string, name: string, version: number): string {
  return `${tenant}\u0000${name}\u0000${version}`;
}
