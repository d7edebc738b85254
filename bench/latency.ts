// Latency figures from a set of timed requests.
export function percentile(sortedMs: readonly number[], fraction: number): number {
  if (sortedMs.length === 0) return Number.NaN;
  const index = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil(fraction * sortedMs.length) - 1));
  return sortedMs[index] ?? Number.NaN;
}

/** Runs `total` calls of `task` with `concurrency` in flight; returns each call's duration, sorted. */
export async function timeConcurrently(
  total: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<number[]> {
  const durations: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const index = next++;
        const started = performance.now();
        await task(index);
        durations.push(performance.now() - started);
      }
    }),
  );
  return durations.sort((a, b) => a - b);
}
