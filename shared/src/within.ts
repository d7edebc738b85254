// Waiting for work no longer than a budget, without stopping it: the work goes on, and whoever
// holds its promise may still use its answer later.

/** `work`'s answer, or null once `ms` have passed (its failure, if it fails first). */
export async function within<Value>(work: Promise<Value>, ms: number): Promise<Value | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
