// The verdict mix: the bar and the legend are one list of segments, each verdict counted once,
// whose shares add up to exactly 100 %.
import fc from 'fast-check';
import { jsx } from 'hono/jsx';
import { describe, expect, it } from 'vitest';
import { mixSegments, VerdictMix } from './verdict-mix.tsx';

describe('the verdict mix', () => {
  it('counts catch-all once, out of risky, and its legend adds up to 100 %', async () => {
    const mix = { deliverable: 13, undeliverable: 11, risky: 9, unknown: 7 };
    const segments = mixSegments(mix, 4);
    expect(segments.map(({ name, count, percent }) => [name, count, percent])).toEqual([
      // 32.5, 27.5, 12.5, 10 and 17.5: the two largest remainders first in order get the 2 left.
      ['deliverable', 13, 33],
      ['undeliverable', 11, 28],
      ['risky', 5, 12],
      ['catch-all', 4, 10],
      ['unknown', 7, 17],
    ]);
    const html = await jsx(VerdictMix, { mix, catchAll: 4, unit: 'addresses', empty: 'none' }).toString();
    const shares = [...html.matchAll(/\((\d+)%\)/g)].map((match) => Number(match[1]));
    expect(shares.reduce((sum, share) => sum + share, 0)).toBe(100);
    expect(html).toContain('catch-all (risky)</span> 4 addresses');
    // Each legend entry is drawn: the bar's widths are the segments' counts over the total.
    const widths = [...html.matchAll(/width="([\d.]+)"/g)].map((match) => Number(match[1]));
    expect(widths.map((width) => Math.round(width * 40) / 100)).toEqual([13, 11, 5, 4, 7]);
  });

  it('rounds any mix to shares that add up to 100 %', () => {
    const count = fc.nat({ max: 10_000 });
    fc.assert(
      fc.property(
        count,
        count,
        count,
        count,
        count,
        (deliverable, undeliverable, risky, unknown, catchAll) => {
          fc.pre(deliverable + undeliverable + risky + unknown > 0);
          const segments = mixSegments({ deliverable, undeliverable, risky, unknown }, catchAll);
          expect(segments.reduce((sum, segment) => sum + segment.percent, 0)).toBe(100);
          expect(segments.reduce((sum, segment) => sum + segment.count, 0)).toBe(
            deliverable + undeliverable + risky + unknown,
          );
        },
      ),
    );
  });
});
