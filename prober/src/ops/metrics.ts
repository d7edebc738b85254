// Prometheus metrics of one prober, in a registry of its own (not prom-client's global one, so
// tests and a CLI run in the same process never see each other's counts). Gauges that mirror
// live state read it at scrape time through callbacks instead of being pushed.
import type { AddressOutcome, ProbeReport, ProbeRequest, SmtpReply } from '@rcpt/shared/contract/prober';
import { PROVIDER_REGISTRY } from '@rcpt/shared/verify/providers';
import { classifyReply } from '@rcpt/shared/verify/smtp-reply';
import { failureSubStatus } from '@rcpt/shared/verify/verdict';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type EgressBlock, scopeKey } from '../egress/egress-blocks.ts';
import type { EgressHealth } from '../egress/egress-health.ts';
import type { BudgetUse } from '../throttle/egress-budget.ts';

/** Live state the gauges read at scrape time. */
export interface MetricSources {
  /** SMTP sessions open now (the throttle's count). */
  openSessions: () => number;
  /** MX hosts the throttle is backing off from now. */
  hostBackoffs: () => number;
  /** Whether the link to the edge is up and has said hello. */
  linkConnected: () => boolean;
  /** Probes being worked on now. */
  probesInFlight: () => number;
  /** Blocks of the egresses in force now. */
  egressBlocks?: () => EgressBlock[];
  /** Each (egress, provider) pair's last hour against its budget. */
  egressUses?: () => BudgetUse[];
  /** Each egress's newest health check (docs/operations.md, "Egress addresses"). */
  egressHealth?: () => EgressHealth[];
}

/** What `rcpt_probes_total{outcome}` counts when the engine threw instead of reporting. */
export const INTERNAL_ERROR_OUTCOME = 'internal_error';

/** The `provider` label of a domain no provider registry entry answers for. */
export const OTHER_PROVIDER = 'other';

export class ProberMetrics {
  readonly registry = new Registry();
  readonly #probes: Counter<'outcome' | 'provider'>;
  readonly #replies: Counter<'class'>;
  readonly #duration: Histogram;
  readonly #reconnects: Counter;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#probes = new Counter({
      name: 'rcpt_probes_total',
      help: 'Addresses probed, by outcome (accepted, rejected, temporary, policy, or the session failure kind) and provider',
      labelNames: ['outcome', 'provider'],
      registers,
    });
    this.#replies = new Counter({
      name: 'rcpt_smtp_replies_total',
      help: 'RCPT replies received (real and catch-all test addresses), by class',
      labelNames: ['class'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'rcpt_probe_duration_seconds',
      help: 'Time from a probe request to its report',
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120],
      registers,
    });
    this.#reconnects = new Counter({
      name: 'rcpt_link_reconnects_total',
      help: 'Times the link to the edge was lost or refused and a new connection was scheduled',
      registers,
    });
    new Gauge({
      name: 'rcpt_open_sessions',
      help: 'SMTP sessions open now',
      registers,
      collect() {
        this.set(sources.openSessions());
      },
    });
    new Gauge({
      name: 'rcpt_host_backoffs',
      help: 'MX hosts in backoff now (after replies that ask the client to slow down)',
      registers,
      collect() {
        this.set(sources.hostBackoffs());
      },
    });
    new Gauge({
      name: 'rcpt_link_connected',
      help: '1 when the link to the edge is up and has said hello, else 0',
      registers,
      collect() {
        this.set(sources.linkConnected() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'rcpt_egress_blocked',
      help: '1 for each egress blocked now at an MX host or provider (scope), after a refusal that named the client; an alert on it says which address is listed',
      labelNames: ['egress', 'scope'],
      registers,
      collect() {
        this.reset();
        for (const block of sources.egressBlocks?.() ?? [])
          this.set({ egress: block.egress, scope: scopeKey(block.scope) }, 1);
      },
    });
    new Gauge({
      name: 'rcpt_egress_hourly_used',
      help: 'Recipients each egress asked each provider about in the last hour',
      labelNames: ['egress', 'provider'],
      registers,
      collect() {
        this.reset();
        for (const use of sources.egressUses?.() ?? [])
          this.set({ egress: use.egress, provider: use.provider }, use.used);
      },
    });
    new Gauge({
      name: 'rcpt_egress_hourly_budget',
      help: 'Recipients each egress may ask each provider about in an hour (lower while a new egress warms up)',
      labelNames: ['egress', 'provider'],
      registers,
      collect() {
        this.reset();
        for (const use of sources.egressUses?.() ?? [])
          this.set({ egress: use.egress, provider: use.provider }, use.budget);
      },
    });
    // The egress health the fleet view and the operator's alerts show, for a scraper to alert on
    // too: one series per egress checked, none before its first check.
    const healthGauge = (name: string, help: string, value: (health: EgressHealth) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['egress'],
        registers,
        collect() {
          this.reset();
          for (const health of sources.egressHealth?.() ?? []) {
            const measured = value(health);
            if (measured !== null) this.set({ egress: health.egress }, measured);
          }
        },
      });
    healthGauge(
      'rcpt_egress_reverse_dns_ok',
      "1 when the egress address's PTR name resolves back to it (forward-confirmed reverse DNS), 0 when it does not; absent while unknown",
      (health) => (health.fcrdns === 'unknown' ? null : health.fcrdns === 'pass' ? 1 : 0),
    );
    healthGauge(
      'rcpt_egress_helo_matches_ptr',
      '1 when the HELO name the egress sends is its PTR name, else 0; absent while unknown',
      (health) => (health.heloMatches === null ? null : health.heloMatches ? 1 : 0),
    );
    healthGauge(
      'rcpt_egress_port25_reachable',
      '1 when outbound port 25 got through from the egress, 0 when it was blocked; absent while unknown',
      (health) => (health.port25 === 'unknown' ? null : health.port25 === 'ok' ? 1 : 0),
    );
    healthGauge(
      'rcpt_egress_health_checked_timestamp_seconds',
      "When the egress's health was last checked (Unix time)",
      (health) => health.checkedAt / 1000,
    );
    new Gauge({
      name: 'rcpt_egress_listed',
      help: '1 for each DNS blocklist (zone) listing the egress address now',
      labelNames: ['egress', 'zone'],
      registers,
      collect() {
        this.reset();
        for (const health of sources.egressHealth?.() ?? [])
          for (const listing of health.listings) this.set({ egress: health.egress, zone: listing.zone }, 1);
      },
    });
    new Gauge({
      name: 'rcpt_probes_in_flight',
      help: 'Probe requests being worked on now',
      registers,
      collect() {
        this.set(sources.probesInFlight());
      },
    });
  }

  /** Counts one finished probe: each address's outcome and each RCPT reply's class. */
  recordProbe(request: ProbeRequest, report: ProbeReport, durationSeconds: number): void {
    this.#duration.observe(durationSeconds);
    const provider = providerLabel(request);
    for (const address of report.perAddress) {
      this.#probes.inc({ outcome: addressOutcomeLabel(address), provider });
      if (address.reply) this.#replies.inc({ class: replyClass(address.reply) });
    }
    if (report.catchAllReply) this.#replies.inc({ class: replyClass(report.catchAllReply) });
  }

  /** Counts a probe the engine could not report on (it threw): one per address asked about. */
  recordProbeError(request: ProbeRequest, durationSeconds: number): void {
    this.#duration.observe(durationSeconds);
    this.#probes.inc(
      { outcome: INTERNAL_ERROR_OUTCOME, provider: providerLabel(request) },
      request.emails.length,
    );
  }

  recordReconnect(): void {
    this.#reconnects.inc();
  }

  /** The Prometheus text exposition of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * The provider registry's id for the probed domain (a bounded set of label values), or
 * `other`: which providers refuse, throttle or time out shows per provider.
 */
export function providerLabel(request: Pick<ProbeRequest, 'domain' | 'mx'>): string {
  const match = PROVIDER_REGISTRY.find(
    request.domain,
    request.mx.map((mx) => mx.host),
  );
  return match?.provider.id ?? OTHER_PROVIDER;
}

/**
 * One label per address: the RCPT reply's meaning when there is one, else why the session
 * stopped before the address got a reply. `policy` is what the reply table calls
 * `antispam_blocked` (the server refused the prober, not the mailbox), so the metric and the
 * verdicts never disagree about it.
 */
export function addressOutcomeLabel(address: AddressOutcome): string {
  if (address.reply) {
    if (classifyReply(address.reply, 'rcpt').subStatus === 'antispam_blocked') return 'policy';
    if (address.reply.code >= 200 && address.reply.code < 300) return 'accepted';
    if (address.reply.code >= 400 && address.reply.code < 500) return 'temporary';
    if (address.reply.code >= 500) return 'rejected';
    return 'invalid_response';
  }
  const failure = address.failure;
  if (!failure) return 'no_outcome';
  if (failure.kind === 'rejected') {
    // A refused banner, EHLO or MAIL FROM: policy when the reply table says so, and otherwise
    // named apart from an RCPT rejection, which is about the mailbox.
    return failureSubStatus(failure) === 'antispam_blocked' ? 'policy' : 'session_rejected';
  }
  return failure.kind;
}

function replyClass(reply: SmtpReply): string {
  return `${Math.floor(reply.code / 100)}xx`;
}
