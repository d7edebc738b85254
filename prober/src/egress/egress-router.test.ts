// Probes through several egresses against a world whose MX hosts refuse one client address
// with Postfix's block-list reply and serve every other (test/world/defences.ts), a provider
// family whose MX hosts all list that address, and a real SOCKS5 proxy.
import type { ProbeReport, ProbeRequest } from '@rcpt/shared/contract/prober';
import { PROVIDER_REGISTRY } from '@rcpt/shared/verify/providers';
import { classifyReply, refusesClient } from '@rcpt/shared/verify/smtp-reply';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { until } from '../../../test/eventually.ts';
import {
  blocklistReply,
  type MailWorld,
  PROVIDER_DOMAINS,
  PROVIDER_HOSTS,
  startWorld,
} from '../../../test/world/index.ts';
import { type Socks5Server, startSocks5Server } from '../../../test/world/socks5-server.ts';
import { companyHosts } from '../../../test/world/zone.ts';
import type { ProbeDeps } from '../smtp/probe.ts';
import { EgressBudget } from '../throttle/egress-budget.ts';
import { MxThrottle } from '../throttle/mx-throttle.ts';
import { directEgress, type Egress, socks5Egress } from './egress.ts';
import { type EgressBlock, EgressBlocks } from './egress-blocks.ts';
import { type EgressHealth, healthPenalty } from './egress-health.ts';
import { EgressRouter } from './egress-router.ts';

const LISTED = '127.0.0.2';
const CLEAN = '127.0.0.1';
const HOSTS = 4;

let world: MailWorld;
let proxy: Socks5Server;
let listedProxy: Socks5Server;
beforeAll(async () => {
  world = await startWorld({
    companies: { domains: 8, hosts: HOSTS, defences: {}, blocklisted: { clients: [LISTED], hosts: [1, 3] } },
    blocklistedAtProvider: [LISTED],
  });
  const credentials = { username: 'rcpt', password: 'pa:ss word' };
  proxy = await startSocks5Server({ credentials, exitAddress: '127.0.0.3' });
  listedProxy = await startSocks5Server({ credentials, exitAddress: LISTED });
});
afterAll(async () => {
  await Promise.all([world?.close(), proxy?.close(), listedProxy?.close()]);
});

function deps(): ProbeDeps {
  return {
    smtpPort: world.smtpPort,
    allowPrivateTargets: true,
    requireTls: false,
    timeouts: { connectMs: 5_000, bannerMs: 5_000, commandMs: 10_000 },
    throttle: new MxThrottle(),
  };
}

function router(egresses: Egress[], blocks = new EgressBlocks()): EgressRouter {
  return new EgressRouter({ egresses, blocks, budget: new EgressBudget() });
}

function companyRequest(domainIndex: number, emails: string[]): ProbeRequest {
  const domain = world.companyDomains[domainIndex] ?? '';
  const host = companyHosts(HOSTS)[domainIndex % HOSTS];
  return {
    emails: emails.map((local) => `${local}@${domain}`),
    domain,
    mx: [{ host: host?.host ?? '', preference: 10, ips: [host?.ip ?? ''] }],
    mailFrom: 'verify@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs: 30_000,
    transcript: false,
  };
}

function codes(report: ProbeReport): number[] {
  return report.perAddress.map((outcome) => outcome.reply?.code ?? 0);
}

describe('an egress on a block list', () => {
  test('is refused at the hosts that list it, blocked there, and the addresses are answered from the other', async () => {
    const blocks = new EgressBlocks();
    const through = router([directEgress(LISTED), directEgress(CLEAN)], blocks);
    const mx1 = world.companyMx[0];
    mx1?.resetStats();
    // company-001.test is on mx1, which lists 127.0.0.2; the first egress in turn is the listed one.
    const first = await through.probe(companyRequest(0, ['user1', 'left2', 'user3']), deps());
    expect(codes(first)).toEqual([250, 550, 250]);
    expect(first.egressesRefused).toBeUndefined();
    expect(mx1?.stats().blocklisted).toBeGreaterThan(0);
    expect(blocks.active().map((block) => [block.egress, block.scope])).toEqual([
      [LISTED, { kind: 'mx_host', name: 'mx1.company.test' }],
    ]);
    const [block] = blocks.active() as [EgressBlock];
    expect(block.reply.text).toContain(`Client host [${LISTED}] blocked using zen.spamhaus.org`);
    expect(block.until - block.since).toBe(10 * 60_000);

    // Another domain of mx1: the blocked egress is not even tried there.
    const refusedBefore = mx1?.stats().blocklisted ?? 0;
    for (let turn = 0; turn < 2; turn++) {
      const again = await through.probe(companyRequest(4, ['user5', 'left6']), deps());
      expect(codes(again)).toEqual([250, 550]);
    }
    expect(mx1?.stats().blocklisted).toBe(refusedBefore);
    // mx2 does not list it: both egresses are answered there, and nothing is blocked.
    const elsewhere = await Promise.all(
      [0, 1].map(() => through.probe(companyRequest(1, ['user7']), deps())),
    );
    expect(elsewhere.map(codes)).toEqual([[250], [250]]);
    expect(blocks.active()).toHaveLength(1);
  });

  test('refused by every egress: the refusal stands, said as such, never a mailbox verdict', async () => {
    const through = router([directEgress(LISTED)]);
    const report = await through.probe(companyRequest(2, ['user1', 'left2']), deps());
    expect(report.egressesRefused).toBe(true);
    for (const outcome of report.perAddress) {
      const reply = outcome.reply ?? outcome.failure?.reply;
      expect(reply && refusesClient(reply, 'rcpt')).toBe(true);
      expect(reply && classifyReply(reply, 'rcpt').subStatus).toBe('antispam_blocked');
    }
    expect(report.perAddress[0]?.reply?.text).toBe(blocklistReply(LISTED).slice(10));
    // Asked again while blocked: no session at all, the same answer.
    world.companyMx[2]?.resetStats();
    const again = await through.probe(companyRequest(6, ['user3']), deps());
    expect(again.egressesRefused).toBe(true);
    expect(again.perAddress[0]?.failure?.reply?.text).toContain('blocked using zen.spamhaus.org');
    expect(world.companyMx[2]?.stats().sessionsOpened).toBe(0);
  });

  test('a provider family lists it at every MX host: blocked at the provider, its other hosts never asked from it', async () => {
    const blocks = new EgressBlocks();
    const through = router([directEgress(LISTED), directEgress(CLEAN)], blocks);
    const [first, second] = PROVIDER_HOSTS;
    const request = (domain: string, hosts: readonly { host: string; ip: string }[]): ProbeRequest => ({
      emails: [`alice@${domain}`, `nobody@${domain}`],
      domain,
      mx: hosts.map((host, index) => ({ host: host.host, preference: 10 * (index + 1), ips: [host.ip] })),
      mailFrom: 'verify@rcpt.test',
      helo: 'rcpt.test',
      timeoutMs: 30_000,
      transcript: false,
    });
    const providerMx = (name: string) => world.mx[name];
    providerMx('provider2')?.resetStats();
    const report = await through.probe(request(PROVIDER_DOMAINS[0], [first, second]), deps());
    expect(codes(report)).toEqual([250, 550]);
    expect(blocks.active().map((block) => block.scope)).toEqual([{ kind: 'provider', name: 'fastmail' }]);
    const other = await through.probe(request(PROVIDER_DOMAINS[1], [second]), deps());
    expect(codes(other)).toEqual([250, 550]);
    expect(providerMx('provider2')?.stats().blocklisted).toBe(0);
    // Its hour at the provider is counted against the clean egress only after the block.
    expect(through.budget.usedBy(CLEAN, 'fastmail')).toBe(4);
  });
});

describe("the egresses' health, before any refusal", () => {
  const THIRD = '127.0.0.3';
  const checked = (egress: string, overrides: Partial<EgressHealth> = {}): EgressHealth => ({
    egress,
    address: egress,
    ptr: `out-${egress}.rcpt.test`,
    fcrdns: 'pass',
    heloMatches: true,
    listings: [],
    unchecked: [],
    port25: 'unknown',
    checkedAt: 0,
    ...overrides,
  });
  const ZEN = { zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: 'SBL' };
  const healthOf = (...records: EgressHealth[]) => {
    const byId = new Map(records.map((record) => [record.egress, record]));
    return { healthOf: (id: string) => byId.get(id) };
  };
  const through = (egresses: Egress[], health: ReturnType<typeof healthOf>) =>
    new EgressRouter({ egresses, blocks: new EgressBlocks(), budget: new EgressBudget(), health });
  // gmail.com is Google's in the registry; its "MX" here is the world's accepting server.
  const gmailRequest = (emails: string[]): ProbeRequest => ({
    emails: emails.map((local) => `${local}@gmail.com`),
    domain: 'gmail.com',
    mx: [{ host: 'gmail-smtp-in.l.google.com', preference: 5, ips: [world.mx.accept?.ip ?? ''] }],
    mailFrom: 'verify@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs: 30_000,
    transcript: false,
  });

  test('an egress listed on ZEN carries no probe at all while a clean one is open: never refused, never blocked', async () => {
    const router = through(
      [directEgress(LISTED), directEgress(CLEAN)],
      healthOf(checked(LISTED, { listings: [ZEN] }), checked(CLEAN)),
    );
    const mx1 = world.companyMx[0];
    mx1?.resetStats();
    for (let turn = 0; turn < 3; turn++) {
      expect(codes(await router.probe(companyRequest(0, ['user1', 'left2']), deps()))).toEqual([250, 550]);
    }
    expect(mx1?.stats().blocklisted).toBe(0);
    expect(mx1?.sessionsFrom(LISTED)).toBe(0);
    expect(mx1?.sessionsFrom(CLEAN)).toBe(3);
    expect(router.blocks.active()).toEqual([]);
  });

  test('with no clean egress left, the least bad one is tried and its refusal handled as usual', async () => {
    const blocks = new EgressBlocks();
    const router = new EgressRouter({
      egresses: [directEgress(LISTED)],
      blocks,
      budget: new EgressBudget(),
      health: healthOf(checked(LISTED, { listings: [ZEN] })),
    });
    const report = await router.probe(companyRequest(2, ['user1']), deps());
    expect(report.egressesRefused).toBe(true);
    expect(blocks.active().map((block) => block.egress)).toEqual([LISTED]);
  });

  test('a PTR mismatch keeps an egress from the providers that check reverse DNS, not from the rest', async () => {
    const router = through(
      [directEgress(THIRD), directEgress(CLEAN)],
      healthOf(checked(THIRD, { fcrdns: 'fail', heloMatches: false }), checked(CLEAN)),
    );
    const accept = world.mx.accept;
    accept?.resetStats();
    for (let turn = 0; turn < 2; turn++) {
      expect(codes(await router.probe(gmailRequest(['user1']), deps()))).toEqual([250]);
    }
    expect(accept?.sessionsFrom(THIRD)).toBe(0);
    expect(accept?.sessionsFrom(CLEAN)).toBe(2);
    // A company host checks nothing of the kind: both egresses take their turn there.
    const mx2 = world.companyMx[1];
    mx2?.resetStats();
    for (let turn = 0; turn < 2; turn++) await router.probe(companyRequest(1, ['user7']), deps());
    expect(mx2?.sessionsFrom(THIRD)).toBe(1);
    expect(mx2?.sessionsFrom(CLEAN)).toBe(1);
  });

  test('a listing elsewhere keeps an egress only from the provider that uses that list', () => {
    const spamcop = checked(THIRD, {
      listings: [{ zone: 'bl.spamcop.net', codes: ['127.0.0.2'], meaning: 'listed on the SpamCop BL' }],
    });
    const barracuda = checked(THIRD, {
      listings: [{ zone: 'b.barracudacentral.org', codes: ['127.0.0.2'], meaning: 'BRBL' }],
    });
    const checksOf = (id: string) => PROVIDER_REGISTRY.byId(id)?.clientChecks;
    expect(healthPenalty(spamcop, checksOf('google'))).toBe(0);
    expect(healthPenalty(spamcop, undefined)).toBe(0);
    expect(healthPenalty(barracuda, checksOf('barracuda'))).toBe(1);
    expect(healthPenalty(barracuda, checksOf('microsoft'))).toBe(0);
    expect(healthPenalty(checked(THIRD, { listings: [ZEN] }), undefined)).toBe(2);
    expect(healthPenalty(checked(THIRD, { listings: [ZEN], fcrdns: 'fail' }), checksOf('yahoo'))).toBe(3);
    // A HELO name that is not the PTR name fails a provider that checks reverse DNS.
    expect(healthPenalty(checked(THIRD, { heloMatches: false }), checksOf('microsoft'))).toBe(1);
    expect(healthPenalty(checked(THIRD, { heloMatches: false }), checksOf('proton'))).toBe(0);
    // Unknown is not a failure: an unsettled check keeps no egress from anyone.
    expect(healthPenalty(checked(THIRD, { fcrdns: 'unknown', heloMatches: null }), checksOf('google'))).toBe(
      0,
    );
    expect(healthPenalty(undefined, checksOf('google'))).toBe(0);
  });
});

describe('pace per egress and provider', () => {
  test('spreads a provider over the egresses, and answers throttled when every egress has spent its hour', async () => {
    const budget = new EgressBudget({ hourlyBudget: 4, warmUp: false });
    const through = new EgressRouter({
      egresses: [directEgress(CLEAN), directEgress('127.0.0.3')],
      blocks: new EgressBlocks(),
      budget,
    });
    const [, second] = PROVIDER_HOSTS;
    const ask = () =>
      through.probe(
        {
          emails: [`alice@${PROVIDER_DOMAINS[1]}`, `bob@${PROVIDER_DOMAINS[1]}`],
          domain: PROVIDER_DOMAINS[1],
          mx: [{ host: second.host, preference: 10, ips: [second.ip] }],
          mailFrom: 'verify@rcpt.test',
          helo: 'rcpt.test',
          timeoutMs: 30_000,
          transcript: false,
        },
        deps(),
      );
    for (let round = 0; round < 4; round++) expect(codes(await ask())).toEqual([250, 250]);
    expect([budget.usedBy(CLEAN, 'fastmail'), budget.usedBy('127.0.0.3', 'fastmail')]).toEqual([4, 4]);
    const over = await ask();
    expect(over.perAddress.map((outcome) => outcome.failure?.kind)).toEqual(['throttled', 'throttled']);
    expect(over.perAddress[0]?.failure?.message).toContain('hourly budget');
  });
});

describe('a SOCKS5 egress', () => {
  test('sends the session through the proxy: the MX sees the proxy exit address', async () => {
    const through = router([
      socks5Egress({ host: proxy.host, port: proxy.port, username: 'rcpt', password: 'pa:ss word' }),
    ]);
    const before = proxy.stats().connects;
    const report = await through.probe(companyRequest(1, ['user1', 'left2']), deps());
    expect(codes(report)).toEqual([250, 550]);
    expect(proxy.stats().connects).toBeGreaterThan(before);
  });

  test('a proxy whose exit address is listed is blocked like any egress, and the next one answers', async () => {
    const blocks = new EgressBlocks();
    const listed = socks5Egress({
      host: listedProxy.host,
      port: listedProxy.port,
      username: 'rcpt',
      password: 'pa:ss word',
    });
    const through = router([listed, directEgress(CLEAN)], blocks);
    const report = await through.probe(companyRequest(0, ['user1']), deps());
    expect(codes(report)).toEqual([250]);
    expect(blocks.active().map((block) => block.egress)).toEqual([`socks5://127.0.0.1:${listedProxy.port}`]);
  });

  test('wrong credentials: the session fails to connect, saying why, without the password', async () => {
    const through = router([
      socks5Egress({ host: proxy.host, port: proxy.port, username: 'rcpt', password: 'wrong' }),
    ]);
    const failures = proxy.stats().authFailures;
    const report = await through.probe(companyRequest(1, ['user1']), deps());
    const failure = report.perAddress[0]?.failure;
    expect(failure?.kind).toBe('connection_failed');
    expect(failure?.message).toContain('Socks5 Authentication failed');
    expect(failure?.message).not.toContain('wrong');
    expect(proxy.stats().authFailures).toBe(failures + 1);
  });
});

describe('EgressBlocks', () => {
  test('a cool-down that doubles while the block persists, ends with an event, and starts over once answered', async () => {
    let clock = 1_000_000;
    const ended: string[] = [];
    const blocks = new EgressBlocks({
      baseMs: 1_000,
      capMs: 3_000,
      now: () => clock,
      events: { ended: (block, why) => ended.push(`${block.egress} ${why}`) },
    });
    const scope = { kind: 'mx_host', name: 'mx.example.test' } as const;
    const reply = {
      code: 554,
      enhanced: '5.7.1',
      text: 'Client host [192.0.2.7] blocked for <jane@example.test>',
    };
    const lengths: number[] = [];
    for (let round = 0; round < 4; round++) {
      const block = blocks.block('a', scope, reply);
      lengths.push(block.until - block.since);
      // A session opened before the block reports it again: the same block.
      expect(blocks.block('a', scope, reply)).toBe(block);
      clock = block.until + 1;
    }
    expect(lengths).toEqual([1_000, 2_000, 3_000, 3_000]);
    expect(blocks.blockOf('a', scope)).toBeNull();
    const block = blocks.block('a', scope, reply);
    expect(block.reply.text).toBe('Client host [192.0.2.7] blocked for <>');
    blocks.answered('a', scope);
    expect(ended.at(-1)).toBe('a answered');
    expect(blocks.block('a', scope, reply).level).toBe(1);
    blocks.close();
  });

  test('a block the hub remembered is in force until its own end, which is an event; a later one known here stays', async () => {
    let clock = 1_000_000;
    const ended: string[] = [];
    const blocked: string[] = [];
    const blocks = new EgressBlocks({
      now: () => clock,
      events: {
        ended: (block, why) => ended.push(`${block.scope.name} ${why}`),
        blocked: (block) => blocked.push(block.scope.name),
      },
    });
    const reply = { code: 554, enhanced: '5.7.1', text: 'blocked using zen.spamhaus.org' };
    const remembered = (name: string, until: number) => ({
      egress: 'a',
      scope: { kind: 'mx_host', name } as const,
      since: clock - 60_000,
      until,
      reply,
      level: 2,
    });
    const kept = blocks.block('a', { kind: 'mx_host', name: 'mx2.example.test' }, reply);
    blocks.restore(remembered('mx1.example.test', clock + 50));
    blocks.restore(remembered('mx2.example.test', clock + 1));
    blocks.restore(remembered('mx3.example.test', clock - 1));
    expect(blocks.active().map((block) => [block.scope.name, block.until])).toEqual([
      ['mx1.example.test', clock + 50],
      ['mx2.example.test', kept.until],
    ]);
    // Not a new block: no event for it.
    expect(blocked).toEqual(['mx2.example.test']);
    clock += 50;
    await until(() => ended.length > 0, 'the remembered block to end');
    expect(ended).toEqual(['mx1.example.test expired']);
    blocks.close();
  });

  test('the end of a cool-down is an event when it happens', async () => {
    const ended: string[] = [];
    const blocks = new EgressBlocks({ baseMs: 50, events: { ended: (_block, why) => ended.push(why) } });
    blocks.block(
      'a',
      { kind: 'provider', name: 'google' },
      { code: 421, enhanced: '4.7.0', text: '[TSS04]' },
    );
    await until(() => ended.length > 0, 'the block to end');
    expect(ended).toEqual(['expired']);
    expect(blocks.active()).toEqual([]);
  });
});

describe('EgressBudget', () => {
  test('a new egress warms up: a quarter of the hour budget, then half, then all', () => {
    let clock = 0;
    const budget = new EgressBudget({ hourlyBudget: 200, now: () => clock });
    budget.spend('a', 'google', 10);
    expect(budget.budgetOf('a')).toBe(50);
    clock += 60 * 60_000;
    expect(budget.budgetOf('a')).toBe(100);
    expect(budget.usedBy('a', 'google')).toBe(0);
    clock += 60 * 60_000;
    expect(budget.budgetOf('a')).toBe(200);
    expect(new EgressBudget({ hourlyBudget: 200, warmUp: false }).budgetOf('b')).toBe(200);
  });

  test('work spreads over the egresses before one nears its budget', () => {
    const budget = new EgressBudget({ hourlyBudget: 200, warmUp: false });
    const egresses = [{ id: 'a' }, { id: 'b' }];
    const picks: string[] = [];
    for (let probe = 0; probe < 10; probe++) {
      const [egress] = budget.leastUsed(egresses, 'google');
      picks.push(egress?.id ?? '');
      budget.spend(egress?.id ?? '', 'google', 10);
    }
    expect(picks.filter((id) => id === 'a')).toHaveLength(5);
    expect(budget.hasRoom('a', 'google', 150)).toBe(true);
    expect(budget.hasRoom('a', 'google', 151)).toBe(false);
  });

  test("a restarted prober takes back the hub's memory: the earlier warm-up, and an hour it has not counted", () => {
    const hour = 60 * 60_000;
    let clock = 10 * hour;
    const budget = new EgressBudget({ hourlyBudget: 200, now: () => clock });
    budget.spend('a', 'google', 10);
    expect(budget.budgetOf('a')).toBe(50);
    budget.restore(
      [{ egress: 'a', since: clock - 2 * hour }],
      [
        // Counted here already (the link dropped, the prober did not restart): not counted twice.
        { egress: 'a', provider: 'google', used: 10, at: clock - 60_000 },
        { egress: 'a', provider: 'yahoo', used: 30, at: clock - 40 * 60_000 },
      ],
    );
    // Warmed two hours ago: the whole budget, not the first hour's quarter.
    expect(budget.budgetOf('a')).toBe(200);
    expect(budget.warmUps()).toEqual([{ egress: 'a', since: clock - 2 * hour }]);
    expect([budget.usedBy('a', 'google'), budget.usedBy('a', 'yahoo')]).toEqual([10, 30]);
    // The remembered hour leaves the window when it would have.
    clock += 20 * 60_000 + 1;
    expect(budget.usedBy('a', 'yahoo')).toBe(0);
  });
});
