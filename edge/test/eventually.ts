// Waiting for work the edge does in the background (the hub's Durable Object, results recorded
// after a probe): tests poll a condition instead of sleeping. The limit is a hang guard just
// under the project's test timeout, not a speed target: on a loaded two-core runner a hub
// message can take seconds to be handled.
const LIMIT_MS = 50_000;
const INTERVAL_MS = 10;

/** Resolves once `condition` holds; throws naming `what` if it never does. */
export async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await untilValue(async () => ((await condition()) ? true : undefined), what);
}

/** Resolves with the first value `probe` gives that is not undefined. */
export async function untilValue<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + LIMIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS));
  }
}
