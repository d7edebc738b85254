/** @jsxImportSource hono/jsx */
// The verdict mix as a picture: one stacked bar (inline SVG, stretched to the card's width,
// so it holds no text) and a legend in HTML that carries every figure, for the overview's
// last 30 days and for one job. Colour is never the only signal: each legend entry has its word.
import { VERIFICATION_STATUSES, type VerificationStatus } from '@rcpt/shared/contract/api';
import type { Child } from 'hono/jsx';

export interface VerdictMixProps {
  mix: Record<VerificationStatus, number>;
  /** Catch-all addresses, a part of `risky`: drawn as their own share of the risky segment. */
  catchAll?: number;
  /** Shown instead of the chart while there are no verdicts. */
  empty: Child;
}

interface Segment {
  name: string;
  count: number;
}

function percentOf(count: number, total: number): number {
  return Math.round((count / total) * 100);
}

export function VerdictMix(props: VerdictMixProps) {
  const total = VERIFICATION_STATUSES.reduce((sum, status) => sum + props.mix[status], 0);
  if (total === 0) return <p class="muted">{props.empty}</p>;
  const catchAll = Math.min(props.catchAll ?? 0, props.mix.risky);
  const segments: Segment[] = VERIFICATION_STATUSES.flatMap((status) =>
    status === 'risky' && catchAll > 0
      ? [
          { name: status, count: props.mix.risky - catchAll },
          { name: 'catch-all', count: catchAll },
        ]
      : [{ name: status, count: props.mix[status] }],
  );
  let offset = 0;
  return (
    <div class="mix">
      <svg viewBox="0 0 100 6" preserveAspectRatio="none" class="mix-bar" aria-hidden="true">
        {segments.map((segment) => {
          const width = (segment.count / total) * 100;
          const rect = <rect class={`mix-${segment.name}`} x={offset} y={0} width={width} height={6} />;
          offset += width;
          return rect;
        })}
      </svg>
      <ul class="mix-legend">
        {VERIFICATION_STATUSES.map((status) => (
          <li>
            <span class={`legend-swatch mix-${status}`} aria-hidden="true" />
            <span class={`badge badge-${status}`}>{status}</span> {props.mix[status]}{' '}
            <span class="muted">({percentOf(props.mix[status], total)}%)</span>
          </li>
        ))}
        {props.catchAll === undefined ? null : (
          <li>
            <span class="legend-swatch mix-catch-all" aria-hidden="true" />
            <span class="badge">catch-all</span> {catchAll}{' '}
            <span class="muted">({percentOf(catchAll, total)}%, counted in risky)</span>
          </li>
        )}
      </ul>
    </div>
  );
}
