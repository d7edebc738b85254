// The prober against one local fake MX: addresses verified per second with session reuse
// (target ≥ 1,000/s on 2 cores), p50/p99 per probe, and RSS with 500 concurrent sessions
// (target ≤ 150 MB).
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { probe, probeMany } from '../prober/src/smtp/probe.ts';
import { MxThrottle } from '../prober/src/throttle/mx-throttle.ts';
import { startWorld } from '../test/world/index.ts';
import { percentile, timeConcurrently } from './latency.ts';
import type { Figure } from './run.ts';

const world = await startWorld();
const figures: Figure[] = [];
const deps = (perIpLimit: number, bannerMs = 5_000) => ({
  smtpPort: world.smtpPort,
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
} finally {
  await world.close();
}
console.log(JSON.stringify(figures));
