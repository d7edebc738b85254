// A probe through the prober's egresses (docs/operations.md, "Egress addresses"). The probe
// goes out from the egress with the most room at the domain's provider (or in turn, for MX
// hosts outside the provider registry) that is not blocked there. When the server refuses the
// client itself (the reply table's `refusesClient`: a block-list listing, a banned IP), that
// egress is blocked at the MX host — or at the whole provider, whose MX hosts share their
// block lists — and the addresses it could not ask are asked at once from the next egress.
// A refusal is never a verdict: a mailbox answer from any egress is. Only when every egress
// is refused does the report say so (`egressesRefused`), for the hub to try another prober.
// Before any refusal, the egresses' health (egress-health.ts) narrows the choice: an egress
// listed on a list most receivers use carries no probe while another is open, and one failing
// what the domain's provider checks (reverse DNS, its own list) none to that provider. When no
// open egress is clean, the least bad one is tried and a refusal is handled as above.
import type { AddressOutcome, ProbeReport, ProbeRequest, SmtpReply } from '@rcpt/shared/contract/prober';
import {
  type BlockScope,
  blockedOutcome,
  blockScopeOf,
  NO_SESSION,
} from '@rcpt/shared/verify/egress-refusal';
import { type ClientChecks, PROVIDER_REGISTRY, type ProviderRegistry } from '@rcpt/shared/verify/providers';
import { refusesClient, replyStageOf } from '@rcpt/shared/verify/smtp-reply';
import { type ProbeDeps, probe } from '../smtp/probe.ts';
import type { EgressBudget } from '../throttle/egress-budget.ts';
import type { Egress } from './egress.ts';
import type { EgressBlocks } from './egress-blocks.ts';
import { type EgressHealth, healthPenalty } from './egress-health.ts';

// Below this a new attempt cannot finish a session; the refusal already in hand is the answer.
const MIN_ATTEMPT_MS = 100;

export interface EgressRouterOptions {
  egresses: readonly Egress[];
  blocks: EgressBlocks;
  budget: EgressBudget;
  providers?: ProviderRegistry;
  /** Each egress's newest health check (egress-health-checker.ts); none: every egress counts as clean. */
  health?: { healthOf(egressId: string): EgressHealth | undefined };
}

export class EgressRouter {
  readonly egresses: readonly Egress[];
  readonly blocks: EgressBlocks;
  readonly budget: EgressBudget;
  readonly #providers: ProviderRegistry;
  readonly #health: EgressRouterOptions['health'];
  /** Round-robin turn for MX hosts that no budget paces. */
  #turn = 0;

  constructor(options: EgressRouterOptions) {
    if (options.egresses.length === 0) throw new RangeError('a prober has at least one egress');
    this.egresses = options.egresses;
    this.blocks = options.blocks;
    this.budget = options.budget;
    this.#providers = options.providers ?? PROVIDER_REGISTRY;
    this.#health = options.health;
  }

  /**
   * Probes `request` from one egress after another until every address has an answer that is
   * not a refusal of the client, or every egress was refused (or is blocked) at its MX.
   */
  async probe(request: ProbeRequest, deps: ProbeDeps): Promise<ProbeReport> {
    const now = deps.now ?? (() => performance.now());
    const deadline = now() + request.timeoutMs;
    const provider = this.#providers.find(
      request.domain,
      request.mx.map((mx) => mx.host),
    )?.provider;
    const firstHost = [...request.mx].sort((a, b) => a.preference - b.preference)[0]?.host ?? request.domain;
    const scopeAt = (mxHost: string | null): BlockScope => blockScopeOf(request, mxHost, this.#providers);
    const outcomes = new Map<string, AddressOutcome>();
    const tried = new Set<string>();
    let pending = [...request.emails];
    let answered: ProbeReport | null = null;
    let catchAllReply: SmtpReply | null = null;
    let blockReply: SmtpReply | null = null;
    while (pending.length > 0) {
      const remainingMs = deadline - now();
      if (tried.size > 0 && remainingMs < MIN_ATTEMPT_MS) break;
      const unblocked = this.egresses.filter((egress) => {
        if (tried.has(egress.id)) return false;
        const block = this.blocks.blockOf(egress.id, scopeAt(null));
        blockReply ??= block?.reply ?? null;
        return block === null;
      });
      if (unblocked.length === 0) break;
      const open = this.#healthiest(unblocked, provider?.clientChecks);
      const egress = provider ? this.#withRoom(open, provider.id, pending.length) : this.#inTurn(open);
      if (!egress) {
        return this.#overBudget(request, pending, outcomes, answered, provider?.name ?? firstHost);
      }
      tried.add(egress.id);
      if (provider) this.budget.spend(egress.id, provider.id, pending.length);
      const report = await probe(
        {
          ...request,
          emails: pending,
          helo: egress.helo ?? request.helo,
          timeoutMs: Math.max(MIN_ATTEMPT_MS, Math.round(remainingMs)),
        },
        { ...deps, egress },
      );
      const refused: string[] = [];
      let refusal: SmtpReply | null = null;
      for (const outcome of report.perAddress) {
        outcomes.set(outcome.email, outcome);
        const reply = clientRefusalOf(outcome);
        if (reply) {
          refused.push(outcome.email);
          refusal ??= reply;
        }
      }
      if (report.catchAllReply && !refusesClient(report.catchAllReply, 'rcpt'))
        catchAllReply = report.catchAllReply;
      const scope = scopeAt(report.session.mxHost);
      if (refusal) {
        this.blocks.block(egress.id, scope, refusal);
        blockReply = refusal;
      } else if (report.session.mxHost !== null) {
        this.blocks.answered(egress.id, scope);
      }
      if (refused.length < report.perAddress.length || answered === null) answered = report;
      pending = refused;
    }
    const perAddress = request.emails.map(
      (email): AddressOutcome =>
        outcomes.get(email) ?? blockedOutcome(email, blockReply, provider?.name ?? firstHost),
    );
    return {
      perAddress,
      catchAllReply,
      session: answered?.session ?? NO_SESSION,
      ...(pending.length > 0 ? { egressesRefused: true } : {}),
    };
  }

  /** The egresses of `open` with the least health penalty where `checks` are made (egress-health.ts). */
  #healthiest(open: readonly Egress[], checks: ClientChecks | undefined): readonly Egress[] {
    if (!this.#health) return open;
    const penalties = open.map((egress) => healthPenalty(this.#health?.healthOf(egress.id), checks));
    const least = Math.min(...penalties);
    return open.filter((_, index) => penalties[index] === least);
  }

  /** The egress with the smallest share of its hour's budget used at `provider`, if any has room. */
  #withRoom(open: readonly Egress[], provider: string, count: number): Egress | null {
    return (
      this.budget
        .leastUsed(open, provider)
        .find((egress) => this.budget.hasRoom(egress.id, provider, count)) ?? null
    );
  }

  #inTurn(open: readonly Egress[]): Egress | null {
    const egress = open[this.#turn % open.length] ?? null;
    this.#turn = (this.#turn + 1) % 1_000_000;
    return egress;
  }

  /** Every open egress has spent its hour at the provider: the edge asks again later. */
  #overBudget(
    request: ProbeRequest,
    pending: readonly string[],
    outcomes: Map<string, AddressOutcome>,
    answered: ProbeReport | null,
    where: string,
  ): ProbeReport {
    for (const email of pending) {
      outcomes.set(email, {
        email,
        reply: null,
        failure: {
          kind: 'throttled',
          stage: 'guard',
          reply: null,
          message: `every egress has used its hourly budget at ${where}`,
        },
      });
    }
    return {
      perAddress: request.emails.map((email) => outcomes.get(email) ?? { email, reply: null, failure: null }),
      catchAllReply: null,
      session: answered?.session ?? NO_SESSION,
    };
  }
}

/** The reply that refused the client for this address, if that is what it got. */
function clientRefusalOf(outcome: AddressOutcome): SmtpReply | null {
  if (outcome.reply) return refusesClient(outcome.reply, 'rcpt') ? outcome.reply : null;
  const reply = outcome.failure?.reply;
  if (!reply || !outcome.failure) return null;
  return refusesClient(reply, replyStageOf(outcome.failure.stage)) ? reply : null;
}
