// The lists of a job in D1's `job_rows` and `job_addresses` (every statement names the job),
// with the job's write sequence number in `job_list_seqs`. Each write runs in one D1 batch with
// the sequence's step and the report it returns, so a report is the state its write left.
import { jsonChunks } from '../json-chunks.ts';
import type {
  JobLists,
  ListAddress,
  ListAnswer,
  ListsReport,
  ListVerdict,
  PendingListAddress,
  ResultRow,
  ResultRowsFilter,
  StaleListAddress,
  UnfinishedAddress,
} from './types.ts';

/** status, sub_status, catch_all, refundable, result_json: one address's answer as stored. */
export function answerColumns(answer: ListAnswer): unknown[] {
  return [
    answer.status,
    answer.subStatus,
    answer.catchAll === null ? null : answer.catchAll ? 1 : 0,
    answer.refundable ? 1 : 0,
    answer.resultJson,
  ];
}

const NEXT_SEQ = `INSERT INTO job_list_seqs (job_id, seq) VALUES (?1, 1)
  ON CONFLICT (job_id) DO UPDATE SET seq = seq + 1`;

// The counters as the job row keeps them (job_addresses_state), the follow-up state
// (job_addresses_recheck), and the verdicts round ?2 changed.
const REPORT = `SELECT COALESCE((SELECT seq FROM job_list_seqs WHERE job_id = ?1), 0) AS seq, c.*,
    (SELECT COUNT(*) FROM job_addresses WHERE job_id = ?1 AND state = 'queued') AS pending,
    EXISTS (SELECT 1 FROM job_addresses WHERE job_id = ?1 AND recheck = 'due') AS due,
    (SELECT COUNT(*) FROM job_addresses WHERE job_id = ?1 AND recheck = 'asking') AS asking,
    (SELECT COUNT(*) FROM job_addresses WHERE job_id = ?1 AND ?2 IS NOT NULL AND changed_in_round = ?2) AS changed
  FROM (SELECT COUNT(*) AS processed, COALESCE(SUM(status = 'deliverable'), 0) AS deliverable,
      COALESCE(SUM(status = 'undeliverable'), 0) AS undeliverable, COALESCE(SUM(status = 'risky'), 0) AS risky,
      COALESCE(SUM(status = 'unknown'), 0) AS unknown, COALESCE(SUM(catch_all = 1), 0) AS catchAll,
      COALESCE(SUM(refundable), 0) AS refundable
    FROM job_addresses WHERE job_id = ?1 AND state = 'done') c`;

// A row's verdict: its address's final answer (a temporary one, kept while the address is asked
// again, is not yet a verdict), or the row's own for one without an address to verify.
const ROW_STATUS =
  "COALESCE(CASE WHEN a.state = 'done' THEN a.status END, json_extract(r.result_json, '$.status'))";
const ROW_SUB_STATUS =
  "COALESCE(CASE WHEN a.state = 'done' THEN a.sub_status END, json_extract(r.result_json, '$.subStatus'))";

const ROWS_WITH_RESULTS = `FROM job_rows r LEFT JOIN job_addresses a ON a.job_id = r.job_id AND a.idx = r.address_idx
       WHERE r.job_id = ?1 AND (?2 IS NULL OR ${ROW_STATUS} IN (SELECT value FROM json_each(?2)))
         AND (?3 IS NULL OR r.input LIKE ?3 ESCAPE '\\')
         AND (?4 IS NULL OR ${ROW_SUB_STATUS} IN (SELECT value FROM json_each(?4)))`;

function filterParams(filter: ResultRowsFilter): [string | null, string | null, string | null] {
  return [
    filter.statuses ? JSON.stringify(filter.statuses) : null,
    // The search text matched literally: LIKE's wildcards and the escape character are escaped
    // (SQLite, "The LIKE, GLOB, REGEXP, MATCH, and extract operators": ESCAPE clause).
    filter.search ? `%${filter.search.replace(/[\\%_]/g, '\\$&')}%` : null,
    filter.subStatuses ? JSON.stringify(filter.subStatuses) : null,
  ];
}

// A job's rows that cost nothing: those without an address (empty, invalid, unreadable) and every
// row of an address but its first (a duplicate). The first rows come from one grouped pass over
// the job's rows, not a lookup per row.
const FREE_ROWS = `DELETE FROM job_rows WHERE rowid IN (
  SELECT r.rowid FROM job_rows r
  LEFT JOIN (SELECT address_idx, MIN(row) AS first_row FROM job_rows
    WHERE job_id = ?1 AND address_idx IS NOT NULL GROUP BY address_idx) f ON f.address_idx = r.address_idx
  WHERE r.job_id = ?1 AND (r.address_idx IS NULL OR r.row > f.first_row)
  LIMIT ?2)`;

export function d1JobLists(d1: D1Database, jobId: string): JobLists {
  const reportStatement = (round: number | null = null) => d1.prepare(REPORT).bind(jobId, round);
  /** The writes, the sequence's step and the report, in one transaction. */
  const write = async (
    statements: D1PreparedStatement[],
    round: number | null = null,
  ): Promise<ListsReport> => {
    const outcome = await d1.batch([...statements, d1.prepare(NEXT_SEQ).bind(jobId), reportStatement(round)]);
    return reportOf(outcome.at(-1)?.results[0]);
  };
  const all = async <T>(sql: string, ...params: unknown[]): Promise<T[]> =>
    (
      await d1
        .prepare(sql)
        .bind(jobId, ...params)
        .all<T>()
    ).results;
  const asking = () =>
    all<ListAddress>(
      "SELECT idx, email, domain FROM job_addresses WHERE job_id = ?1 AND recheck = 'asking' ORDER BY idx",
    );

  return {
    async storeUpload({ rows, addresses, now }) {
      const statements: D1PreparedStatement[] = [];
      for (const chunk of rows) {
        // A row's cells are taken from its chunk of the file's cells by position (SQLite parses a
        // JSON parameter once per statement, not once per row: json.c's parse cache).
        statements.push(
          d1
            .prepare(
              `INSERT INTO job_rows (job_id, row, input, address_idx, result_json, csv_values)
               SELECT ?1, j.value->>0, j.value->>1, j.value->>2, j.value->>3, ?3 -> ('$[' || CAST(j.value->>0 - ?4 AS INTEGER) || ']')
               FROM json_each(?2) j WHERE true
               ON CONFLICT (job_id, row) DO NOTHING`,
            )
            .bind(jobId, chunk.rows, chunk.cells, chunk.cellsOffset),
        );
      }
      for (const chunk of addresses) {
        statements.push(
          d1
            .prepare(
              `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, refundable, result_json)
               SELECT ?1, j.value->>0, j.value->>1, j.value->>2, CASE WHEN j.value->>7 IS NULL THEN 'queued' ELSE 'done' END, ?3,
                 j.value->>3, j.value->>4, j.value->>5, j.value->>6, j.value->>7
               FROM json_each(?2) j WHERE true
               ON CONFLICT (job_id, idx) DO NOTHING`,
            )
            .bind(jobId, chunk.json, now),
        );
      }
      return write(statements);
    },

    async recordFinal(answers, recheck) {
      const statements = jsonChunks(
        answers.map((answer) => [
          answer.idx,
          ...answerColumns(answer),
          recheck && answer.recheckable ? 1 : 0,
        ]),
      ).map((chunk) =>
        d1
          .prepare(
            `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, refundable, result_json, recheck)
             SELECT ?1, j.value->>0, '', '', 'done', 0, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5,
               CASE WHEN j.value->>6 = 1 THEN 'due' END
             FROM json_each(?2) j WHERE true
             ON CONFLICT (job_id, idx) DO UPDATE SET state = 'done', status = excluded.status, sub_status = excluded.sub_status,
               catch_all = excluded.catch_all, refundable = excluded.refundable, result_json = excluded.result_json,
               recheck = excluded.recheck
             WHERE job_addresses.state != 'done'`,
          )
          .bind(jobId, chunk.json),
      );
      return write(statements);
    },

    async recordProvisional(answers, now) {
      const statements = jsonChunks(
        answers.map((answer) => [answer.idx, ...answerColumns(answer), answer.retryAt]),
      ).map((chunk) =>
        d1
          .prepare(
            `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, refundable, result_json, retry_at)
             SELECT ?1, j.value->>0, '', '', 'queued', ?3, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5, j.value->>6
             FROM json_each(?2) j WHERE true
             ON CONFLICT (job_id, idx) DO UPDATE SET attempts = attempts + 1, enqueued_at = excluded.enqueued_at,
               status = excluded.status, sub_status = excluded.sub_status, catch_all = excluded.catch_all,
               refundable = excluded.refundable, result_json = excluded.result_json, retry_at = excluded.retry_at
             WHERE job_addresses.state != 'done'`,
          )
          .bind(jobId, chunk.json, now),
      );
      // The counters count final answers only: nothing for D1 to apply.
      if (statements.length > 0) await d1.batch(statements);
    },

    async report(round) {
      return reportOf(await reportStatement(round ?? null).first());
    },

    async resultRows(filter, page) {
      return all<ResultRow>(
        `SELECT r.row, r.input, COALESCE(r.result_json, a.result_json) AS resultJson, r.csv_values AS csvValues
         ${ROWS_WITH_RESULTS} ORDER BY r.row LIMIT ?5 OFFSET ?6`,
        ...filterParams(filter),
        page.limit,
        page.offset,
      );
    },

    async countResultRows(filter) {
      const [row] = await all<{ total: number }>(
        `SELECT COUNT(*) AS total ${ROWS_WITH_RESULTS}`,
        ...filterParams(filter),
      );
      return row?.total ?? 0;
    },

    rowsByVerdict() {
      return all(
        `SELECT ${ROW_STATUS} AS status, COUNT(*) AS total, COALESCE(SUM(a.catch_all = 1), 0) AS catchAll
         ${ROWS_WITH_RESULTS} GROUP BY 1`,
        null,
        null,
        null,
      );
    },

    async pending(limit) {
      const [listed, counted] = await d1.batch([
        d1
          .prepare(
            `SELECT email, sub_status AS subStatus, retry_at AS retryAt FROM job_addresses
             WHERE job_id = ?1 AND state = 'queued' ORDER BY idx LIMIT ?2`,
          )
          .bind(jobId, limit),
        d1
          .prepare(`SELECT COUNT(*) AS total FROM job_addresses WHERE job_id = ?1 AND state = 'queued'`)
          .bind(jobId),
      ]);
      return {
        total: (counted?.results[0] as { total: number } | undefined)?.total ?? 0,
        addresses: (listed?.results ?? []) as PendingListAddress[],
      };
    },

    unfinished() {
      return all<UnfinishedAddress>(
        `SELECT idx, email, domain, sub_status AS subStatus, result_json AS resultJson FROM job_addresses
         WHERE job_id = ?1 AND state = 'queued' ORDER BY idx`,
      );
    },

    stale(before, limit) {
      return all<StaleListAddress>(
        `SELECT idx, email, domain, attempts FROM job_addresses
         WHERE job_id = ?1 AND state = 'queued' AND enqueued_at < ?2 LIMIT ?3`,
        before,
        limit,
      );
    },

    async markRequeued(idxs, now) {
      await d1
        .prepare(
          `UPDATE job_addresses SET attempts = attempts + 1, enqueued_at = ?3
           WHERE job_id = ?1 AND idx IN (SELECT value FROM json_each(?2)) AND state = 'queued'`,
        )
        .bind(jobId, JSON.stringify(idxs), now)
        .run();
    },

    async claimDue() {
      await d1
        .prepare("UPDATE job_addresses SET recheck = 'asking' WHERE job_id = ?1 AND recheck = 'due'")
        .bind(jobId)
        .run();
      return asking();
    },

    async claimDomains(domains) {
      await d1
        .prepare(
          `UPDATE job_addresses SET recheck = 'asking'
           WHERE job_id = ?1 AND domain IN (SELECT value FROM json_each(?2))`,
        )
        .bind(jobId, JSON.stringify(domains))
        .run();
      return asking();
    },

    async chargeable(idxs) {
      const rows = await all<{ idx: number }>(
        `SELECT idx FROM job_addresses
         WHERE job_id = ?1 AND idx IN (SELECT value FROM json_each(?2)) AND recheck = 'asking' AND refundable = 1
         ORDER BY idx`,
        JSON.stringify(idxs),
      );
      return rows.map((row) => row.idx);
    },

    recordRound(answers, round, paid) {
      const rows = JSON.stringify(answers);
      // SET expressions read the row as it was before the update (SQLite, "UPDATE"), so the
      // change test compares the old verdict with the new one. A known answer replaces the
      // verdict of an address that is paid for: never refunded, or charged for this answer.
      const known = 'excluded.result_json IS NOT NULL';
      const replaces = `${known} AND (job_addresses.refundable = 0 OR job_addresses.recheck = 'charging')`;
      const changed = `${replaces} AND (excluded.status IS NOT job_addresses.status OR excluded.sub_status IS NOT job_addresses.sub_status)`;
      const replaced = (column: string) =>
        `${column} = CASE WHEN ${replaces} THEN excluded.${column} ELSE job_addresses.${column} END`;
      return write(
        [
          d1
            .prepare(
              `UPDATE job_addresses SET recheck = 'charging'
               WHERE job_id = ?1 AND idx IN (SELECT value FROM json_each(?2)) AND recheck = 'asking' AND refundable = 1`,
            )
            .bind(jobId, JSON.stringify(paid)),
          d1
            .prepare(
              `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, result_json, recheck)
               SELECT ?1, j.value->>0, '', '', 'done', 0, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5
               FROM json_each(?2) j WHERE true
               ON CONFLICT (job_id, idx) DO UPDATE SET ${replaced('status')}, ${replaced('sub_status')},
                 ${replaced('catch_all')}, ${replaced('result_json')},
                 changed_in_round = CASE WHEN ${changed} THEN ?3 ELSE job_addresses.changed_in_round END,
                 refundable = CASE WHEN job_addresses.recheck = 'charging' THEN 0 ELSE job_addresses.refundable END,
                 -- a known answer D1 did not charge for: asked again next round
                 recheck = CASE WHEN ${known} AND NOT (${replaces}) THEN 'due' ELSE excluded.recheck END
               WHERE job_addresses.recheck IN ('asking', 'charging')`,
            )
            .bind(jobId, rows, round),
        ],
        round,
      );
    },

    closeRound(round) {
      return write(
        [
          d1
            .prepare("UPDATE job_addresses SET recheck = 'due' WHERE job_id = ?1 AND recheck = 'asking'")
            .bind(jobId),
        ],
        round,
      );
    },

    async domains() {
      const rows = await all<{ domain: string }>(
        "SELECT DISTINCT domain FROM job_addresses WHERE job_id = ?1 AND domain NOT LIKE '[%'",
      );
      return rows.map((row) => row.domain);
    },

    domainCounts(domains) {
      return all(
        `SELECT d.value->>0 AS domain,
           (SELECT COUNT(*) FROM job_addresses a WHERE a.job_id = ?1 AND a.domain = d.value->>0) AS addresses,
           (SELECT COUNT(*) FROM job_addresses a
            WHERE a.job_id = ?1 AND a.domain = d.value->>0 AND a.changed_in_round = d.value->>1) AS changed
         FROM json_each(?2) d`,
        JSON.stringify(domains.map(({ domain, round }) => [domain, round])),
      );
    },

    async verdicts(emails) {
      const rows = await all<ListVerdict & { email: string }>(
        `SELECT email, status, sub_status AS subStatus, result_json AS resultJson FROM job_addresses
         WHERE job_id = ?1 AND email IN (SELECT value FROM json_each(?2)) AND state = 'done' AND status IS NOT NULL`,
        JSON.stringify(emails),
      );
      return new Map(rows.map(({ email, ...verdict }) => [email, verdict]));
    },

    async dropFreeRows(limit) {
      return (await d1.prepare(FREE_ROWS).bind(jobId, limit).run()).meta.changes;
    },

    async deleteSome(limit) {
      for (const table of ['job_rows', 'job_addresses', 'job_list_seqs'] as const) {
        const { changes } = (
          await d1
            .prepare(
              `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE job_id = ?1 LIMIT ?2)`,
            )
            .bind(jobId, limit)
            .run()
        ).meta;
        if (changes > 0) return changes;
      }
      return 0;
    },
  };
}

function reportOf(row: unknown): ListsReport {
  if (!row) throw new Error('no report of the lists');
  const read = row as Record<keyof ListsReport, number>;
  return { ...read, due: read.due === 1 } as ListsReport;
}
