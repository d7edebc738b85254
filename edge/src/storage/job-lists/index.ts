// A batch job's lists behind one interface per job (docs/architecture.md, "Where a job's lists
// live"): its rows (the upload's order, original cells, the answer of a row without an address)
// and its addresses with their answers and follow-up state. Nothing else of the job is here: its
// row, counters, money and `finalized` stay in D1, which applies what a write reports (its
// counters with a per-job write sequence number) once, monotonic. No query reads two jobs' lists.
//
// A job's lists live in one of two stores, chosen at upload and never changed (`jobs.store`):
// its JobStore object (new jobs) or D1 (jobs from before). The choice is a fact of the job, so
// each isolate keeps it once learnt: the callers that read the job row (the routes, the
// consumer's live jobs, the cron's sweeps) and the hub's ticket tell it here (`knowStore`), and a
// caller that has seen none of those costs one D1 read, once per job per isolate.
import { env } from 'cloudflare:workers';
import { meteredEnv } from '../../meter.ts';
import { objectJobLists } from '../../objects/job-store.ts';
import type { Db } from '../db.ts';
import { shardNumberOf } from '../shards.ts';
import { d1JobLists } from './d1.ts';
import type { JobLists } from './types.ts';

export { answerColumns } from './d1.ts';
export type * from './types.ts';

/** Where a job's lists live (`jobs.store`). */
export type JobStoreKind = 'd1' | 'object';

/** The store new jobs take. */
export const NEW_JOB_STORE: JobStoreKind = 'object';

/** Jobs whose store this isolate knows; the oldest are forgotten past this many. */
const KNOWN_STORES_MAX = 10_000;
const knownStores = new Map<string, JobStoreKind>();

/** Tells the isolate where job `jobId`'s lists live (read with its row, or carried by a ticket). */
export function knowStore(jobId: string, store: JobStoreKind | null | undefined): void {
  if (!store || knownStores.get(jobId) === store) return;
  knownStores.set(jobId, store);
  if (knownStores.size > KNOWN_STORES_MAX) {
    const oldest = knownStores.keys().next().value;
    if (oldest !== undefined) knownStores.delete(oldest);
  }
}

async function storeOf(db: Db, jobId: string): Promise<JobStoreKind> {
  const known = knownStores.get(jobId);
  if (known) return known;
  const store = await db.$client
    .prepare('SELECT store FROM jobs WHERE id = ?1')
    .bind(jobId)
    .first<JobStoreKind>('store');
  // A job without a row (retention deleted it) has no lists left in D1 either: D1 answers empty.
  knowStore(jobId, store ?? 'd1');
  return store ?? 'd1';
}

/** The lists of job `jobId`, in the store it was given at upload. */
export function jobLists(db: Db, jobId: string): JobLists {
  const known = knownStores.get(jobId);
  if (known) return listsIn(db, jobId, known);
  return new Proxy({} as JobLists, {
    get: (_target, method: keyof JobLists | 'then') =>
      // Not a promise: awaiting the lists themselves must not read the store.
      method === 'then'
        ? undefined
        : async (...args: unknown[]) => {
            const lists = listsIn(db, jobId, await storeOf(db, jobId));
            return (lists[method] as (...each: unknown[]) => Promise<unknown>)(...args);
          },
  });
}

function listsIn(db: Db, jobId: string, store: JobStoreKind): JobLists {
  // The Worker's own binding, counted as each entry point's bindings are (meter.ts).
  return store === 'object'
    ? objectJobLists(meteredEnv(env).JOB_STORE, jobId, shardNumberOf(db))
    : d1JobLists(db.$client, jobId);
}
