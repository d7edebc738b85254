// What rcpt knows about a domain, shared by every account (docs/architecture.md, "Domain
// facts"): its mail route for as long as DNS allows (capped), the provider the route names, the
// catch-all answer for as long as the shared catch-all rule keeps it, and the mail tenant behind
// a security gateway. Verifications read the facts before asking DNS and record what a probe
// learned; a cached verdict is answered again only while the facts it was reached on still hold.
//
// One instance serves one request (or one consumer batch): it reads each domain's row once.
import type { ProbeReport, SmtpReply } from '@rcpt/shared/contract/prober';
import { MAX_MX_HOSTS } from '@rcpt/shared/dns/mail-route';
import { type MailTenant, TENANT_TTL_MS, type TenantDetection } from '@rcpt/shared/dns/mail-tenant';
import { CATCH_ALL_TTL_MS, isLastingCatchAllReply } from '@rcpt/shared/verify/catch-all';
import type { DnsOutcome, ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { AcceptedBounces } from '@rcpt/shared/verify/learnt';
import { providerFamilyOf } from '@rcpt/shared/verify/providers';
import { classifyReply } from '@rcpt/shared/verify/smtp-reply';
import { catchAllReading } from '@rcpt/shared/verify/verdict';
import type { ProbeGateway } from '@rcpt/shared/verify/verify-address';
import type { Config } from '../../config.ts';
import type { TimedMailRoute } from '../../dns/mail-route.ts';
import type { SubrequestBudget } from '../../dns/subrequest-budget.ts';
import type { Db } from '../../storage/db.ts';
import {
  type DomainFactsRow,
  readDomainFacts,
  readManyDomainFacts,
  recordCatchAll,
  recordGreylistDelay,
  recordMailRoute,
  recordSlowProbe,
  recordTenant,
} from '../../storage/domain-facts.ts';

/** Longest a mail route is kept, whatever its DNS TTL: a moved MX is noticed within the hour. */
export const MAIL_ROUTE_MAX_TTL_SECONDS = 3_600;

/**
 * How long a measured greylisting delay is trusted: a day, as long as retention keeps a facts
 * row nobody touched. Greylisters keep their delay for months (postgrey's `--delay`), but one
 * reconfigured should not be misreported for longer.
 */
export const GREYLIST_DELAY_TTL_MS = 86_400_000;
/** The longest measured delay kept: past the greylist pace's end a batch never measures one. */
const MAX_GREYLIST_DELAY_SECONDS = 3_600;

/** A batch probe of the domain that took long: a tarpit, a server slow to answer. */
export interface SlowProbe {
  seconds: number;
  /** It ran out of time: the batch asks such an address once more (RETRY_PACES.timeout). */
  timedOut: boolean;
}

/** A probe this long is worth remembering for the next job's estimate; a shorter one is not. */
const SLOW_PROBE_SECONDS = 5;

/** A fact and when it is to be asked again. */
export interface TimedFact<Value> {
  value: Value;
  expiresAt: number;
}

/** A kept tenant detection: the tenant and the signal that named it, or why there is none. */
export type KeptTenant =
  | { kind: 'tenant'; tenant: MailTenant; signal: string }
  | { kind: 'none'; why: string };

export interface DomainFacts {
  domain: string;
  route: TimedFact<DnsOutcome> | null;
  /** The mailbox provider family the route names (gmail, microsoft, …). */
  provider: string | null;
  /** The reply to a made-up address of the domain. */
  catchAll: TimedFact<SmtpReply> | null;
  /** What tenant detection found behind the domain's gateway MX, once it was asked. */
  tenant?: TimedFact<KeptTenant> | null;
  /** How long the domain's greylisting held an address back (seconds), as a batch last measured it. */
  greylistDelay?: TimedFact<number> | null;
  /** The domain's slowest recent batch probe: how long it ran (seconds), and whether it timed out. */
  slowProbe?: TimedFact<SlowProbe> | null;
  /** Accepted addresses that bounced afterwards, learnt from outcomes (docs/verdicts.md, "Learning from outcomes"). */
  acceptedBounces?: AcceptedBounces | null;
  /** When a fact last changed its answer: verdicts reached before then no longer hold. */
  changedAt: number;
}

export interface DomainFactsDeps {
  db: Db;
  /** Asks DNS for the domain's mail route and its TTL. */
  resolveRoute: (domain: string) => Promise<TimedMailRoute>;
  /** Asks DNS for the tenant behind the domain's gateway MX (shared/src/dns/mail-tenant.ts). */
  detectTenant: (domain: string, mxHosts: readonly string[]) => Promise<TenantDetection>;
  /** Asks DNS for the addresses of a kept tenant's inbound host. */
  resolveHost: (host: string) => Promise<DnsOutcome>;
  now: () => number;
  /**
   * Answer a domain's facts from the isolate's snapshot while it is younger than
   * FACTS_SNAPSHOT_MS, instead of reading D1 (a single call's: docs/architecture.md, "Domain
   * facts"). What this store learns is put in the snapshot either way.
   */
  snapshot?: boolean;
}

/**
 * How long an isolate answers a domain's facts from what it read or learnt, without D1: a change
 * another isolate recorded (a route that moved) is seen this much later at most, by single calls
 * only (a batch reads D1 each time).
 */
export const FACTS_SNAPSHOT_MS = 30_000;
/** Domains the snapshot holds at most; the oldest read goes first. */
const SNAPSHOT_DOMAINS = 2_000;
const snapshot = new Map<string, { facts: DomainFacts | null; at: number }>();

function remember(domain: string, facts: DomainFacts | null, at: number): void {
  snapshot.delete(domain);
  snapshot.set(domain, { facts, at });
  if (snapshot.size > SNAPSHOT_DOMAINS) snapshot.delete(snapshot.keys().next().value as string);
}

export class DomainFactsStore {
  readonly #deps: DomainFactsDeps;
  readonly #read = new Map<string, Promise<DomainFacts | null>>();

  constructor(deps: DomainFactsDeps) {
    this.#deps = deps;
  }

  /** The domain's facts as stored (expired ones included), read once per instance. */
  facts(domain: string): Promise<DomainFacts | null> {
    let facts = this.#read.get(domain);
    if (!facts) {
      const now = this.#deps.now();
      const kept = this.#deps.snapshot ? snapshot.get(domain) : undefined;
      facts =
        kept && now - kept.at < FACTS_SNAPSHOT_MS
          ? Promise.resolve(kept.facts)
          : readDomainFacts(this.#deps.db, domain).then((row) => {
              const read = row ? factsOf(row) : null;
              remember(domain, read, now);
              return read;
            });
      this.#read.set(domain, facts);
    }
    return facts;
  }

  /**
   * Reads the facts of every domain of `domains` not read yet, in one statement: a consumer
   * batch or a settle of finished probes touches many domains, and one D1 call each was most of
   * their D1 calls.
   */
  async prefetch(domains: Iterable<string>): Promise<void> {
    const unread = [...new Set(domains)].filter((domain) => !this.#read.has(domain));
    if (unread.length === 0) return;
    let rows: DomainFactsRow[];
    try {
      rows = await readManyDomainFacts(this.#deps.db, unread);
    } catch {
      return; // each domain is read on its own when asked, and fails or not on its own
    }
    const byDomain = new Map(rows.map((row) => [row.domain, row]));
    for (const domain of unread) {
      // A read started meanwhile for one of them is newer than this one: it stays.
      if (!this.#read.has(domain)) this.know(domain, byDomain.get(domain) ?? null);
    }
  }

  /** Takes the domain's row as read elsewhere (beside another read), instead of reading it again. */
  know(domain: string, row: DomainFactsRow | null): void {
    const facts = row ? factsOf(row) : null;
    remember(domain, facts, this.#deps.now());
    this.#read.set(domain, Promise.resolve(facts));
  }

  /** Whether the kept mail route still holds, so that `mailRoute` asks no DNS. */
  async routeKept(domain: string): Promise<boolean> {
    const route = (await this.facts(domain))?.route;
    return route !== undefined && route !== null && route.expiresAt > this.#deps.now();
  }

  /** The mail route: the kept one while its TTL lasts, else DNS's answer, kept for next time. */
  async mailRoute(domain: string): Promise<DnsOutcome> {
    const route = (await this.facts(domain))?.route;
    if (route && (await this.routeKept(domain))) return route.value;
    return this.#resolve(domain);
  }

  /**
   * When the domain's facts last changed their answer, or null when it has none: a verdict
   * reached before then no longer holds (kept-verdicts.ts, `keptAnswer`), and none holds on no
   * facts (DNS is left to the verification then). An expired route is asked of DNS again first,
   * so a domain that moved its mail (or stopped existing) retires the verdicts reached on its old
   * route.
   */
  async verdictsHoldSince(domain: string): Promise<number | null> {
    const route = (await this.facts(domain))?.route;
    if (route === undefined) return null;
    if (!route || route.expiresAt <= this.#deps.now()) await this.#resolve(domain);
    return (await this.facts(domain))?.changedAt ?? null;
  }

  /** Whether the domain's facts are at hand without a read of D1 (read by this store, or in the snapshot). */
  known(domain: string): boolean {
    if (this.#read.has(domain)) return true;
    const kept = this.#deps.snapshot ? snapshot.get(domain) : undefined;
    return kept !== undefined && this.#deps.now() - kept.at < FACTS_SNAPSHOT_MS;
  }

  /** `gateway`, with each probe's catch-all answer recorded, or filled from the facts when the probe has none. */
  probing(gateway: ProbeGateway): ProbeGateway {
    return {
      probe: async (request, deadlineMs) =>
        this.observeProbe(request.domain, await gateway.probe(request, deadlineMs)),
    };
  }

  /**
   * Records a lasting catch-all answer the probe brought. A probe without one whose address was
   * accepted gets the kept answer while it is fresh, as the prober fills it from its own memory:
   * probers each keep their own, and the facts make them agree.
   */
  async observeProbe(domain: string, outcome: ProbeOutcome): Promise<ProbeOutcome> {
    if (outcome.kind !== 'report') return outcome;
    const { report } = outcome;
    const facts = await this.facts(domain);
    const now = this.#deps.now();
    const kept = facts?.catchAll && facts.catchAll.expiresAt > now ? facts.catchAll.value : null;
    const reply = report.catchAllReply;
    if (reply === null) {
      return kept && anyAccepted(report)
        ? { kind: 'report', report: { ...report, catchAllReply: kept } }
        : outcome;
    }
    const reading = catchAllReading(reply);
    if (
      isLastingCatchAllReply(reply) &&
      reading !== null &&
      (kept === null || catchAllReading(kept) !== reading)
    ) {
      const changedAt = await recordCatchAll(this.#deps.db, {
        domain,
        reply: JSON.stringify(reply),
        catchAll: reading,
        expiresAt: now + CATCH_ALL_TTL_MS,
        now,
      });
      this.#update(domain, facts, {
        catchAll: { value: reply, expiresAt: now + CATCH_ALL_TTL_MS },
        changedAt,
      });
    }
    return outcome;
  }

  /**
   * Records that the domain's greylisting let an address through `seconds` after its first
   * greylisting answer: the batch retry that was let through, so the measure is at most one
   * step of the greylist pace longer than the server's delay. The last measure wins: a
   * greylister reconfigured is followed.
   */
  async observeGreylistDelay(domain: string, seconds: number): Promise<void> {
    const value = Math.min(Math.max(1, Math.round(seconds)), MAX_GREYLIST_DELAY_SECONDS);
    const now = this.#deps.now();
    const expiresAt = now + GREYLIST_DELAY_TTL_MS;
    await recordGreylistDelay(this.#deps.db, { domain, seconds: value, expiresAt, now });
    const facts = await this.facts(domain);
    this.#update(domain, facts, {
      greylistDelay: { value, expiresAt },
      changedAt: facts?.changedAt ?? now,
    });
  }

  /**
   * Records a batch probe of the domain that took long or timed out (for the next job's
   * estimate, batch/estimate.ts), when it differs from the one kept: the last measure wins, and
   * the fact lasts as long as a greylisting delay does.
   */
  async observeProbeTime(domain: string, answered: ProbeOutcome): Promise<void> {
    if (answered.kind !== 'report') return;
    const seconds = Math.round(answered.report.session.durationMs / 1000);
    const timedOut = answered.report.perAddress.some((outcome) => outcome.failure?.kind === 'timeout');
    if (seconds < SLOW_PROBE_SECONDS && !timedOut) return;
    const facts = await this.facts(domain);
    const now = this.#deps.now();
    const kept = facts?.slowProbe && facts.slowProbe.expiresAt > now ? facts.slowProbe.value : null;
    // Within a quarter of the kept one is the same news: no write.
    if (kept && kept.timedOut === timedOut && Math.abs(kept.seconds - seconds) <= kept.seconds / 4) return;
    const expiresAt = now + GREYLIST_DELAY_TTL_MS;
    await recordSlowProbe(this.#deps.db, { domain, seconds, timedOut, expiresAt, now });
    this.#update(domain, facts, {
      slowProbe: { value: { seconds, timedOut }, expiresAt },
      changedAt: facts?.changedAt ?? now,
    });
  }

  /** What outcomes taught of the domain's acceptance: bounces of addresses it accepted, or null. */
  async acceptedBounces(domain: string): Promise<AcceptedBounces | null> {
    return (await this.facts(domain))?.acceptedBounces ?? null;
  }

  /** The domain's measured greylisting delay (seconds) while it is trusted, else null. */
  async greylistDelaySeconds(domain: string): Promise<number | null> {
    const delay = (await this.facts(domain))?.greylistDelay;
    return delay && delay.expiresAt > this.#deps.now() ? delay.value : null;
  }

  /**
   * The tenant behind the gateway MX of `domain`: the kept detection while it lasts (its inbound
   * host's addresses asked again, through the DNS cache), else DNS's answer, kept for
   * TENANT_TTL_MS unless a lookup failed.
   */
  async tenant(domain: string, mxHosts: readonly string[]): Promise<TenantDetection> {
    const kept = (await this.facts(domain))?.tenant;
    if (kept && kept.expiresAt > this.#deps.now()) {
      if (kept.value.kind === 'none') return kept.value;
      const route = await this.#deps.resolveHost(kept.value.tenant.inboundHost);
      if (route.kind === 'mx') return { ...kept.value, mx: route.mx };
      if (route.kind === 'error') return { kind: 'error', message: route.message };
      // The kept host no longer resolves: the tenant moved; ask again.
    }
    const detection = await this.#deps.detectTenant(domain, mxHosts);
    if (detection.kind === 'error') return detection;
    const value: KeptTenant =
      detection.kind === 'tenant'
        ? { kind: 'tenant', tenant: detection.tenant, signal: detection.signal }
        : detection;
    const now = this.#deps.now();
    const expiresAt = now + TENANT_TTL_MS;
    const changedAt = await recordTenant(this.#deps.db, {
      domain,
      tenant: JSON.stringify(value),
      expiresAt,
      now,
    });
    this.#update(domain, await this.facts(domain), { tenant: { value, expiresAt }, changedAt });
    return detection;
  }

  async #resolve(domain: string): Promise<DnsOutcome> {
    const { route, ttlSeconds } = await this.#deps.resolveRoute(domain);
    const lifetimeSeconds = Math.min(ttlSeconds, MAIL_ROUTE_MAX_TTL_SECONDS);
    // A failed lookup is rcpt's failure (`dns_error`, remembered `never` in the policy table):
    // it says nothing about the domain, whatever TTL came with it.
    if (route.kind === 'error' || !(lifetimeSeconds > 0)) return route;
    const now = this.#deps.now();
    const expiresAt = now + lifetimeSeconds * 1000;
    const provider =
      route.kind === 'mx'
        ? providerFamilyOf(
            domain,
            route.mx.map((mx) => mx.host),
          )
        : null;
    const changedAt = await recordMailRoute(this.#deps.db, {
      domain,
      route: JSON.stringify(route),
      routeKey: routeKeyOf(route),
      provider,
      expiresAt,
      now,
    });
    this.#update(domain, await this.facts(domain), {
      route: { value: route, expiresAt },
      provider,
      changedAt,
    });
    return route;
  }

  #update(
    domain: string,
    facts: DomainFacts | null,
    change: Partial<DomainFacts> & { changedAt: number },
  ): void {
    const base: DomainFacts = facts ?? {
      domain,
      route: null,
      provider: null,
      catchAll: null,
      changedAt: change.changedAt,
    };
    const updated = { ...base, ...change };
    remember(domain, updated, this.#deps.now());
    this.#read.set(domain, Promise.resolve(updated));
  }
}

/**
 * What identifies a route for change detection: its kind and hosts by preference. Addresses
 * are left out: large providers rotate them on every answer, and a host's new address is the
 * same mail route.
 */
function routeKeyOf(route: DnsOutcome): string {
  if (route.kind !== 'mx' && route.kind !== 'unroutable') return route.kind;
  const dnsType = route.kind === 'mx' ? route.dnsType : '';
  return [route.kind, dnsType, ...route.mx.map((mx) => `${mx.preference} ${mx.host}`)].join('|');
}

/** How a domain takes mail, read back from its route key: the route's kind and its hosts by preference. */
export function mailOfRouteKey(routeKey: string): { kind: string; mxHosts: string[] } {
  const [kind = '', , ...hosts] = routeKey.split('|');
  return { kind, mxHosts: hosts.map((host) => host.slice(host.indexOf(' ') + 1)) };
}

/**
 * What a watched job's verdicts at a domain rest on (docs/architecture.md, "Watched jobs"): the
 * route key, the catch-all reading and the tenant. The same shape as the SQL `json_array` that
 * starts a watch, so either can be compared with the other.
 */
export type FactsKey = [routeKey: string | null, catchAll: number | null, tenant: string | null];

export function factsKeyOf(row: DomainFactsRow): FactsKey {
  return [row.routeKey, row.catchAll, row.tenant];
}

function anyAccepted(report: ProbeReport): boolean {
  return report.perAddress.some(
    (outcome) => outcome.reply !== null && classifyReply(outcome.reply, 'rcpt').accepted,
  );
}

function factsOf(row: DomainFactsRow): DomainFacts {
  return {
    domain: row.domain,
    route:
      row.route !== null && row.routeExpiresAt !== null
        ? { value: JSON.parse(row.route) as DnsOutcome, expiresAt: row.routeExpiresAt }
        : null,
    provider: row.provider,
    catchAll:
      row.catchAllReply !== null && row.catchAllExpiresAt !== null
        ? { value: JSON.parse(row.catchAllReply) as SmtpReply, expiresAt: row.catchAllExpiresAt }
        : null,
    tenant:
      row.tenant !== null && row.tenantExpiresAt !== null
        ? { value: JSON.parse(row.tenant) as KeptTenant, expiresAt: row.tenantExpiresAt }
        : null,
    greylistDelay:
      row.greylistDelaySeconds !== null && row.greylistDelayExpiresAt !== null
        ? { value: row.greylistDelaySeconds, expiresAt: row.greylistDelayExpiresAt }
        : null,
    slowProbe:
      row.slowProbeSeconds !== null && row.slowProbeExpiresAt !== null
        ? {
            value: { seconds: row.slowProbeSeconds, timedOut: row.slowProbeTimedOut === 1 },
            expiresAt: row.slowProbeExpiresAt,
          }
        : null,
    acceptedBounces:
      row.acceptedBounces !== null && row.acceptedBounceAccounts !== null && row.acceptedBouncesAt !== null
        ? {
            bounces: row.acceptedBounces,
            accounts: row.acceptedBounceAccounts,
            lastBounceAt: row.acceptedBouncesAt,
          }
        : null,
    changedAt: row.changedAt,
  };
}

/**
 * The most DoH fetches one mail route can take: its MX lookup and the A and AAAA lookups of each
 * of its hosts (at most MAX_MX_HOSTS), each asked of every resolver of DOH_URL in turn when the
 * earlier ones fail.
 */
export function routeFetchesAtMost(config: Config): number {
  return (1 + 2 * MAX_MX_HOSTS) * config.DOH_URL.length;
}

/**
 * The routes of `domains` that fit in `budget`: the kept ones, then the others resolved in waves,
 * each wave as many routes as the budget left covers at their worst (`routeCost` each), so the
 * invocation never fetches past it. A route that is not in the answer is for a later invocation.
 */
export async function routesWithin(
  budget: SubrequestBudget,
  facts: DomainFactsStore,
  domains: readonly string[],
  routeCost: number,
): Promise<Map<string, DnsOutcome>> {
  const routes = new Map<string, DnsOutcome>();
  const cold: string[] = [];
  for (const domain of new Set(domains)) {
    if (await facts.routeKept(domain)) routes.set(domain, await facts.mailRoute(domain));
    else cold.push(domain);
  }
  while (cold.length > 0) {
    let wave = cold.splice(0, Math.floor(budget.left / routeCost));
    // A route dearer than the whole budget (many resolvers, a small plan) still gets its turn,
    // alone: the budget stops its fetches past the limit.
    if (wave.length === 0 && budget.left === budget.limit) wave = cold.splice(0, 1);
    if (wave.length === 0) break;
    await Promise.all(wave.map(async (domain) => routes.set(domain, await facts.mailRoute(domain))));
  }
  return routes;
}
