// `npm run admin -- fleet` as text: the store's writes today against its daily budget come first,
// so an operator sees how close new lists are to being refused before reading the probers.
import { describe, expect, it } from 'vitest';
import { fleetLines } from './stack/fleet-view.ts';

const storage = {
  day: '2026-11-28T00:00:00.000Z',
  usedBytes: 100_000_000,
  budgetBytes: 133_333_333,
  resetAt: '2026-11-29T00:00:00.000Z',
};

describe('fleetLines', () => {
  it("says today's writes against the daily write budget, then each region", () => {
    const lines = fleetLines({
      storage,
      regions: [{ region: 'default', backlog: { single: 0, batch: 2, running: 1 }, probers: [] }],
    });
    expect(lines[0]).toBe(
      'storage today: 100.0 MB of 133.3 MB written (75 %); new lists are refused past it, until 2026-11-29T00:00:00.000Z',
    );
    expect(lines[1]).toBe('region default: 0 prober(s); waiting 0 single, 2 batch; running 1');
  });

  it('says when no region has a prober token, with or without the storage line', () => {
    expect(fleetLines({ storage, regions: [] }).at(-1)).toBe('no region has a live prober token');
    // An edge older than the daily write budget answers no `storage`.
    expect(fleetLines({ regions: [] })).toEqual(['no region has a live prober token']);
  });
});
