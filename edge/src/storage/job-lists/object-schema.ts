// The tables of a job's lists in its JobStore object's own storage (objects/job-store.ts), as the
// D1 migrations leave them in D1, so that the statements of d1.ts run unchanged on either.
export const LISTS_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS job_rows (job_id TEXT NOT NULL, row INTEGER NOT NULL, input TEXT NOT NULL,
     address_idx INTEGER, result_json TEXT, csv_values TEXT, PRIMARY KEY (job_id, row))`,
  `CREATE TABLE IF NOT EXISTS job_addresses (job_id TEXT NOT NULL, idx INTEGER NOT NULL, email TEXT NOT NULL,
     domain TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER DEFAULT 0 NOT NULL, enqueued_at INTEGER NOT NULL,
     status TEXT, sub_status TEXT, catch_all INTEGER, refundable INTEGER DEFAULT 0 NOT NULL, result_json TEXT,
     recheck TEXT, changed_in_round INTEGER, retry_at INTEGER, PRIMARY KEY (job_id, idx))`,
  'CREATE INDEX IF NOT EXISTS job_addresses_state ON job_addresses (job_id, state, enqueued_at)',
  'CREATE INDEX IF NOT EXISTS job_addresses_recheck ON job_addresses (job_id, recheck) WHERE recheck IS NOT NULL',
  'CREATE INDEX IF NOT EXISTS job_addresses_email ON job_addresses (email)',
  'CREATE TABLE IF NOT EXISTS job_list_seqs (job_id TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL)',
];
