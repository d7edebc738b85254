// The domain facts of many domains read at once (a consumer batch, a settle of finished
// probes), on the real local D1: one statement, answers from it, and nothing lost when it fails.
import { env } from 'cloudflare:workers';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { describe, expect, it } from 'vitest';
import { factsWorld } from '../../../test/domain-facts.ts';
import { failingD1 } from '../../../test/failing-d1.ts';
import { createDb } from '../../storage/db.ts';
import { DomainFactsStore } from './domain-facts.ts';

const ROUTE: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.prefetch.test', preference: 10, ips: ['192.0.2.7'] }],
};

const newDomain = () => `${crypto.randomUUID()}.test`;

describe('DomainFactsStore.prefetch', () => {
  it('reads the facts of many domains at once and answers from what it read', async () => {
    const world = factsWorld(ROUTE);
    const kept = newDomain();
    const absent = newDomain();
    await world.store().mailRoute(kept);
    expect(world.resolutions).toEqual([kept]);

    const store = world.store();
    await store.prefetch([kept, absent, kept]);
    // Gone from D1 after the prefetch: what the store answers is what the prefetch read.
    await env.DB.prepare('DELETE FROM domain_facts WHERE domain = ?1').bind(kept).run();
    expect(await store.mailRoute(kept)).toEqual(ROUTE);
    expect(world.resolutions).toEqual([kept]);
    expect(await store.facts(absent)).toBeNull();
  });

  it('leaves each domain to its own read when the read of all fails', async () => {
    const world = factsWorld(ROUTE);
    const kept = newDomain();
    await world.store().mailRoute(kept);

    const resolutions: string[] = [];
    const store = new DomainFactsStore({
      // Only the read of many (json_each) fails; a domain's own read works.
      db: createDb(failingD1(env.DB, /json_each/)),
      now: Date.now,
      resolveRoute: async (domain) => {
        resolutions.push(domain);
        return { route: ROUTE, ttlSeconds: 300 };
      },
      detectTenant: async () => ({ kind: 'none', why: 'no tenant signal' }),
      resolveHost: async () => ROUTE,
    });
    await store.prefetch([kept]);
    expect(await store.mailRoute(kept)).toEqual(ROUTE);
    expect(resolutions).toEqual([]);
  });
});
