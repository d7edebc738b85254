// Batch verification against the defended world (Postfix defaults, 20 sessions per client,
// 20–80 ms RTT to every MX host), through the real edge under wrangler and a real prober:
// - 10,000 addresses over 200 company domains on 4 MX hosts, 40 % unknown: upload →
//   completed, sessions opened, hang-ups, RCPTs per session, most sessions at once per host;
// - single-call p50 idle and while that job runs (a domain on another MX host; `fresh: true`,
//   so each call is a real probe through the hub, not the account's cached verdict), with the
//   part of it spent verifying inside the Worker, beside an empty request's p50 at the same
//   moments: what the local runtime itself adds;
// - what the 10,000 run costs on Cloudflare: billable operations per verified address, counted
//   by the edge itself (RCPT_METER) in a second run of the same list, priced per 1,000 addresses;
// - 100 addresses with a tarpit and a greylisting (60 s) domain: upload → completed;
// - for both lists, the upload's estimatedTimeSeconds against the real time; the 100 again
//   (other addresses, the same domains) once the domain facts know the tarpit and the greylisting.
// Local limits: the queue consumer runs one batch at a time, and wrangler dev is two
// single-threaded workerd processes on this machine's cores; production runs consumers in
// parallel and the Durable Object on its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { METER_KEYS, type MeterKey, subrequestsOf, sumMeterLines } from '../edge/src/meter-line.ts';
import { DEV_ACCOUNT_ID, type LocalStack } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { companyList } from '../test/world/expected-verdicts.ts';
import { DOMAINS, INTERNET_ROUND_TRIP, startWorld } from '../test/world/index.ts';
import { startBenchStack } from './bench-stack.ts';
import { COMPANY_ADDRESSES as ADDRESSES, PER_MX_SESSIONS } from './company-run.ts';
import { percentile } from './latency.ts';
import { busiestShare, treeCpuSeconds } from './process-tree.ts';
import type { Figure } from './run.ts';
import { uploadAndWait } from './upload-and-wait.ts';

/** Workers Paid prices in USD per unit, as published on developers.cloudflare.com (README). */
const PRICES: Partial<Record<MeterKey, number>> = {
  workerRequests: 0.3 / 1e6,
  doRequests: 0.15 / 1e6,
  // Incoming WebSocket messages are billed as requests at 20:1.
  doWebSocketMessages: 0.15 / 1e6 / 20,
  // A message is one write, one read and one delete (its acknowledgement), each an operation
  // (64 KB or less); a retry is one more read.
  queueWrites: 0.4 / 1e6,
  queueReads: 0.4 / 1e6,
  queueAcks: 0.4 / 1e6,
  d1RowsRead: 0.001 / 1e6,
  d1RowsWritten: 1 / 1e6,
};
/** Duration of the hub while it works: 128 MB at $12.50 per million GB-s. */
const DO_GB_SECOND = 12.5 / 1e6;
const DO_MEMORY_GB = 0.128;

const world = await startWorld({ greylistDelayMs: 60_000, roundTripMs: INTERNET_ROUND_TRIP });
// The world's MX hosts are on 127.0.0.x; the prober alone speaks SMTP, on the world's port.
const common = { ALLOW_PRIVATE_TARGETS: 'true' };
/** The metered run's edge output lines; the meter's are picked from them. */
const meterLines: string[] = [];
const figures: Figure[] = [];

/**
 * A local stack in its own state folder. The timed runs leave the meter off: it prints a line
 * to wrangler's console for every D1 statement and Durable Object call, which slows the 10,000
 * run by about a sixth. The cost is counted in a run of its own.
 */
async function startStack(metered: boolean): Promise<{ stack: LocalStack; persistTo: string }> {
  const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-batch-'));
  const stack = await startBenchStack({
    persistTo,
    vars: {
      DOH_URL: world.dohUrl,
      ...(metered ? { RCPT_METER: 'true' } : {}),
      // The bench's credits are granted, not bought, so its daily storage budget would be the
      // held balance's (docs/money.md, "Quotas and free work"), spent by the 10,000-address list
      // before the next ones: the account stands for one that bought them.
      QUOTA_STORAGE_BASE_BYTES_PER_DAY: '100000000',
      ...common,
    },
    proberEnv: {
      ...common,
      SMTP_PORT: String(world.smtpPort),
      CAPACITY: '200',
      PER_MX_CONCURRENCY: String(PER_MX_SESSIONS),
    },
    onLog: (source, line) => {
      if (metered && source === 'edge') meterLines.push(line);
    },
  });
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: ADDRESSES + 1_000 });
  return { stack, persistTo };
}

async function stopStack({ stack, persistTo }: { stack: LocalStack; persistTo: string }): Promise<void> {
  await stack.close();
  rmSync(persistTo, { recursive: true, force: true });
}

const p50 = (samples: number[]) =>
  percentile(
    [...samples].sort((a, b) => a - b),
    0.5,
  );

/** A single call's wall time and `meta.processingTimeMs`: the verification inside the Worker. */
async function singleCall(stack: LocalStack, key: string): Promise<{ wallMs: number; workerMs: number }> {
  const started = performance.now();
  const response = await fetch(`${stack.baseUrl}/api/v1/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ email: `alice@${DOMAINS.accept}`, fresh: true }),
  });
  if (response.status !== 200) throw new Error(`verify answered ${response.status}`);
  const { data } = (await response.json()) as { data: { meta: { processingTimeMs: number } } };
  return { wallMs: performance.now() - started, workerMs: data.meta.processingTimeMs };
}

/** An empty request (`/healthz`): the floor the local runtime puts under every call. */
async function emptyCall(stack: LocalStack): Promise<number> {
  const started = performance.now();
  await (await fetch(`${stack.baseUrl}/healthz`)).arrayBuffer();
  return performance.now() - started;
}

/** The upload's estimatedTimeSeconds, and against the real time (within 2×: 0.5–2), and the upload's own latency. */
function estimateFigures(
  label: string,
  job: { seconds: number; estimatedSeconds: number; uploadMs: number },
): Figure[] {
  return [
    { name: `${label}: the upload's latency`, value: job.uploadMs, unit: 'ms' },
    { name: `${label}: the upload's estimatedTimeSeconds`, value: job.estimatedSeconds, unit: 's' },
    {
      name: `${label}: estimate against the real time`,
      value: job.estimatedSeconds / job.seconds,
      unit: '×',
      target: '0.5–2',
    },
  ];
}

const timed = await startStack(false);
try {
  const { stack } = timed;
  // 100 requests a minute per key: the polling, the single calls and the uploads each get their own.
  const [batchKey, singleKey, smallKey] = await createApiKeys(stack.d1, {
    accountId: DEV_ACCOUNT_ID,
    count: 3,
    mode: 'live',
  });
  if (!batchKey || !singleKey || !smallKey) throw new Error('no keys');

  const idle: { wallMs: number; workerMs: number }[] = [];
  const idleEmpty: number[] = [];
  for (let index = 0; index < 15; index++) {
    idle.push(await singleCall(stack, singleKey));
    idleEmpty.push(await emptyCall(stack));
  }

  for (const mx of world.companyMx) mx.resetStats();
  const list = companyList({ count: ADDRESSES, domains: 200 });
  const edgeCpuBefore = treeCpuSeconds(stack.edge.pid ?? 0);
  const during: { wallMs: number; workerMs: number }[] = [];
  const duringEmpty: number[] = [];
  let running = true;
  const calls = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    // One after another, 60 at most: within the single key's 100 requests a minute, and enough
    // calls for a p50 while a 10,000-address job runs for a few seconds.
    while (running && during.length < 60) {
      during.push(await singleCall(stack, singleKey));
      duringEmpty.push(await emptyCall(stack));
    }
  })();
  const big = await uploadAndWait(
    stack,
    batchKey,
    list.map((entry) => entry.address),
  );
  const edgeCpuAfter = treeCpuSeconds(stack.edge.pid ?? 0);
  running = false;
  await calls;

  const stats = world.companyMx.map((mx) => mx.stats());
  const sum = (pick: (entry: (typeof stats)[number]) => number) => stats.reduce((a, b) => a + pick(b), 0);
  const sessions = sum((entry) => entry.sessionsOpened);
  figures.push(
    { name: '10k defended: upload → completed', value: big.seconds, unit: 's', target: '≤ 15' },
    ...estimateFigures('10k defended', big),
    { name: '10k defended: sessions opened', value: sessions, unit: '' },
    {
      name: '10k defended: hang-ups (too many errors)',
      value: sum((e) => e.hardLimitHangups),
      unit: '',
      target: '0',
    },
    { name: '10k defended: connections refused (cap)', value: sum((e) => e.connectionCapRefusals), unit: '' },
    { name: '10k defended: replies delayed by error sleep', value: sum((e) => e.errorSleeps), unit: '' },
    { name: '10k defended: RCPTs per session', value: sum((e) => e.rcpts) / Math.max(1, sessions), unit: '' },
    {
      name: '10k defended: most sessions at once on one MX',
      value: Math.max(...stats.map((entry) => entry.maxConcurrentSessions)),
      unit: '',
      target: `≤ ${PER_MX_SESSIONS}`,
    },
    { name: 'single call (fresh), idle, p50', value: p50(idle.map((call) => call.wallMs)), unit: 'ms' },
    {
      name: 'single call (fresh) while the 10k job runs, p50',
      value: p50(during.map((call) => call.wallMs)),
      unit: 'ms',
      target: '≤ 2× idle',
    },
    // meta.processingTimeMs: the verification itself (mail route, the probe through the hub,
    // the prober's SMTP session). Beyond it the wall time holds the key check, the rate limit
    // and the charge (a few ms), and the request waiting to enter the busy local workerd and
    // its answer waiting to leave it.
    {
      name: 'single call: its verification in the Worker, idle, p50',
      value: p50(idle.map((call) => call.workerMs)),
      unit: 'ms',
    },
    {
      name: 'single call: its verification in the Worker while the 10k job runs, p50',
      value: p50(during.map((call) => call.workerMs)),
      unit: 'ms',
      target: '≤ 2× idle',
    },
    { name: 'empty request, idle, p50 (local runtime floor)', value: p50(idleEmpty), unit: 'ms' },
    { name: 'empty request while the 10k job runs, p50', value: p50(duringEmpty), unit: 'ms' },
    {
      // The Worker, both Durable Objects and the local D1 run in one single-threaded workerd:
      // near 100 %, every request waits its turn behind the job's work (a local limit).
      name: 'busiest edge process during the 10k job (one core = 100)',
      value: 100 * busiestShare(edgeCpuBefore, edgeCpuAfter, big.seconds),
      unit: '%',
    },
  );

  // 100 addresses: 90 company ones, 5 on a tarpit, 5 greylisted for 60 s.
  const small = [
    ...companyList({ count: 90, domains: 9 }).map((entry) => entry.address),
    ...Array.from({ length: 5 }, (_, index) => `user${index}@${DOMAINS.tarpit}`),
    ...Array.from({ length: 5 }, (_, index) => `user${index}@${DOMAINS.greylist}`),
  ];
  const slow = await uploadAndWait(stack, smallKey, small);
  figures.push({
    name: '100 with a tarpit and a 60 s greylist: upload → completed',
    value: slow.seconds,
    unit: 's',
    target: '≤ 120',
  });
  figures.push(...estimateFigures('100 with a tarpit and a 60 s greylist', slow));
  // The same mix again, other addresses of the same domains: now the domain facts know the
  // tarpit and the greylisting, and the estimate is told.
  const again = await uploadAndWait(stack, smallKey, [
    ...companyList({ count: 90, domains: 9 }).map((entry) => entry.address),
    ...Array.from({ length: 5 }, (_, index) => `user${index + 5}@${DOMAINS.tarpit}`),
    ...Array.from({ length: 5 }, (_, index) => `user${index + 5}@${DOMAINS.greylist}`),
  ]);
  figures.push(
    { name: 'the same 100 again, their domains known: upload → completed', value: again.seconds, unit: 's' },
    ...estimateFigures('the same 100 again, their domains known', again),
  );
} finally {
  await stopStack(timed);
}

// The cost: the same 10,000 addresses again, on a fresh stack with the meter on.
const metered = await startStack(true);
try {
  const [batchKey] = await createApiKeys(metered.stack.d1, {
    accountId: DEV_ACCOUNT_ID,
    count: 1,
    mode: 'live',
  });
  if (!batchKey) throw new Error('no key');
  const meterStart = meterLines.length;
  const run = await uploadAndWait(
    metered.stack,
    batchKey,
    companyList({ count: ADDRESSES, domains: 200 }).map((entry) => entry.address),
  );
  // Let the last meter lines of the run arrive.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const meter = sumMeterLines(meterLines.slice(meterStart));
  const perThousand = (count: number) => (count / ADDRESSES) * 1000;
  let cost = DO_GB_SECOND * DO_MEMORY_GB * run.seconds;
  for (const key of METER_KEYS) {
    cost += meter[key] * (PRICES[key] ?? 0);
    figures.push({ name: `10k cost: ${key} per 1,000 addresses`, value: perThousand(meter[key]), unit: '' });
  }
  figures.push({
    name: '10k cost: subrequests per 1,000 addresses',
    value: perThousand(subrequestsOf(meter)),
    unit: '',
  });
  figures.push(
    {
      name: '10k cost: USD per 1,000 addresses (Workers Paid prices)',
      value: perThousand(cost),
      unit: '$',
      target: '≤ 0.02',
    },
    { name: '10k cost run: upload → completed with the meter logging', value: run.seconds, unit: 's' },
  );
} finally {
  await stopStack(metered);
  await world.close();
}
console.log(JSON.stringify(figures));
