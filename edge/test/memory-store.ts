// A Durable Object's synchronous key-value storage in a Map, as far as the hub's egress stores
// use it, with its keys for the tests to look at.
import type { EgressStore } from '../src/objects/egress-blocks.ts';

export function memoryStore(): EgressStore & { keys(): string[] } {
  const entries = new Map<string, unknown>();
  return {
    get: <T>(key: string) => entries.get(key) as T | undefined,
    put: (key, value) => void entries.set(key, value),
    delete: (key) => entries.delete(key),
    list: <T>(options?: { prefix?: string }) =>
      [...entries].filter(([key]) => key.startsWith(options?.prefix ?? '')) as [string, T][],
    keys: () => [...entries.keys()],
  };
}
