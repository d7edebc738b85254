// Waiting for a state that has no event of its own (the hub's Durable Object handling a
// message, results recorded after a probe, a fake server's count): tests poll a condition
// instead of sleeping. The limit is a hang guard under the test timeout, not a speed target:
// on a loaded two-core runner one step can take seconds.
const LIMIT_MS = 50_000;
const INTERVAL_MS = 10;

/** Resolves once `condition` holds; throws naming `what` if it has not within `limitMs`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  limitMs = LIMIT_MS,
): Promise<void> {
  await untilValue(async () => ((await condition()) ? true : undefined), what, limitMs);
}

/**
 * Resolves with the first value `probe` gives that is not undefined. `intervalMs` spaces the
 * probes, for one that costs a rate-limited API call.
 */
export async function untilValue<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  limitMs = LIMIT_MS,
  intervalMs = INTERVAL_MS,
): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
