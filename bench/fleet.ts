// The prober fleet's figures, through the real edge under wrangler and real prober processes in
// two regions (PROBER_REGIONS=primary,secondary), against the fake mail world:
// - fair shares: another account's single-call p50/p95 (`fresh: true`, ordinary deliverable
//   addresses) and its 1,000-address list's time, alone and while a list of 100 tarpit domains
//   (each its own MX name, each refused recipient held 5 s as Exchange does) runs;
// - failover: a single call's time with the primary region's prober stopped, beside the same
//   call with it linked: what passing the call on to the next region adds.

import type { LocalStack } from '../scripts/stack/local-stack.ts';
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createAccount, createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { bulkDomainNames, type MailWorld, tarpitDomainNames } from '../test/world/index.ts';
import { percentile } from './latency.ts';
import type { Figure } from './run.ts';
import { benchOnWorld } from './world-stack.ts';

const CALLS = 40;

/** Keys of one account, each used for fewer than 100 requests a minute (the rate limit). */
function keyRing(keys: string[]): () => string {
  let used = 0;
  return () => keys[Math.floor(used++ / 60) % keys.length] ?? '';
}

type Api = (path: string, key: string, json?: unknown) => Promise<unknown>;

/** The edge's API at `baseUrl`: a GET, or a POST of `json`; the parsed 200 answer. */
const apiAt =
  (baseUrl: string): Api =>
  async (path, key, json) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': key, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    });
    if (response.status !== 200)
      throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return response.json();
  };

/** `CALLS` single calls one after another, each a real probe; their durations, sorted. */
async function singleCalls(api: Api, world: MailWorld, key: () => string, label: string): Promise<number[]> {
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
async function listSeconds(api: Api, emails: string[], key: () => string): Promise<number> {
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

async function measureFleet(stack: LocalStack, world: MailWorld): Promise<Figure[]> {
  const api = apiAt(stack.baseUrl);
  const figures: Figure[] = [];
  await stack.addProber({ region: 'secondary' });
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 1_000 });
  const tarpitKey = keyRing(
    await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 5, mode: 'live' }),
  );
  const other = await createAccount(stack.d1, { credits: 10_000 });
  const otherKey = keyRing(await createApiKeys(stack.d1, { accountId: other, count: 20, mode: 'live' }));
  const domains = bulkDomainNames(50);
  const list = (round: number) =>
    Array.from({ length: 1_000 }, (_, index) => `user${round}x${index}@${domains[index % domains.length]}`);

  await singleCalls(api, world, otherKey, 'warm-up');
  // The first list also resolves the 50 domains' routes, which the later ones find kept.
  await listSeconds(api, list(9), otherKey);
  const aloneCalls = await singleCalls(api, world, otherKey, 'alone');
  const aloneList = await listSeconds(api, list(0), otherKey);
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
  const sharedCalls = await singleCalls(api, world, otherKey, 'beside the tarpit list');
  const sharedList = await listSeconds(api, list(1), otherKey);
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
  const failover = await singleCalls(api, world, otherKey, 'primary stopped');
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
  return figures;
}

await benchOnWorld(measureFleet, { vars: { PROBER_REGIONS: 'primary,secondary' } });
