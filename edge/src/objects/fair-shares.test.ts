import { describe, expect, it } from 'vitest';
import { FairShares, FIRST_HOLD_ESTIMATE_MS } from './fair-shares.ts';

/** Runs one probe of `accountId` on prober p1 from `at` for `heldMs`. */
function hold(shares: FairShares, accountId: string, id: string, at: number, heldMs: number): void {
  shares.queued(accountId);
  shares.started(accountId, id, 'p1', false, at);
  shares.ended(accountId, id, at + heldMs);
}

describe('FairShares', () => {
  it('charges the slot-time a probe held, not the probe: one tarpit probe outweighs a hundred quick ones', () => {
    const shares = new FairShares();
    shares.queued('tarpits');
    shares.queued('quick');
    hold(shares, 'tarpits', 't1', 0, 30_000);
    for (let index = 0; index < 100; index++) hold(shares, 'quick', `q${index}`, index * 200, 200);
    expect(shares.charge('quick', 30_000)).toBe(20_000);
    expect(shares.charge('tarpits', 30_000)).toBe(30_000);
  });

  it('charges a running probe at least what its account usually holds, and its time so far past that', () => {
    const shares = new FairShares();
    shares.queued('a');
    shares.started('a', 'first', 'p1', false, 0);
    expect(shares.charge('a', 10)).toBe(FIRST_HOLD_ESTIMATE_MS);
    expect(shares.charge('a', 45_000)).toBe(45_000);
  });

  it('lets an account back in level with the least used working account, with no credit banked while idle', () => {
    const shares = new FairShares();
    shares.queued('busy');
    hold(shares, 'busy', 'b1', 0, 50_000);
    shares.queued('busy');
    shares.started('busy', 'b2', 'p1', false, 50_000);
    // 'late' did nothing for 50 s: it starts at busy's 50 s used, not at 0.
    shares.queued('late');
    expect(shares.charge('late', 50_000)).toBe(50_000);
    // An account that goes idle is forgotten, and comes back level again.
    shares.unqueued('late');
    expect(shares.charge('late', 50_000)).toBe(0);
  });

  it("never lets one account hold a prober's reserve", () => {
    const shares = new FairShares();
    for (let index = 0; index < 8; index++) {
      expect(shares.mayTake('a', 'p1', 10)).toBe(true);
      shares.queued('a');
      shares.started('a', `a${index}`, 'p1', false, 0);
    }
    expect(shares.mayTake('a', 'p1', 10)).toBe(false);
    expect(shares.mayTake('a', 'p2', 10)).toBe(true);
    expect(shares.mayTake('b', 'p1', 10)).toBe(true);
    // A prober of one slot is still usable.
    expect(shares.mayTake('b', 'p3', 1)).toBe(true);
  });
});
