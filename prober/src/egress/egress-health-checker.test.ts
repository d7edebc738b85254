// The health check against the world's DNS (its UDP resolver, as DNS_SERVERS points a prober at
// it): a PTR for each egress address, one that does not resolve back, and a ZEN zone listing one.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EGRESS_PTR, type MailWorld, startWorld } from '../../../test/world/index.ts';
import { systemLookup } from '../dns/system-lookup.ts';
import { directEgress, SYSTEM_EGRESS, socks5Egress } from './egress.ts';
import type { EgressHealth } from './egress-health.ts';
import { EgressHealthChecker } from './egress-health-checker.ts';

const [CLEAN, LISTED, MISMATCH] = EGRESS_PTR;

let world: MailWorld;
beforeAll(async () => {
  world = await startWorld({ companies: { domains: 1, hosts: 1 }, zenListed: [LISTED.address] });
});
afterAll(async () => {
  await world?.close();
});

function checker(options: { onChange?: (health: EgressHealth[]) => void; port25?: string } = {}) {
  return new EgressHealthChecker({
    egresses: [
      directEgress(CLEAN.address, CLEAN.name),
      directEgress(LISTED.address),
      directEgress(MISMATCH.address, MISMATCH.name),
      socks5Egress({ host: '127.0.0.1', port: 1, username: null, password: null }),
      SYSTEM_EGRESS,
    ],
    lookup: systemLookup({ servers: [world.dnsServer], timeoutMs: 2_000, tries: 1 }),
    blocklists: ['zen.spamhaus.org', 'bl.spamcop.net'],
    intervalMs: 3_600_000,
    port25Target: options.port25 ? { host: options.port25, port: world.smtpPort } : null,
    heloName: 'probe.rcpt.test',
    connectTimeoutMs: 2_000,
    ...(options.onChange ? { onChange: options.onChange } : {}),
  });
}

describe('EgressHealthChecker', () => {
  test('reads FCrDNS, the HELO match and the ZEN listing from the resolver; an unknown address is not checked', async () => {
    const health = await checker().check();
    const of = (id: string) => health.find((entry) => entry.egress === id);
    expect(of(CLEAN.address)).toMatchObject({
      address: CLEAN.address,
      ptr: CLEAN.name,
      fcrdns: 'pass',
      heloMatches: true,
      listings: [],
      unchecked: [],
      port25: 'unknown',
    });
    // HELO_NAME is its HELO: not its PTR name.
    expect(of(LISTED.address)).toMatchObject({
      ptr: LISTED.name,
      fcrdns: 'pass',
      heloMatches: false,
      listings: [{ zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: expect.stringMatching(/^SBL/) }],
    });
    expect(of(MISMATCH.address)).toMatchObject({ ptr: MISMATCH.name, fcrdns: 'fail', listings: [] });
    expect(of('socks5://127.0.0.1:1')).toMatchObject({ address: null, fcrdns: 'unknown', listings: [] });
    expect(of('system')).toMatchObject({ address: null, fcrdns: 'unknown' });
  });

  test('port 25: a connection that gets through is ok, a refused one blocked', async () => {
    const open = await checker({ port25: world.mx.accept?.ip ?? '' }).check();
    expect(open.map((entry) => entry.port25)).toEqual(['ok', 'ok', 'ok', 'blocked', 'ok']);
    // Nothing of the world ever listens on mx1.fallback.test's address: refused from every egress.
    const closed = await checker({ port25: '127.0.0.22' }).check();
    expect(closed.every((entry) => entry.port25 === 'blocked')).toBe(true);
  });

  test('tells of a change only: the same result again is not one, a delisting is', async () => {
    const changes: EgressHealth[][] = [];
    const running = checker({ onChange: (health) => changes.push(health) });
    await running.start();
    await running.check();
    expect(changes).toHaveLength(1);
    const listedName = `2.0.0.127.zen.spamhaus.org`;
    world.setZone(listedName, null);
    try {
      await running.check();
      expect(changes).toHaveLength(2);
      expect(running.healthOf(LISTED.address)?.listings).toEqual([]);
    } finally {
      world.setZone(listedName, { A: ['127.0.0.2'] });
      running.close();
    }
  });
});
