// A per-isolate cache whose entries expire, bounded by entry count. A Worker isolate serves
// many requests, so answers cached here are shared by all of them until the isolate goes;
// nothing is persisted, and the bound keeps a busy isolate within its memory limit.

export interface TtlCacheOptions {
  /** Entries kept at most; past it the least recently used goes. Default 10,000. */
  maxEntries?: number;
  /** Upper bound of any entry's lifetime, in seconds. Default 3,600 (1 h). */
  maxTtlSeconds?: number;
  /** The clock, in milliseconds. Tests move it by hand. Default `Date.now`. */
  now?: () => number;
}

interface CacheEntry<Value> {
  value: Value;
  expiresAt: number;
}

export class TtlCache<Value> {
  readonly #entries = new Map<string, CacheEntry<Value>>();
  readonly #maxEntries: number;
  readonly #maxTtlSeconds: number;
  readonly #now: () => number;

  constructor(options: TtlCacheOptions = {}) {
    this.#maxEntries = Math.max(1, options.maxEntries ?? 10_000);
    this.#maxTtlSeconds = options.maxTtlSeconds ?? 3_600;
    this.#now = options.now ?? Date.now;
  }

  /** The live value for `key`, or undefined if there is none or it has expired. */
  get(key: string): Value | undefined {
    return this.entry(key)?.value;
  }

  /**
   * The live value for `key` and the whole seconds it has left, rounded down: whoever keeps the
   * value for that long keeps it no longer than its TTL allows (0 in its last second).
   */
  entry(key: string): { value: Value; remainingSeconds: number } | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const remainingMs = entry.expiresAt - this.#now();
    if (remainingMs <= 0) {
      this.#entries.delete(key);
      return undefined;
    }
    // A Map iterates in insertion order: re-inserting makes this the most recently used.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return { value: entry.value, remainingSeconds: Math.floor(remainingMs / 1000) };
  }

  /** Keeps `value` for `ttlSeconds`, capped at the cache's maximum; a TTL of 0 or less keeps nothing. */
  set(key: string, value: Value, ttlSeconds: number): void {
    const lifetime = Math.min(ttlSeconds, this.#maxTtlSeconds);
    this.#entries.delete(key);
    if (!(lifetime > 0)) return;
    this.#entries.set(key, { value, expiresAt: this.#now() + lifetime * 1000 });
    while (this.#entries.size > this.#maxEntries) {
      const leastRecentlyUsed = this.#entries.keys().next().value;
      if (leastRecentlyUsed === undefined) break;
      this.#entries.delete(leastRecentlyUsed);
    }
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Entries held, expired ones not yet swept included. */
  get size(): number {
    return this.#entries.size;
  }
}
