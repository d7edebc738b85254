// A batch job's lists behind one interface per job (docs/architecture.md, "Where a job's lists
// live"): its rows (the upload's order, original cells, the answer of a row without an address)
// and its addresses with their answers and follow-up state. Nothing else of the job is here: its
// row, counters, money and `finalized` stay in D1, which applies what a write reports (its
// counters with a per-job write sequence number) once, monotonic. No query reads two jobs' lists.
import type { Db } from '../db.ts';
import { d1JobLists } from './d1.ts';
import type { JobLists } from './types.ts';

export { answerColumns } from './d1.ts';
export type * from './types.ts';

/** The lists of job `jobId`. */
export function jobLists(db: Db, jobId: string): JobLists {
  return d1JobLists(db.$client, jobId);
}
