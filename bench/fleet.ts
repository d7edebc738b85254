// The prober fleet's figures, through the real edge under wrangler and real prober processes in
// two regions (PROBER_REGIONS=primary,secondary), against the fake mail world:
// - fair shares: another account's single-call p50/p95 (`fresh: true`, ordinary deliverable
//   addresses) and its 1,000-address list's time, alone and while a list of 100 tarpit domains
//   (each its own MX name, each refused recipient held 5 s as Exchange does) runs;
// - failover: a single call's time with the primary region's prober stopped, beside the same
//   call with it linked: what passing the call on to the next region adds.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createAccount, createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { bulkDomainNames, startWorld, tarpitDomainNames } from '../test/world/index.ts';
import { startBenchStack } from './bench-stack.ts';
import { percentile } from './latency.ts';
import type { Figure } from './run.ts';

const CALLS = 40;
const world = await startWorld();
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-fleet-'));
const common = { ALLOW_PRIVATE_TARGETS: 'true' };
const stack = await startBenchStack({
  persistTo,
  vars: { DOH_URL: world.dohUrl, PROBER_REGIONS: 'primary,secondary', ...common },
  proberEnv: { ...common, SMTP_PORT: String(world.smtpPort) },
});
const figures: Figure[] = [];

/** Keys of one account, each used for fewer than 100 requests a minute (the rate limit). */
function keyRing(keys: string[]): () => string {
  let used = 0;
  return () => keys[Math.floor(used++ / 60) % keys.length] ?? '';
}

async function api(path: string, key: string, json?: unknown): Promise<unknown> {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method: json === undefined ? 'GET' : 'POST',
    headers: { 'x-api-key': key, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  if (response.status !== 200)
    throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

/** `CALLS` single calls one after another, each a real probe; their durations, sorted. */
async function singleCalls(key: () => string, label: string): Promise<number[]> {
  const durations: number[] = [];
  for (let call = 0; call < CALLS; call++) {
    const started = performance.now();
    const { data } = (await api('/api/v1/verify', key(), {
      email: `user${call}@${world.domains.accept}`,
      fresh: true,
    })) as { data: { status: string; subStatus: string } };
    durations.push(performance.now() - started);
    if (data.status !== 'deliverable')
      throw new Error(`${label}: call ${call} answered ${data.status} / ${data.subStatus}`);
  }
  return durations.sort((a, b) => a - b);
}

/** Uploads `emails` and waits until the job completes; its wall time in seconds. */
async function listSeconds(emails: string[], key: () => string): Promise<number> {
  const started = performance.now();
  const { jobId } = (await api('/api/v1/bulk/upload', key(), { emails })) as { jobId: string };
  for (;;) {
    const { job } = (await api(`/api/v1/bulk/status/${jobId}`, key())) as {
      job: { status: string; deliverableCount: number };
    };
    if (job.status === 'completed') {
      if (job.deliverableCount !== emails.length)
        throw new Error(`${job.deliverableCount} of ${emails.length} deliverable`);
      return (performance.now() - started) / 1000;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

try {
  await stack.addProber({ region: 'secondary' });
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 1_000 });
  const tarpitKey = keyRing(
    await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 5, mode: 'live' }),
  );
  const other = createAccount(stack.d1, { credits: 10_000 });
  const otherKey = keyRing(await createApiKeys(stack.d1, { accountId: other, count: 20, mode: 'live' }));
  const domains = bulkDomainNames(50);
  const list = (round: number) =>
    Array.from({ length: 1_000 }, (_, index) => `user${round}x${index}@${domains[index % domains.length]}`);
  figures.push({ name: 'load average (1 min) before', value: loadavg()[0] ?? Number.NaN, unit: '' });

  await singleCalls(otherKey, 'warm-up');
  // The first list also resolves the 50 domains' routes, which the later ones find kept.
  await listSeconds(list(9), otherKey);
  const aloneCalls = await singleCalls(otherKey, 'alone');
  const aloneList = await listSeconds(list(0), otherKey);
  figures.push(
    { name: 'single call, alone, p50', value: percentile(aloneCalls, 0.5), unit: 'ms' },
    { name: 'single call, alone, p95', value: percentile(aloneCalls, 0.95), unit: 'ms' },
    { name: '1,000-address list, alone', value: aloneList, unit: 's' },
  );

  const { jobId: tarpitJob } = (await api('/api/v1/bulk/upload', tarpitKey(), {
    emails: tarpitDomainNames(100).map((domain) => `nobody@${domain}`),
  })) as { jobId: string };
  // The tarpit list holds the probers' slots before the other account comes.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const sharedCalls = await singleCalls(otherKey, 'beside the tarpit list');
  const sharedList = await listSeconds(list(1), otherKey);
  const { job: tarpitStatus } = (await api(`/api/v1/bulk/status/${tarpitJob}`, tarpitKey())) as {
    job: { status: string };
  };
  figures.push(
    {
      name: "another account's single call while a 100-tarpit-domain list runs, p50",
      value: percentile(sharedCalls, 0.5),
      unit: 'ms',
    },
    {
      name: "another account's single call while a 100-tarpit-domain list runs, p95",
      value: percentile(sharedCalls, 0.95),
      unit: 'ms',
      target: '≤ 2,000',
    },
    {
      name: "another account's 1,000-address list while it runs",
      value: sharedList,
      unit: 's',
    },
    {
      name: '… against the same list alone',
      value: sharedList / aloneList,
      unit: '×',
      target: '≤ 1.5',
    },
    // 1: the tarpit list was still running when the other account's work was done.
    {
      name: 'tarpit list still running at the end',
      value: tarpitStatus.status === 'processing' ? 1 : 0,
      unit: '',
    },
  );

  // A call out at the primary's prober when it is stopped: from the stop to its answer.
  const inFlight: number[] = [];
  for (let sample = 0; sample < 5; sample++) {
    if (!stack.prober) await stack.startProber();
    stack.prober?.kill('SIGSTOP'); // it takes the call and sits on it
    const answered = api('/api/v1/verify', otherKey(), {
      email: `user${100 + sample}@${world.domains.accept}`,
      fresh: true,
    }) as Promise<{ data: { status: string } }>;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const stopped = performance.now();
    await stack.stopProber('SIGKILL');
    const { data } = await answered;
    inFlight.push(performance.now() - stopped);
    if (data.status !== 'deliverable')
      throw new Error(`a call in flight at the stop answered ${data.status}`);
  }
  inFlight.sort((a, b) => a - b);
  const failover = await singleCalls(otherKey, 'primary stopped');
  figures.push(
    {
      name: "single call, primary region's prober stopped, p50",
      value: percentile(failover, 0.5),
      unit: 'ms',
    },
    {
      name: "single call, primary region's prober stopped, p95",
      value: percentile(failover, 0.95),
      unit: 'ms',
    },
    {
      name: "a call out at the primary's prober when it is stopped: stop → answer, p50 of 5",
      value: percentile(inFlight, 0.5),
      unit: 'ms',
    },
    {
      name: 'failover: what passing a call on to the next region adds, p50',
      value: percentile(failover, 0.5) - percentile(aloneCalls, 0.5),
      unit: 'ms',
      target: '≤ a few hundred',
    },
  );
  figures.push({ name: 'load average (1 min) after', value: loadavg()[0] ?? Number.NaN, unit: '' });
} finally {
  await stack.close();
  await world.close();
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));
