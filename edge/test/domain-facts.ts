// Domain facts for tests that drive the verification services directly: a DNS that answers
// a route the test sets (and counts its questions), on a clock the test moves.
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { DomainFactsStore } from '../src/services/domain-facts.ts';
import { db } from './fixtures.ts';

export interface FactsWorld {
  /** The route DNS answers now, and its TTL. */
  route: DnsOutcome;
  ttlSeconds: number;
  /** Every domain DNS was asked about, in order. */
  resolutions: string[];
  now: () => number;
  /** A store for one request, as the routes make one per request. */
  store(): DomainFactsStore;
}

export function factsWorld(route: DnsOutcome, now: () => number = Date.now, ttlSeconds = 300): FactsWorld {
  const world: FactsWorld = {
    route,
    ttlSeconds,
    resolutions: [],
    now,
    store: () =>
      new DomainFactsStore({
        db: db(),
        now: () => world.now(),
        resolveRoute: async (domain) => {
          world.resolutions.push(domain);
          return { route: world.route, ttlSeconds: world.ttlSeconds };
        },
      }),
  };
  return world;
}
