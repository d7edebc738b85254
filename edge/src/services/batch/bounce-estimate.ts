// The bounce estimate of a list: the share of addresses a send would bounce on, and its level,
// from a job's counts (the API's view) or its rows' (the job page, which counts rows).
import type { BounceEstimate } from '@rcpt/shared/contract/api';
import type { JobRow, RowCounts } from '../../storage/jobs.ts';

/** The bounce percentages from which an estimate is `medium` and `high` (below: `low`). */
export const BOUNCE_LEVEL_FROM = { medium: 2, high: 8 } as const;

/** The verdicts a bounce estimate is made from, all counted in one unit. */
export interface BounceBasis {
  unit: 'addresses' | 'rows';
  /** Those with a verdict, invalid ones included. */
  checked: number;
  undeliverable: number;
  risky: number;
  /** The risky ones at a catch-all domain. */
  catchAll: number;
  unknown: number;
}

/**
 * The share of the list expected to bounce if sent as-is: undeliverable and invalid entries
 * bounce; a catch-all address bounces about one time in three, an unknown one in six, other
 * risky ones one in ten (industry rules of thumb; stated in `basis`).
 */
export function bounceEstimate(counts: BounceBasis): BounceEstimate | null {
  if (counts.checked <= 0) return null;
  const otherRisky = Math.max(0, counts.risky - counts.catchAll);
  const expected = counts.undeliverable + counts.catchAll / 3 + counts.unknown / 6 + otherRisky / 10;
  const percent = Math.round((expected / counts.checked) * 1000) / 10;
  return {
    percent,
    level: percent < BOUNCE_LEVEL_FROM.medium ? 'low' : percent < BOUNCE_LEVEL_FROM.high ? 'medium' : 'high',
    basis: `${counts.checked} ${counts.unit} checked: undeliverable and invalid count fully, catch-all 1/3, unknown 1/6, other risky 1/10`,
  };
}

/** The job's estimate as the API gives it: its unique addresses, and its invalid rows. */
export function jobBounceEstimate(job: JobRow): BounceEstimate | null {
  return bounceEstimate({
    unit: 'addresses',
    checked: job.processedEmails + job.invalidRows,
    undeliverable: job.undeliverableCount + job.invalidRows,
    risky: job.riskyCount,
    catchAll: job.catchAllCount,
    unknown: job.unknownCount,
  });
}

/**
 * The estimate over a job's rows, as the job page counts them (an empty row has no address to
 * send to, so it is left out).
 */
export function rowsBounceEstimate(rows: RowCounts, emptyRows: number): BounceEstimate | null {
  return bounceEstimate({
    unit: 'rows',
    checked:
      rows.byStatus.deliverable +
      rows.byStatus.undeliverable +
      rows.byStatus.risky +
      rows.byStatus.unknown -
      emptyRows,
    undeliverable: rows.byStatus.undeliverable - emptyRows,
    risky: rows.byStatus.risky,
    catchAll: rows.catchAll,
    unknown: rows.byStatus.unknown,
  });
}
