/** @jsxImportSource hono/jsx */
// The verdict mix as a picture: one stacked bar (inline SVG, stretched to the card's width,
// so it holds no text) and a legend in HTML that carries every figure, for the overview's
// last 30 days and for one job. The bar and the legend are the same list of segments, each
// counted once, so the legend's shares add up to 100 % and each one is drawn at its size.
// Colour is never the only signal: each legend entry has its word.
import { VERIFICATION_STATUSES, type VerificationStatus } from '@rcpt/shared/contract/api';
import type { Child } from 'hono/jsx';

export interface VerdictMixProps {
  mix: Record<VerificationStatus, number>;
  /** Catch-all addresses, a part of `risky`: shown as a segment of their own, out of risky's. */
  catchAll?: number;
  /** What is counted, said beside each figure. */
  unit?: keyof typeof UNITS;
  /** Shown instead of the chart while there are no verdicts. */
  empty: Child;
}

const UNITS = { addresses: ['address', 'addresses'], rows: ['row', 'rows'] } as const;

export interface MixSegment {
  /** The CSS name of the segment's colour: a status, or `catch-all`. */
  name: string;
  label: string;
  count: number;
  /** Whole percent; the segments' percents add up to 100. */
  percent: number;
}

/**
 * The segments of a mix: each status, with risky split into catch-all and the other risky
 * verdicts when catch-all is given. Percents are rounded by largest remainder, so that they
 * add up to exactly 100 whatever the counts.
 */
export function mixSegments(mix: Record<VerificationStatus, number>, catchAllCount?: number): MixSegment[] {
  const catchAll = Math.min(catchAllCount ?? 0, mix.risky);
  const segments = VERIFICATION_STATUSES.flatMap((status) =>
    status === 'risky' && catchAllCount !== undefined
      ? [
          { name: 'risky', label: 'risky, other', count: mix.risky - catchAll },
          { name: 'catch-all', label: 'catch-all (risky)', count: catchAll },
        ]
      : [{ name: status, label: status, count: mix[status] }],
  );
  const total = segments.reduce((sum, segment) => sum + segment.count, 0);
  if (total === 0) return segments.map((segment) => ({ ...segment, percent: 0 }));
  const exact = segments.map((segment) => (segment.count / total) * 100);
  const percents = exact.map(Math.floor);
  let left = 100 - percents.reduce((sum, percent) => sum + percent, 0);
  const byRemainder = exact
    .map((value, index) => ({ index, remainder: value - Math.floor(value) }))
    .sort((a, b) => b.remainder - a.remainder);
  for (const { index } of byRemainder) {
    if (left === 0) break;
    percents[index] = (percents[index] ?? 0) + 1;
    left--;
  }
  return segments.map((segment, index) => ({ ...segment, percent: percents[index] ?? 0 }));
}

export function VerdictMix(props: VerdictMixProps) {
  const segments = mixSegments(props.mix, props.catchAll);
  const total = segments.reduce((sum, segment) => sum + segment.count, 0);
  if (total === 0) return <p class="muted">{props.empty}</p>;
  let offset = 0;
  return (
    <div class="mix">
      <svg viewBox="0 0 100 6" preserveAspectRatio="none" class="mix-bar" aria-hidden="true">
        {segments
          .filter((segment) => segment.count > 0)
          .map((segment) => {
            const width = (segment.count / total) * 100;
            const rect = <rect class={`mix-${segment.name}`} x={offset} y={0} width={width} height={6} />;
            offset += width;
            return rect;
          })}
      </svg>
      <ul class="mix-legend">
        {segments.map((segment) => (
          <li data-mix-segment={segment.name}>
            <span class={`legend-swatch mix-${segment.name}`} aria-hidden="true" />
            <span class={`badge badge-${segment.name}`}>{segment.label}</span> {segment.count}
            {props.unit ? ` ${UNITS[props.unit][segment.count === 1 ? 0 : 1]}` : ''}{' '}
            <span class="muted">({segment.percent}%)</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
