import { describe, expect, it } from 'vitest';
import { TtlCache } from './ttl-cache.ts';

function cacheWithClock(options: { maxEntries?: number; maxTtlSeconds?: number } = {}) {
  let now = 0;
  const cache = new TtlCache<string>({ ...options, now: () => now });
  return {
    cache,
    advanceSeconds(seconds: number) {
      now += seconds * 1000;
    },
  };
}

describe('TtlCache', () => {
  it('keeps a value until its TTL has passed', () => {
    const { cache, advanceSeconds } = cacheWithClock();
    cache.set('MX example.com', 'answer', 10);
    advanceSeconds(9.999);
    expect(cache.get('MX example.com')).toBe('answer');
    advanceSeconds(0.001);
    expect(cache.get('MX example.com')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('counts the seconds left down, never past the TTL', () => {
    const { cache, advanceSeconds } = cacheWithClock();
    cache.set('MX example.com', 'answer', 10);
    expect(cache.entry('MX example.com')?.remainingSeconds).toBe(10);
    advanceSeconds(0.5);
    expect(cache.entry('MX example.com')?.remainingSeconds).toBe(9);
    advanceSeconds(9.4);
    expect(cache.entry('MX example.com')).toEqual({ value: 'answer', remainingSeconds: 0 });
  });

  it('caps every lifetime at the maximum TTL', () => {
    const { cache, advanceSeconds } = cacheWithClock({ maxTtlSeconds: 3_600 });
    cache.set('A example.com', 'answer', 86_400);
    advanceSeconds(3_599);
    expect(cache.get('A example.com')).toBe('answer');
    advanceSeconds(1);
    expect(cache.get('A example.com')).toBeUndefined();
  });

  it('keeps nothing for a TTL of 0, and a TTL-0 set drops the older value', () => {
    const { cache } = cacheWithClock();
    cache.set('A example.com', 'old', 60);
    cache.set('A example.com', 'new', 0);
    expect(cache.get('A example.com')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used entry past the bound', () => {
    const { cache } = cacheWithClock({ maxEntries: 2 });
    cache.set('first', '1', 60);
    cache.set('second', '2', 60);
    // Reading `first` makes `second` the least recently used.
    expect(cache.get('first')).toBe('1');
    cache.set('third', '3', 60);
    expect(cache.get('second')).toBeUndefined();
    expect(cache.get('first')).toBe('1');
    expect(cache.get('third')).toBe('3');
    expect(cache.size).toBe(2);
  });
});
