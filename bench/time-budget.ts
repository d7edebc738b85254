// A single call's own time budget (`timeoutMs`, docs/verdicts.md "A time budget per call")
// against the fake world's tarpit, which accepts the connection and never greets: only the
// budget ends the call. Prints how far past the budget the answer arrived, as the client sees
// it (HTTP included), target ≤ 100 ms; the load average beside it says how quiet the machine was.
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { DOMAINS } from '../test/world/index.ts';
import { percentile } from './latency.ts';
import type { Figure } from './run.ts';
import { benchOnWorld } from './world-stack.ts';

const CALLS = 20;
const BUDGETS_MS = [2_000, 3_000] as const;
await benchOnWorld(async (stack) => {
  const figures: Figure[] = [];
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 1_000 });
  const [apiKey = ''] = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 1, mode: 'live' });
  for (const timeoutMs of BUDGETS_MS) {
    const overshoots: number[] = [];
    for (let call = 0; call < CALLS; call++) {
      const startedAt = performance.now();
      const response = await fetch(`${stack.baseUrl}/api/v1/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        // A new address each time: no answer from the verdict cache.
        body: JSON.stringify({ email: `budget-${timeoutMs}-${call}@${DOMAINS.tarpit}`, timeoutMs }),
      });
      const elapsedMs = performance.now() - startedAt;
      const { data } = (await response.json()) as { data?: { subStatus: string } };
      if (data?.subStatus !== 'timeout_exceeded')
        throw new Error(`verify answered ${response.status} ${data?.subStatus}, not timeout_exceeded`);
      overshoots.push(elapsedMs - timeoutMs);
    }
    overshoots.sort((a, b) => a - b);
    figures.push(
      {
        name: `timeoutMs ${timeoutMs} against a tarpit: overshoot, p50`,
        value: percentile(overshoots, 0.5),
        unit: 'ms',
        target: '≤ 100',
      },
      {
        name: `timeoutMs ${timeoutMs} against a tarpit: overshoot, min (negative: early)`,
        value: overshoots[0] ?? Number.NaN,
        unit: 'ms',
        target: '≥ -100',
      },
      {
        name: `timeoutMs ${timeoutMs} against a tarpit: overshoot, max`,
        value: Math.max(...overshoots),
        unit: 'ms',
        target: '≤ 100',
      },
    );
  }
  return figures;
});
