// Billable platform operations, counted for the benchmark's cost figure when the deployment
// sets RCPT_METER=true (never in production): each entry point, queue send, Durable Object
// call and D1 statement logs one `rcpt-meter {…}` line that the benchmark adds up. Prices per
// operation are in the README ("What a batch costs").

import { type MeterCounts, meterLine } from './meter-line.ts';

export type { MeterCounts };

let enabled = false;

/** Turns metering on for this isolate when the deployment asks for it; called by every entry point. */
export function meterFrom(env: { RCPT_METER?: string }): void {
  enabled = env.RCPT_METER === 'true';
}

export function meter(counts: MeterCounts): void {
  if (enabled) console.log(meterLine(counts));
}

/**
 * The D1 binding, counting each statement's rows read and written (D1 reports them in `meta`).
 * `raw()` (drizzle's selects) reports no meta and is passed through uncounted: reads are the
 * cheapest operation there is, and the batch path's hot statements are all run, all or batch.
 */
export function meteredD1(d1: D1Database): D1Database {
  if (!enabled) return d1;
  const count = (result: D1Result | D1Response) =>
    meter({ d1RowsRead: result.meta.rows_read ?? 0, d1RowsWritten: result.meta.rows_written ?? 0 });
  const wrapStatement = (statement: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(statement, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (property === 'bind') return (...values: unknown[]) => wrapStatement(target.bind(...values));
        if (property === 'run' || property === 'all')
          return async () => {
            const result = await (target[property] as () => Promise<D1Result>).call(target);
            count(result);
            return result;
          };
        if (property === 'first')
          return async (column?: string) => {
            const result = await target.all();
            count(result);
            const row = (result.results[0] ?? null) as Record<string, unknown> | null;
            return column === undefined || row === null ? row : row[column];
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return new Proxy(d1, {
    get(target, property) {
      if (property === 'prepare') return (query: string) => wrapStatement(target.prepare(query));
      if (property === 'batch')
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements);
          for (const result of results) count(result);
          return results;
        };
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
