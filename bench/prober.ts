// The prober against one local fake MX: addresses verified per second with session reuse
// (target ≥ 1,000/s on 2 cores), p50/p99 per probe, and RSS with 500 concurrent sessions
// (target ≤ 150 MB). Then the probe engine on the defended company world (Postfix defaults,
// 20 sessions per client, 20–80 ms round trips): 10,000 addresses over 200 domains on 4 MX
// hosts, 40 % unknown, against a one-connection-per-address verifier on the same world.
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { CatchAllCache } from '../prober/src/smtp/catch-all-cache.ts';
import { probe, probeMany } from '../prober/src/smtp/probe.ts';
import { SmtpSession } from '../prober/src/smtp/session.ts';
import { MxThrottle } from '../prober/src/throttle/mx-throttle.ts';
import { emptyStats } from '../test/world/defences.ts';
import { companyList, INTERNET_ROUND_TRIP, type MxStats, startWorld } from '../test/world/index.ts';
import { companyHosts } from '../test/world/zone.ts';
import { PER_MX_SESSIONS } from './company-run.ts';
import { percentile, timeConcurrently } from './latency.ts';
import type { Figure } from './run.ts';

// The single server figures are on loopback; the company world is across the internet.
const world = await startWorld();
const companyWorld = await startWorld({ roundTripMs: INTERNET_ROUND_TRIP });
const figures: Figure[] = [];
const deps = (perIpLimit: number, bannerMs = 5_000, smtpPort = world.smtpPort) => ({
  smtpPort,
  allowPrivateTargets: true,
  requireTls: false,
  timeouts: { connectMs: 5_000, bannerMs, commandMs: 5_000 },
  throttle: new MxThrottle({ perIpLimit }),
});
const request = (behaviour: 'bulk' | 'tarpit', emails: string[]): ProbeRequest => {
  const mx = world.mx[behaviour];
  if (!mx) throw new Error(`no ${behaviour} server`);
  return {
    emails,
    domain: emails[0]?.split('@')[1] ?? 'bulk-01.test',
    mx: [{ host: `mx.${behaviour}.test`, preference: 10, ips: [mx.ip] }],
    mailFrom: 'probe@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs: 30_000,
    transcript: false,
  };
};

try {
  // Throughput: 10,000 addresses in probes of 50 (one session each), 20 sessions at once.
  const requests = Array.from({ length: 200 }, (_, group) =>
    request(
      'bulk',
      Array.from({ length: 50 }, (_, index) => `user${group * 50 + index}@bulk-01.test`),
    ),
  );
  await probeMany(requests.slice(0, 10), deps(20), 10); // warm-up
  const started = performance.now();
  const reports = await probeMany(requests, deps(20), 20);
  const seconds = (performance.now() - started) / 1000;
  const accepted = reports
    .flatMap((report) => report.perAddress)
    .filter((outcome) => outcome.reply?.code === 250).length;
  if (accepted !== 10_000) throw new Error(`only ${accepted} of 10,000 accepted`);
  figures.push({
    name: 'addresses/s, 50 per session, 20 sessions',
    value: 10_000 / seconds,
    unit: '/s',
    target: '≥ 1,000',
  });

  // Latency of a one-address probe (connect, EHLO, MAIL, 2 RCPT, QUIT), one at a time.
  const single = deps(5);
  const durations = await timeConcurrently(500, 1, async (index) => {
    await probe(request('bulk', [`user${index}@bulk-01.test`]), single);
  });
  figures.push(
    { name: 'one-address probe p50', value: percentile(durations, 0.5), unit: 'ms' },
    { name: 'one-address probe p99', value: percentile(durations, 0.99), unit: 'ms' },
  );

  // Memory: 500 sessions open at once (a tarpit holds each one at the greeting).
  globalThis.gc?.();
  const baseline = process.memoryUsage().rss / 1024 / 1024;
  const holding = deps(500, 3_000);
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss / 1024 / 1024);
  }, 50);
  const held = Promise.all(
    Array.from({ length: 500 }, (_, index) =>
      probe(request('tarpit', [`user${index}@tarpit.test`]), holding),
    ),
  );
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if ((world.mx.tarpit?.connections() ?? 0) >= 500) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  peak = Math.max(peak, process.memoryUsage().rss / 1024 / 1024);
  await held;
  clearInterval(sampler);
  figures.push(
    { name: 'prober RSS with 500 concurrent sessions', value: peak, unit: 'MB', target: '≤ 150' },
    { name: 'prober RSS before them', value: baseline, unit: 'MB' },
  );

  figures.push(...(await companyRun()), ...(await oneConnectionPerAddress()));
} finally {
  await world.close();
  await companyWorld.close();
}
console.log(JSON.stringify(figures));

/** The company world's list, by domain, with the MX address of each domain. */
function companyProbes(): { domain: string; ip: string; emails: string[] }[] {
  const hosts = companyHosts(companyWorld.companyMx.length);
  const byDomain = new Map<string, string[]>();
  for (const row of companyList()) {
    const domain = row.address.split('@')[1] ?? '';
    byDomain.set(domain, [...(byDomain.get(domain) ?? []), row.address]);
  }
  return [...byDomain].map(([domain, emails]) => ({
    domain,
    ip: hosts[companyWorld.companyDomains.indexOf(domain) % hosts.length]?.ip ?? '',
    emails,
  }));
}

function companyStats(): MxStats {
  const total = companyWorld.companyMx.map((mx) => mx.stats());
  const sum = (key: keyof MxStats) => total.reduce((all, stats) => all + stats[key], 0);
  const stats = emptyStats();
  for (const key of Object.keys(stats) as (keyof MxStats)[]) stats[key] = sum(key);
  stats.maxConcurrentSessions = Math.max(...total.map((one) => one.maxConcurrentSessions));
  return stats;
}

function expectedCodes(): Map<string, number> {
  return new Map(companyList().map((row) => [row.address, row.status === 'deliverable' ? 250 : 550]));
}

/** What a sent list is worth on this world: the share of addresses answered with the right code. */
function rightShare(codes: Map<string, number | null>): number {
  const expected = expectedCodes();
  let right = 0;
  for (const [address, code] of expected) if (codes.get(address) === code) right++;
  return (100 * right) / expected.size;
}

/** rcpt's probe engine: one probe per domain (as the edge sends them), all at once. */
async function companyRun(): Promise<Figure[]> {
  const sessionsPerHost = PER_MX_SESSIONS;
  const throttle = new MxThrottle({ perIpLimit: sessionsPerHost });
  const catchAllCache = new CatchAllCache();
  for (const mx of companyWorld.companyMx) mx.resetStats();
  const started = performance.now();
  const reports = await Promise.all(
    companyProbes().map(({ domain, ip, emails }) =>
      probe(
        {
          emails,
          domain,
          mx: [{ host: `mx.${domain}`, preference: 10, ips: [ip] }],
          mailFrom: 'probe@rcpt.test',
          helo: 'rcpt.test',
          timeoutMs: 120_000,
          transcript: false,
        },
        { ...deps(sessionsPerHost, 5_000, companyWorld.smtpPort), throttle, catchAllCache },
      ),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const codes = new Map(
    reports.flatMap((report) =>
      report.perAddress.map((outcome) => [outcome.email, outcome.reply?.code ?? null]),
    ),
  );
  return companyFigures('rcpt sessions', seconds, rightShare(codes), companyStats());
}

/**
 * A plain verifier: one connection per address (connect, EHLO, MAIL, RCPT, QUIT), 20 at once
 * per MX host, no catch-all test.
 */
async function oneConnectionPerAddress(): Promise<Figure[]> {
  for (const mx of companyWorld.companyMx) mx.resetStats();
  const byHost = new Map<string, string[]>();
  for (const { ip, emails } of companyProbes()) byHost.set(ip, [...(byHost.get(ip) ?? []), ...emails]);
  const codes = new Map<string, number | null>();
  const started = performance.now();
  await Promise.all(
    [...byHost].map(([ip, emails]) =>
      timeConcurrently(emails.length, PER_MX_SESSIONS, async (index) => {
        const email = emails[index] ?? '';
        const session = new SmtpSession({
          host: `mx.${email.split('@')[1]}`,
          ip,
          port: companyWorld.smtpPort,
          helo: 'rcpt.test',
          sessionTimeoutMs: 30_000,
          startTls: 'off',
        });
        try {
          await session.open();
          const outcome = await session.transaction('probe@rcpt.test', [email], { smtputf8: false });
          codes.set(email, outcome.replies[0]?.code ?? null);
        } catch {
          codes.set(email, null);
        } finally {
          await session.quit();
        }
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  return companyFigures('one connection per address', seconds, rightShare(codes), companyStats());
}

function companyFigures(label: string, seconds: number, right: number, stats: MxStats): Figure[] {
  return [
    {
      name: `${label}: 10,000 addresses, 200 domains, 4 Postfix MX, 20–80 ms RTT`,
      value: seconds,
      unit: 's',
      ...(label === 'rcpt sessions' ? { target: '≤ 15' } : {}),
    },
    { name: `${label}: answered right`, value: right, unit: '%' },
    { name: `${label}: sessions opened`, value: stats.sessionsOpened, unit: '' },
    { name: `${label}: RCPTs per session`, value: stats.rcpts / Math.max(1, stats.sessionsOpened), unit: '' },
    {
      name: `${label}: most sessions at once on one MX`,
      value: stats.maxConcurrentSessions,
      unit: '',
      target: '≤ 20',
    },
    {
      name: `${label}: "too many errors" hang-ups`,
      value: stats.hardLimitHangups,
      unit: '',
      ...(label === 'rcpt sessions' ? { target: '0' } : {}),
    },
    { name: `${label}: replies slowed by the error sleep`, value: stats.errorSleeps, unit: '' },
    { name: `${label}: connections refused (too many)`, value: stats.connectionCapRefusals, unit: '' },
  ];
}
