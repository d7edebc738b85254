// The deployment's DNS-over-HTTPS resolvers (DOH_URL), one per isolate and resolver list.
import type { Config } from '../config.ts';
import { type DnsAnswer, DohClient } from './doh-client.ts';
import type { SubrequestBudget } from './subrequest-budget.ts';
import { TtlCache } from './ttl-cache.ts';

// One resolver per isolate and resolver list, so its TTL cache is shared by requests; an
// invocation that counts its subrequests gets its own client on the same cache.
const resolvers = new Map<string, DohClient>();
const answerCaches = new Map<string, TtlCache<DnsAnswer>>();

/** The deployment's DoH client; with `budget`, one whose fetches count against it. */
export function dohClientFor(config: Config, budget?: SubrequestBudget): DohClient {
  const key = config.DOH_URL.join(',');
  let cache = answerCaches.get(key);
  if (!cache) {
    cache = new TtlCache<DnsAnswer>();
    answerCaches.set(key, cache);
  }
  if (budget) return new DohClient({ urls: config.DOH_URL, cache, fetch: budget.fetch });
  let client = resolvers.get(key);
  if (!client) {
    client = new DohClient({ urls: config.DOH_URL, cache });
    resolvers.set(key, client);
  }
  return client;
}
