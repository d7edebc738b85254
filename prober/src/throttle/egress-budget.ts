// Pace per egress and provider: how many recipients one sending address asks one mail provider
// about in an hour. The providers judge a sending address by its volume: Google calls a sender
// of close to 5,000 messages a day to personal Gmail accounts a bulk sender and holds it to
// stricter rules ("Email sender guidelines", support.google.com/a/answer/81126); Yahoo
// (senders.yahooinc.com/best-practices) and Outlook.com ("Strengthening Email Ecosystem:
// Outlook's New Requirements for High-Volume Senders", techcommunity.microsoft.com, 2025)
// draw the same line at 5,000 a day. An RCPT is not a message, but it is what their MX counts
// from a client that never sends DATA, so the default keeps each egress under that line: 200
// recipients an hour per provider (4,800 a day). MX hosts outside the provider registry are
// paced by the MX throttle's per-host profile alone.
//
// A new egress warms up, as every provider's postmaster advice asks of a new sending address
// (Amazon SES, "Warming up dedicated IP addresses", docs.aws.amazon.com/ses/latest/dg/
// dedicated-ip-warming.html): a quarter of the budget in its first hour, half in its second,
// all of it from its third.
//
// Work spreads before any egress nears its budget: `pick` takes the egress with the smallest
// share of its budget used, so two egresses carry a provider's traffic evenly from the start.

export const DEFAULT_PROVIDER_HOURLY_BUDGET = 200;
const HOUR_MS = 60 * 60_000;
const WARM_UP_SHARES = [0.25, 0.5] as const;

export interface EgressBudgetOptions {
  /** Recipients per hour per (egress, provider); default 200. */
  hourlyBudget?: number;
  /** Warm new egresses up (default true); off for addresses long in use elsewhere. */
  warmUp?: boolean;
  now?: () => number;
}

/** One (egress, provider) pair's hour. */
export interface BudgetUse {
  egress: string;
  provider: string;
  /** Recipients asked in the last hour. */
  used: number;
  /** What the egress may ask this hour (lower while it warms up). */
  budget: number;
}

export class EgressBudget {
  readonly #hourlyBudget: number;
  readonly #warmUp: boolean;
  readonly #now: () => number;
  /** When each egress was first used: its warm-up runs from here. */
  readonly #firstUse = new Map<string, number>();
  /** Per `egress\nprovider`: the times of the last hour's spends, oldest first, with their counts. */
  readonly #spends = new Map<string, { at: number; count: number }[]>();

  constructor(options: EgressBudgetOptions = {}) {
    this.#hourlyBudget = options.hourlyBudget ?? DEFAULT_PROVIDER_HOURLY_BUDGET;
    this.#warmUp = options.warmUp ?? true;
    this.#now = options.now ?? Date.now;
  }

  /** What `egress` may ask `provider` in an hour now. */
  budgetOf(egress: string): number {
    if (!this.#warmUp) return this.#hourlyBudget;
    const since = this.#firstUse.get(egress);
    const hours = since === undefined ? 0 : Math.floor((this.#now() - since) / HOUR_MS);
    const share = WARM_UP_SHARES[hours] ?? 1;
    return Math.max(1, Math.floor(this.#hourlyBudget * share));
  }

  /** Recipients `egress` asked `provider` about in the last hour. */
  usedBy(egress: string, provider: string): number {
    const spends = this.#window(`${egress}\n${provider}`);
    return spends.reduce((sum, spend) => sum + spend.count, 0);
  }

  /** Whether `egress` may still ask `provider` about `count` more recipients this hour. */
  hasRoom(egress: string, provider: string, count: number): boolean {
    return this.usedBy(egress, provider) + count <= this.budgetOf(egress);
  }

  /** Counts `count` recipients asked from `egress` at `provider`. */
  spend(egress: string, provider: string, count: number): void {
    const now = this.#now();
    if (!this.#firstUse.has(egress)) this.#firstUse.set(egress, now);
    const key = `${egress}\n${provider}`;
    const spends = this.#window(key);
    spends.push({ at: now, count });
    this.#spends.set(key, spends);
  }

  /**
   * Takes back what the region's hub remembered (the prober restarted): each egress's warm-up
   * runs from the earlier of its two starts, and an hour this prober has no spends of counts what
   * was reported of it, as spent when reported, so that it leaves the window no later than it would have.
   */
  restore(
    warmUps: readonly { egress: string; since: number }[],
    uses: readonly { egress: string; provider: string; used: number; at: number }[],
  ): void {
    for (const { egress, since } of warmUps) {
      const known = this.#firstUse.get(egress);
      this.#firstUse.set(egress, known === undefined ? since : Math.min(known, since));
    }
    for (const { egress, provider, used, at } of uses) {
      const key = `${egress}\n${provider}`;
      if (used === 0 || this.#window(key).length > 0) continue;
      this.#spends.set(key, [{ at, count: used }]);
      if (!this.#firstUse.has(egress)) this.#firstUse.set(egress, at);
    }
  }

  /** When each egress began warming up (was first used). */
  warmUps(): { egress: string; since: number }[] {
    return [...this.#firstUse].map(([egress, since]) => ({ egress, since }));
  }

  /** The share of its budget each egress has used at `provider`; the least used first. */
  leastUsed<T extends { id: string }>(egresses: readonly T[], provider: string): T[] {
    const share = (egress: T) => this.usedBy(egress.id, provider) / this.budgetOf(egress.id);
    return [...egresses].sort((a, b) => share(a) - share(b));
  }

  /** Every (egress, provider) pair used in the last hour, for the operator's view and metrics. */
  uses(): BudgetUse[] {
    const uses: BudgetUse[] = [];
    for (const key of [...this.#spends.keys()]) {
      const [egress = '', provider = ''] = key.split('\n');
      const used = this.usedBy(egress, provider);
      if (used === 0) {
        this.#spends.delete(key);
        continue;
      }
      uses.push({ egress, provider, used, budget: this.budgetOf(egress) });
    }
    return uses;
  }

  #window(key: string): { at: number; count: number }[] {
    const spends = this.#spends.get(key) ?? [];
    const since = this.#now() - HOUR_MS;
    let expired = 0;
    while (expired < spends.length && (spends[expired]?.at ?? 0) <= since) expired++;
    if (expired > 0) spends.splice(0, expired);
    return spends;
  }
}
