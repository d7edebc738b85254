// Whom each linked prober serves (docs/operations.md, "Customer-run probers"): a prober linked
// with a shared-fleet token serves every account; one linked with a token of an account serves
// that account only, and that account's probes go to its own probers first — to the shared fleet
// only when none of its own can take them, and then only when the account allows it.

/** A linked prober as far as whom it serves goes (prober-links.ts's ReadyProber is one). */
export interface OwnedProber {
  attachment: { accountId: string | null };
}

/** Who a probe is for, as the scheduler routes it. */
export interface ProbeOwner {
  accountId: string;
  /** The account turned the shared fleet's fallback off: only its own probers may take it. */
  ownOnly: boolean;
}

/** The account a prober serves; null: the shared fleet (links made before this have none). */
export function servedAccountOf(prober: OwnedProber): string | null {
  return prober.attachment.accountId ?? null;
}

/** The ready probers split by whom they serve: the shared fleet, and each account's own. */
export class ProbersByOwner<P extends OwnedProber> {
  readonly shared: P[] = [];
  readonly #own = new Map<string, P[]>();

  constructor(probers: readonly P[]) {
    for (const prober of probers) {
      const accountId = servedAccountOf(prober);
      if (accountId === null) {
        this.shared.push(prober);
        continue;
      }
      const own = this.#own.get(accountId);
      if (own) own.push(prober);
      else this.#own.set(accountId, [prober]);
    }
  }

  /** The account's own ready probers. */
  ownOf(accountId: string): readonly P[] {
    return this.#own.get(accountId) ?? [];
  }

  /** Every prober that may ever take a probe of `owner`: its own, and the shared fleet unless it said no. */
  allowed(owner: ProbeOwner): readonly P[] {
    const own = this.ownOf(owner.accountId);
    if (owner.ownOnly) return own;
    return own.length === 0 ? this.shared : [...own, ...this.shared];
  }

  /**
   * The probers a probe of `owner` goes to now: its own that have not passed it over and are not
   * blocked at its MX (`usable`); with none such, the shared fleet when the account allows it and
   * the fleet has a prober, else its own (a passed-over one is asked again, within the resends).
   */
  candidates(owner: ProbeOwner, usable: (prober: P) => boolean): readonly P[] {
    const own = this.ownOf(owner.accountId);
    if (own.length === 0) return owner.ownOnly ? own : this.shared;
    const usableOwn = own.filter(usable);
    if (usableOwn.length > 0) return usableOwn;
    return owner.ownOnly || this.shared.length === 0 ? own : this.shared;
  }
}
