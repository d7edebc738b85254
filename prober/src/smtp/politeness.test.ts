// Probes against MX hosts that defend themselves as real ones do (test/world/defences.ts):
// Postfix's error limits and connection cap, Exchange's tarpit, one recipient per
// transaction. The probe must answer every address right without ever being slowed down,
// hung up on or refused, and learn what a stricter host takes.
import type { ProbeReport, ProbeRequest } from '@rcpt/shared/contract/prober';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RunningMx } from '../../../test/world/fake-mx.ts';
import { startFastMx } from '../../../test/world/fast-mx.ts';
import { companyList, type MailWorld, POSTFIX_DEFAULTS, startWorld } from '../../../test/world/index.ts';
import { companyHosts, MX_HOSTS } from '../../../test/world/zone.ts';
import { MxThrottle } from '../throttle/mx-throttle.ts';
import { CatchAllCache } from './catch-all-cache.ts';
import { type ProbeDeps, probe } from './probe.ts';

const DOMAINS = 40;
const HOSTS = 4;
const SESSIONS_PER_HOST = 20;

let world: MailWorld;
beforeAll(async () => {
  world = await startWorld({ companies: { domains: DOMAINS, hosts: HOSTS } });
});
afterAll(async () => {
  await world?.close();
});

function deps(throttle: MxThrottle, extra: Partial<ProbeDeps> = {}): ProbeDeps {
  return {
    smtpPort: world.smtpPort,
    allowPrivateTargets: true,
    requireTls: false,
    timeouts: { connectMs: 5_000, bannerMs: 5_000, commandMs: 10_000 },
    throttle,
    ...extra,
  };
}

function request(domain: string, emails: string[], ip: string, timeoutMs = 60_000): ProbeRequest {
  return {
    emails,
    domain,
    mx: [{ host: `mx.${domain}`, preference: 10, ips: [ip] }],
    mailFrom: 'verify@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs,
    transcript: false,
  };
}

/** Each address's reply code, or its failure. */
function answers(report: ProbeReport): Record<string, string> {
  return Object.fromEntries(
    report.perAddress.map((outcome) => [
      outcome.email,
      outcome.reply ? String(outcome.reply.code) : `${outcome.failure?.kind}@${outcome.failure?.stage}`,
    ]),
  );
}

describe('Postfix-default MX hosts', () => {
  test('2,000 addresses over 40 domains, 40 % unknown: every answer right, never slowed, hung up on or refused', async () => {
    const list = companyList({ count: 2_000, domains: DOMAINS });
    const hosts = companyHosts(HOSTS);
    const byDomain = new Map<string, string[]>();
    for (const row of list) {
      const domain = row.address.split('@')[1] ?? '';
      byDomain.set(domain, [...(byDomain.get(domain) ?? []), row.address]);
    }
    for (const mx of world.companyMx) mx.resetStats();
    const throttle = new MxThrottle({ perIpLimit: SESSIONS_PER_HOST });
    const catchAllCache = new CatchAllCache();
    const reports = await Promise.all(
      [...byDomain].map(([domain, emails]) => {
        const host = hosts[world.companyDomains.indexOf(domain) % HOSTS];
        return probe(request(domain, emails, host?.ip ?? ''), deps(throttle, { catchAllCache }));
      }),
    );

    const got = Object.assign({}, ...reports.map(answers)) as Record<string, string>;
    const expected = Object.fromEntries(
      list.map((row) => [row.address, row.subStatus === 'accepted_email' ? '250' : '550']),
    );
    expect(got).toEqual(expected);
    for (const report of reports) expect(report.catchAllReply?.code).toBe(550);

    for (const mx of world.companyMx) {
      const stats = mx.stats();
      expect(stats.hardLimitHangups, mx.name).toBe(0);
      expect(stats.errorSleeps, mx.name).toBe(0);
      expect(stats.connectionCapRefusals, mx.name).toBe(0);
      expect(stats.maxConcurrentSessions, mx.name).toBeLessThanOrEqual(SESSIONS_PER_HOST);
      // Sessions are reused within the error budget, not one per address.
      expect(stats.sessionsOpened, mx.name).toBeLessThan(stats.rcpts / 4);
    }
  });
});

describe('hosts stricter than the defaults', () => {
  let strict: RunningMx;
  beforeAll(async () => {
    // Errors slow every reply after 5 and end the session at 7: below the prober's default budget.
    strict = await startFastMx({ name: 'strict', host: 'mx.strict.test', ip: '127.0.0.61' }, 0, {
      ...POSTFIX_DEFAULTS,
      softErrorLimit: 5,
      hardErrorLimit: 7,
    });
  });
  afterAll(async () => {
    await strict?.close();
  });

  test('the first probe learns the budget from the slow replies or the hang-up; the next is never slowed', async () => {
    const throttle = new MxThrottle({ perIpLimit: 4 });
    const emails = (prefix: string) =>
      Array.from({ length: 40 }, (_, index) =>
        index % 2 === 0 ? `user${prefix}${index}@strict.test` : `left${prefix}${index}@strict.test`,
      );
    const ask = (prefix: string) =>
      probe(
        {
          ...request('strict.test', emails(prefix), strict.ip),
          mx: [{ host: 'mx.strict.test', preference: 10, ips: [strict.ip] }],
        },
        { ...deps(throttle), smtpPort: strict.port },
      );

    const first = await ask('a');
    expect(Object.values(answers(first))).toEqual(
      emails('a').map((email) => (email.startsWith('user') ? '250' : '550')),
    );
    expect(throttle.profile(strict.ip).rejectionBudget).toBeLessThanOrEqual(4);

    strict.resetStats();
    const second = await ask('b');
    expect(Object.values(answers(second))).toEqual(
      emails('b').map((email) => (email.startsWith('user') ? '250' : '550')),
    );
    expect(strict.stats()).toMatchObject({ errorSleeps: 0, hardLimitHangups: 0 });
  });

  test('Exchange tarpit: every address answered, and one rejection per session from then on', async () => {
    const throttle = new MxThrottle({ perIpLimit: 5 });
    const mx = world.mx.exchange!;
    const domain = world.defendedDomains.exchange;
    const emails = ['alice', 'bob', 'nobody1', 'carol', 'nobody2', 'user7'].map(
      (local) => `${local}@${domain}`,
    );
    const report = await probe(request(domain, emails, mx.ip), deps(throttle));
    expect(Object.values(answers(report))).toEqual(['250', '250', '550', '250', '550', '250']);
    expect(throttle.profile(mx.ip).rejectionBudget).toBe(1);
  }, 30_000);

  test('one recipient per transaction: 452 4.5.3 is learned, every address answered', async () => {
    const throttle = new MxThrottle({ perIpLimit: 2 });
    const mx = world.mx.onercpt!;
    mx.resetStats();
    const domain = world.defendedDomains.onercpt;
    const emails = ['alice', 'nobody1', 'bob', 'carol', 'nobody2', 'user9'].map(
      (local) => `${local}@${domain}`,
    );
    const report = await probe(request(domain, emails, mx.ip), deps(throttle));
    expect(Object.values(answers(report))).toEqual(['250', '550', '250', '250', '550', '250']);
    expect(report.catchAllReply?.code).toBe(550);
    expect(throttle.profile(mx.ip).recipientsPerTransaction).toBe(1);
  });
});

describe('the catch-all test', () => {
  test('once per domain across probes while the cache holds it', async () => {
    const throttle = new MxThrottle();
    const cache = new CatchAllCache();
    const mx = world.mx.accept!;
    const domain = world.domains.accept!;
    mx.resetStats();
    const first = await probe(
      request(domain, [`alice@${domain}`], mx.ip),
      deps(throttle, { catchAllCache: cache }),
    );
    const second = await probe(
      request(domain, [`bob@${domain}`], mx.ip),
      deps(throttle, { catchAllCache: cache }),
    );
    expect(first.catchAllReply?.code).toBe(550);
    expect(second.catchAllReply).toEqual(first.catchAllReply);
    // alice, the random address, bob: no second random address.
    expect(mx.received()).toHaveLength(3);
    expect(mx.received()[2]).toBe(`bob@${domain}`);
  });

  test('is kept apart for a security gateway and the tenant behind it, which answer it differently', async () => {
    const throttle = new MxThrottle();
    const cache = new CatchAllCache();
    const domain = world.domains.gateway!;
    const probeVia = (name: 'gateway' | 'tenant', email: string) =>
      probe(
        {
          ...request(domain, [email], world.mx[name]!.ip),
          mx: [{ host: MX_HOSTS[name], preference: 10, ips: [world.mx[name]!.ip] }],
        },
        deps(throttle, { catchAllCache: cache }),
      );
    const gateway = await probeVia('gateway', `alice@${domain}`);
    const tenant = await probeVia('tenant', `alice@${domain}`);
    const gatewayAgain = await probeVia('gateway', `bob@${domain}`);
    expect(gateway.catchAllReply?.code).toBe(250);
    expect(tenant.catchAllReply?.code).toBe(550);
    expect(gatewayAgain.catchAllReply?.code).toBe(250);
  });

  test('a 4xx answer is not kept, and an entry expires after its TTL', () => {
    let now = 0;
    const cache = new CatchAllCache({ ttlMs: 1_000, now: () => now });
    cache.set('a.test', { code: 450, enhanced: '4.2.0', text: 'Greylisted' });
    expect(cache.get('a.test')).toBeNull();
    cache.set('a.test', { code: 550, enhanced: '5.1.1', text: 'User unknown' });
    expect(cache.get('a.test')?.code).toBe(550);
    now = 1_000;
    expect(cache.get('a.test')).toBeNull();
  });
});
