// Durable Object stubs whose calls of one method fail, as a call does when its connection drops
// before it reaches the object (Cloudflare's Durable Objects error handling: an infrastructure
// error reaches the caller): the object never sees them. The count is shared by every stub the
// same `failingCalls` hands out, so a caller that asks a new stub for each attempt meets it too.
export function failingCalls(method: string, times = Number.POSITIVE_INFINITY) {
  let failed = 0;
  return {
    /** How many calls failed so far. */
    get failed(): number {
      return failed;
    },
    /** `stub`, with its calls of `method` failing while failures remain. */
    of<Stub extends object>(stub: Stub): Stub {
      return new Proxy(stub, {
        get(target, property) {
          const value = Reflect.get(target, property);
          if (property !== method || typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (failed >= times) return Reflect.apply(value, target, args);
            failed++;
            return Promise.reject(new Error('Network connection lost.'));
          };
        },
      });
    },
  };
}
