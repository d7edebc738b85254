// Domain facts for tests that drive the verification services directly: a DNS that answers
// a route and a tenant the test sets (and counts its questions), on a clock the test moves.
import type { TenantDetection } from '@rcpt/shared/dns/mail-tenant';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { DomainFactsStore } from '../src/services/verify/domain-facts.ts';
import { db } from './fixtures.ts';

export interface FactsWorld {
  /** The route DNS answers now, and its TTL. */
  route: DnsOutcome;
  ttlSeconds: number;
  /** Every domain DNS was asked about, in order. */
  resolutions: string[];
  /** What tenant detection finds now (default: no tenant), and the domains it was asked for. */
  tenant: TenantDetection;
  detections: string[];
  /** The route of a kept tenant's inbound host (default: the host resolves to 192.0.2.30). */
  hostRoute: (host: string) => DnsOutcome;
  now: () => number;
  /** A store for one request, as the routes make one per request. */
  store(): DomainFactsStore;
}

export function factsWorld(route: DnsOutcome, now: () => number = Date.now, ttlSeconds = 300): FactsWorld {
  const world: FactsWorld = {
    route,
    ttlSeconds,
    resolutions: [],
    tenant: { kind: 'none', why: 'no tenant signal' },
    detections: [],
    hostRoute: (host) => ({ kind: 'mx', dnsType: 'MX', mx: [{ host, preference: 0, ips: ['192.0.2.30'] }] }),
    now,
    store: () =>
      new DomainFactsStore({
        db: db(),
        now: () => world.now(),
        resolveRoute: async (domain) => {
          world.resolutions.push(domain);
          return { route: world.route, ttlSeconds: world.ttlSeconds };
        },
        detectTenant: async (domain) => {
          world.detections.push(domain);
          return world.tenant;
        },
        resolveHost: async (host) => world.hostRoute(host),
      }),
  };
  return world;
}
