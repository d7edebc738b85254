// Single verification through the whole stack on loopback: the real edge under wrangler, a
// real prober, the fake mail world. p50/p99 with SMTP (`fresh: true`, targets ≤ 50 ms /
// ≤ 300 ms), a repeated call answered from the account's verdict cache (target p50 ≤ 20 ms),
// and the edge's own overhead with a sandbox key (target p50 ≤ 5 ms), at 1 and 20 concurrent
// clients. The machine's load average is printed beside them: the figures are only as quiet
// as the machine.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { startWorld } from '../test/world/index.ts';
import { startBenchStack } from './bench-stack.ts';
import { percentile, timeConcurrently } from './latency.ts';
import type { Figure } from './run.ts';

const REQUESTS = { 1: 200, 20: 600 } as const;
const world = await startWorld();
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-'));
// The world's MX hosts are on 127.0.0.x; the prober alone speaks SMTP, on the world's port.
const common = { ALLOW_PRIVATE_TARGETS: 'true' };
const stack = await startBenchStack({
  persistTo,
  vars: { DOH_URL: world.dohUrl, ...common },
  proberEnv: { ...common, SMTP_PORT: String(world.smtpPort) },
});
const figures: Figure[] = [];
try {
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 10_000 });
  // 100 requests a minute per key: spread the load over enough keys (90 calls each, about 2,500 in all).
  const liveKeys = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 30, mode: 'live' });
  const testKeys = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 30, mode: 'test' });
  const keyFor = (keys: string[], index: number) => keys[Math.floor(index / 90) % keys.length] ?? '';

  let used = 0;
  const verify =
    (keys: string[], email: string, options: { fresh?: boolean; expectCached?: boolean } = {}) =>
    async (index: number) => {
      const response = await fetch(`${stack.baseUrl}/api/v1/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': keyFor(keys, used + index) },
        body: JSON.stringify({ email, ...(options.fresh ? { fresh: true } : {}) }),
      });
      if (response.status !== 200)
        throw new Error(`verify answered ${response.status}: ${await response.text()}`);
      const { data } = (await response.json()) as { data: { meta: { cached: boolean } } };
      if (options.expectCached !== undefined && data.meta.cached !== options.expectCached)
        throw new Error(`verify answered cached: ${data.meta.cached}, not ${options.expectCached}`);
    };
  figures.push({ name: 'load average (1 min) before', value: loadavg()[0] ?? Number.NaN, unit: '' });
  const healthz = async () => {
    await (await fetch(`${stack.baseUrl}/healthz`)).arrayBuffer();
  };
  for (const concurrency of [1, 20] as const) {
    const total = REQUESTS[concurrency];
    // The local runtime's own floor: wrangler dev's proxy and worker, no auth, no storage.
    const floor = await timeConcurrently(total, concurrency, healthz);
    figures.push({
      name: `runtime floor (GET /healthz), ${concurrency} client(s), p50`,
      value: percentile(floor, 0.5),
      unit: 'ms',
    });
    await timeConcurrently(20, concurrency, verify(liveKeys, `user1@bulk-01.test`, { fresh: true })); // warm-up
    used += 20;
    // `fresh: true`: every call asks the mail server, as a first call for an address does.
    const smtp = await timeConcurrently(
      total,
      concurrency,
      verify(liveKeys, `user1@bulk-01.test`, { fresh: true, expectCached: false }),
    );
    used += total;
    figures.push(
      {
        name: `verify with SMTP, ${concurrency} client(s), p50`,
        value: percentile(smtp, 0.5),
        unit: 'ms',
        target: '≤ 50',
      },
      {
        name: `verify with SMTP, ${concurrency} client(s), p99`,
        value: percentile(smtp, 0.99),
        unit: 'ms',
        target: '≤ 300',
      },
    );
    // The same address again: the account's verdict, from the cache (every key is the account's).
    const repeated = await timeConcurrently(
      total,
      concurrency,
      verify(liveKeys, `user1@bulk-01.test`, { expectCached: true }),
    );
    used += total;
    figures.push(
      {
        name: `repeated verify (cached), ${concurrency} client(s), p50`,
        value: percentile(repeated, 0.5),
        unit: 'ms',
        target: '≤ 20',
      },
      {
        name: `repeated verify (cached), ${concurrency} client(s), p99`,
        value: percentile(repeated, 0.99),
        unit: 'ms',
      },
    );
    // `fresh: true`: the sandbox's own answer each time, the edge's shortest path.
    const sandbox = await timeConcurrently(
      total,
      concurrency,
      verify(testKeys, 'deliverable@example.com', { fresh: true }),
    );
    used += total;
    figures.push(
      {
        name: `edge overhead (sandbox key), ${concurrency} client(s), p50`,
        value: percentile(sandbox, 0.5),
        unit: 'ms',
        target: '≤ 5',
      },
      {
        name: `edge overhead (sandbox key), ${concurrency} client(s), p99`,
        value: percentile(sandbox, 0.99),
        unit: 'ms',
      },
    );
  }
  figures.push({ name: 'load average (1 min) after', value: loadavg()[0] ?? Number.NaN, unit: '' });
} finally {
  await stack.close();
  await world.close();
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));
