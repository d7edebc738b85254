// A watched job's domain changes as its status and its `job.updated` events show them: what the
// cron's look at its domains (watch.ts) found changed, with what the round it started did.
import type { WatchChange } from '@rcpt/shared/contract/api';
import type { Db } from '../../storage/db.ts';
import { type SeenChangeRow, seenChangesOf } from '../../storage/watches.ts';

/** A change as stored with the watch: WatchChange without what the round did. */
export type SeenChange = Pick<WatchChange, 'changes' | 'before' | 'after'>;

/** Most domain changes a job's status and events list. */
const CHANGES_LISTED = 100;

/** The job's domain changes for its status, the latest first; those of one round for its event. */
export async function domainChangesOf(
  deps: { db: Db },
  jobId: string,
  round?: number,
): Promise<WatchChange[]> {
  const rows = await seenChangesOf(deps.db, jobId, {
    ...(round === undefined ? {} : { round }),
    limit: CHANGES_LISTED,
  });
  return rows.map(watchChangeOf);
}

function watchChangeOf(row: SeenChangeRow): WatchChange {
  const change = JSON.parse(row.change) as SeenChange;
  return {
    domain: row.domain,
    seenAt: new Date(row.changedAt).toISOString(),
    ...change,
    addresses: row.addresses,
    changedAddresses: row.changedAddresses,
  };
}
