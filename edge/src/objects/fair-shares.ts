// Fair shares of a region's probers between accounts (docs/architecture.md, "The hub: a scheduler").
// What an account costs the fleet is the slot-time it holds, not how many probes it starts: a
// probe of a tarpit holds its slot for seconds to a minute, a probe of an ordinary MX for a
// fraction of a second. So each account carries a charge in slot-milliseconds — what its ended
// probes held, plus what its running ones hold so far (at least what its probes usually hold,
// so that starting one already counts) — and the scheduler serves the account with the least
// charge first (weighted fair queuing over slot-time). An account that comes back after a pause
// starts level with the least charged account still working, not with credit it banked while
// idle. And whatever its charge, an account never holds a prober's last slots: a reserve on each
// prober stays free for the other accounts, so the next one's call starts at once instead of
// waiting for a tarpit to let go.

/** What an account's probe is assumed to hold before any of its probes has ended. */
export const FIRST_HOLD_ESTIMATE_MS = 1_000;
/** Weight of the latest probe in an account's running mean hold time. */
const HOLD_MEAN_WEIGHT = 0.2;
/** Share of each prober's slots that no one account may take while the others have none. */
export const RESERVE_SHARE = 0.2;

interface AccountShare {
  /** Slot-time of its ended probes (ms), from the level it came in at. */
  usedMs: number;
  /** Mean slot-time of its ended probes: what a new one is charged until it holds longer. */
  meanHoldMs: number;
  /** Its probes waiting for a slot. */
  waiting: number;
  /** Its running probes: start time, the estimate charged for it, where it runs, its lane. */
  running: Map<string, { startedAt: number; estimateMs: number; proberId: string; single: boolean }>;
  /** Its slots held on each prober. */
  heldOn: Map<string, number>;
  /** Its running single calls. */
  singles: number;
}

/** Each working account's share: an account is known from its first waiting probe until it has none waiting or running. */
export class FairShares {
  readonly #accounts = new Map<string, AccountShare>();

  /**
   * The account's charge at `now`: what its ended probes held plus, for each running one, the
   * longer of its time so far and its estimate.
   */
  charge(accountId: string, now: number): number {
    const share = this.#accounts.get(accountId);
    if (!share) return 0;
    let charge = share.usedMs;
    for (const { startedAt, estimateMs } of share.running.values())
      charge += Math.max(now - startedAt, estimateMs);
    return charge;
  }

  /** Whether the account may take one more of the `capacity` slots of `proberId`: never the reserve. */
  mayTake(accountId: string, proberId: string, capacity: number): boolean {
    const held = this.#accounts.get(accountId)?.heldOn.get(proberId) ?? 0;
    return held < Math.max(1, capacity - Math.floor(capacity * RESERVE_SHARE));
  }

  /** Single calls of the account out at once. */
  singlesOut(accountId: string): number {
    return this.#accounts.get(accountId)?.singles ?? 0;
  }

  /**
   * A probe of the account waits for a slot. An account that was not working comes in level with
   * the least charged account that is: it banks no credit while idle, and owes nothing from before.
   */
  queued(accountId: string): void {
    const share = this.#accounts.get(accountId);
    if (share) {
      share.waiting++;
      return;
    }
    let floor = Number.POSITIVE_INFINITY;
    for (const other of this.#accounts.values()) floor = Math.min(floor, other.usedMs);
    this.#accounts.set(accountId, {
      usedMs: Number.isFinite(floor) ? floor : 0,
      meanHoldMs: FIRST_HOLD_ESTIMATE_MS,
      waiting: 1,
      running: new Map(),
      heldOn: new Map(),
      singles: 0,
    });
  }

  /** A waiting probe left without a slot (its deadline came, or its work went back to its schedule). */
  unqueued(accountId: string): void {
    const share = this.#accounts.get(accountId);
    if (!share) return;
    share.waiting--;
    this.#forgetIdle(accountId, share);
  }

  /** A waiting probe `probeId` of the account started on `proberId` at `now`. */
  started(accountId: string, probeId: string, proberId: string, single: boolean, now: number): void {
    const share = this.#accounts.get(accountId);
    if (!share) return;
    share.waiting--;
    share.running.set(probeId, { startedAt: now, estimateMs: share.meanHoldMs, proberId, single });
    share.heldOn.set(proberId, (share.heldOn.get(proberId) ?? 0) + 1);
    if (single) share.singles++;
  }

  /** The probe ended at `now` (answered, dropped or timed out): the slot-time it held is charged. */
  ended(accountId: string, probeId: string, now: number): void {
    const share = this.#accounts.get(accountId);
    const running = share?.running.get(probeId);
    if (!share || !running) return;
    share.running.delete(probeId);
    const heldMs = Math.max(0, now - running.startedAt);
    share.usedMs += heldMs;
    share.meanHoldMs += HOLD_MEAN_WEIGHT * (heldMs - share.meanHoldMs);
    const held = (share.heldOn.get(running.proberId) ?? 1) - 1;
    if (held > 0) share.heldOn.set(running.proberId, held);
    else share.heldOn.delete(running.proberId);
    if (running.single) share.singles--;
    this.#forgetIdle(accountId, share);
  }

  #forgetIdle(accountId: string, share: AccountShare): void {
    if (share.waiting <= 0 && share.running.size === 0) this.#accounts.delete(accountId);
  }
}
