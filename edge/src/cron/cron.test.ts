import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  balanceOf,
  call,
  countOf,
  db,
  listsCountOf,
  listsRows,
  newCaller,
  silentQueue,
} from '../../test/fixtures.ts';
import { jobViewOf, liveJob } from '../../test/settle-deps.ts';
import { configOf } from '../config.ts';
import { settleDepsOf } from '../services/batch-lifecycle.ts';
import { retentionCutoffsOf } from '../services/money/storage-policy.ts';
import { createDb } from '../storage/db.ts';
import { recordCatchAll } from '../storage/domain-facts.ts';
import { deleteExpired, ROWS_PER_STATEMENT } from '../storage/retention.ts';
import { ROWS_STORE_GRACE_MS, recoverStuckJobs } from './recovery.ts';

const DAY = 86_400_000;

/** The retention cron's cutoffs at `now`, with the deployment's settings. */
const cutoffsAt = (now: number) => retentionCutoffsOf(configOf(env), now);

async function uploadSandboxJob(key: string): Promise<string> {
  const response = await call('/api/v1/bulk/upload', {
    key,
    json: { emails: ['deliverable@x.test', 'oops'] },
  });
  return (await response.json<{ jobId: string }>()).jobId;
}

describe('retention', () => {
  it('deletes jobs, their rows and history once older than the retention period, and nothing younger', async () => {
    const caller = await newCaller({ mode: 'test' });
    const oldJob = await uploadSandboxJob(caller.apiKey);
    const youngJob = await uploadSandboxJob(caller.apiKey);
    await call('/api/v1/verify', { key: caller.apiKey, json: { email: 'deliverable@x.test' } });
    // Move the clock: the first job and every history row are 61 days old.
    const past = Date.now() - 61 * DAY;
    await env.DB.prepare('UPDATE jobs SET created_at = ? WHERE id = ?').bind(past, oldJob).run();
    await env.DB.prepare(
      'UPDATE verifications SET created_at = ? WHERE account_id = ? AND (job_id IS NULL OR job_id = ?)',
    )
      .bind(past, caller.accountId, oldJob)
      .run();

    await env.DB.prepare(
      'INSERT INTO sessions (token_hash, account_id, created_at, expires_at, last_seen_at) VALUES (?, ?, 0, ?, 0), (?, ?, 0, ?, 0)',
    )
      .bind('expired', caller.accountId, Date.now() - 1, 'live', caller.accountId, Date.now() + DAY)
      .run();
    const report = await deleteExpired(db(), cutoffsAt(Date.now()), Date.now());
    expect(report.sessions).toBe(1);
    expect(await countOf('SELECT COUNT(*) AS n FROM sessions WHERE token_hash = ?', 'live')).toBe(1);
    expect(report.jobs).toBeGreaterThanOrEqual(1);
    expect(await countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ?', oldJob)).toBe(0);
    expect(await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', oldJob)).toBe(0);
    expect(
      await countOf(
        'SELECT COUNT(*) AS n FROM verifications WHERE account_id = ? AND kind = ?',
        caller.accountId,
        'single',
      ),
    ).toBe(0);
    expect(await countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ?', youngJob)).toBe(1);
    expect(await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', youngJob)).toBe(2);
    expect((await call(`/api/v1/bulk/status/${oldJob}`, { key: caller.apiKey })).status).toBe(404);
  });
});

/** `d1`, noting the SQL and the rows changed of every statement run on its own. */
function recordingD1(d1: D1Database, runs: { sql: string; changes: number }[]): D1Database {
  return new Proxy(d1, {
    get(target, property) {
      if (property === 'prepare') {
        return (sql: string) => {
          const statement = target.prepare(sql);
          return new Proxy(statement, {
            get(prepared, name) {
              if (name !== 'bind') return Reflect.get(prepared, name).bind(prepared);
              return (...values: unknown[]) => {
                const bound = prepared.bind(...values);
                return new Proxy(bound, {
                  get(boundStatement, method) {
                    if (method !== 'run') return Reflect.get(boundStatement, method).bind(boundStatement);
                    return async () => {
                      const result = await boundStatement.run();
                      runs.push({ sql, changes: result.meta.changes });
                      return result;
                    };
                  },
                });
              };
            },
          });
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('retention of a large job', () => {
  it(`deletes a job of thousands of rows in D1 with statements of ${ROWS_PER_STATEMENT} rows at most, the job last`, async () => {
    // A job from before the objects: its lists are in D1, which holds every job's.
    const { jobId } = await liveJob({ emails: ['deliverable@x.test', 'oops'], now: Date.now(), store: 'd1' });
    // 2,500 more rows and addresses, as a large upload leaves them.
    for (const insert of [
      "INSERT INTO job_rows (job_id, row, input) SELECT ?1, 100 + value, 'x' FROM json_each(?2)",
      "INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at) SELECT ?1, 100 + value, 'x@x.test', 'x.test', 'done', 0 FROM json_each(?2)",
    ]) {
      await env.DB.prepare(insert)
        .bind(jobId, JSON.stringify(Array.from({ length: 2500 }, (_, index) => index)))
        .run();
    }
    await env.DB.prepare('UPDATE jobs SET created_at = ? WHERE id = ?')
      .bind(Date.now() - 61 * DAY, jobId)
      .run();
    const runs: { sql: string; changes: number }[] = [];
    const report = await deleteExpired(
      createDb(recordingD1(env.DB, runs)),
      cutoffsAt(Date.now()),
      Date.now(),
    );
    expect(report.jobs).toBeGreaterThanOrEqual(1);
    for (const table of ['job_rows', 'job_addresses']) {
      expect(await countOf(`SELECT COUNT(*) AS n FROM ${table} WHERE job_id = ?`, jobId)).toBe(0);
      const deletes = runs.filter((run) => run.sql.startsWith(`DELETE FROM ${table} `));
      expect(deletes.reduce((sum, run) => sum + run.changes, 0)).toBeGreaterThan(2500);
      expect(deletes.length).toBeGreaterThanOrEqual(3);
    }
    expect(await countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ?', jobId)).toBe(0);
    // No statement of the run removed more than its share.
    expect(
      runs.filter((run) => run.sql.startsWith('DELETE')).every((run) => run.changes <= ROWS_PER_STATEMENT),
    ).toBe(true);
    const jobDeletes = runs.map((run) => run.sql.split(' ')[2]);
    expect(jobDeletes.lastIndexOf('jobs')).toBeGreaterThan(jobDeletes.lastIndexOf('job_rows'));
  });
});

describe('domain facts retention', () => {
  it('drops the facts of a domain nobody touched for a day, and keeps the others', async () => {
    const now = Date.now();
    const reply = JSON.stringify({ code: 250, enhanced: '2.1.5', text: 'OK' });
    for (const [domain, at] of [
      ['idle.facts.test', now - DAY - 1000],
      ['busy.facts.test', now - DAY + 60_000],
    ] as const) {
      await recordCatchAll(db(), { domain, reply, catchAll: true, expiresAt: at + 3600_000, now: at });
    }
    const report = await deleteExpired(db(), cutoffsAt(now), now);
    expect(report.domainFacts).toBeGreaterThanOrEqual(1);
    expect(await countOf("SELECT COUNT(*) AS n FROM domain_facts WHERE domain = 'idle.facts.test'")).toBe(0);
    expect(await countOf("SELECT COUNT(*) AS n FROM domain_facts WHERE domain = 'busy.facts.test'")).toBe(1);
  });
});

describe('recovery', () => {
  it('re-enqueues work of a D1 job whose lease ran out and fails a job past its deadline with a refund', async () => {
    // A job in its object sweeps its own stale work (objects/job-store.test.ts): this one is from before.
    const { jobId, accountId } = await liveJob({
      emails: ['a@nonexistent.test', 'b@nonexistent.test'],
      now: Date.now(),
      store: 'd1',
    });
    const config = configOf(env);
    // Lease expired: the addresses were handed out long ago and never finished.
    await env.DB.prepare("UPDATE job_addresses SET enqueued_at = 0, state = 'queued' WHERE job_id = ?")
      .bind(jobId)
      .run();
    // A job from before deadlines (none set): only the hard limit ends it.
    await env.DB.prepare(
      "UPDATE jobs SET status = 'processing', finalized = 0, processed_emails = 0, deadline_at = NULL WHERE id = ?",
    )
      .bind(jobId)
      .run();
    const sent: unknown[] = [];
    const queue = {
      sendBatch: async (batch: unknown[]) => void sent.push(...batch),
    } as unknown as Queue<never>;
    const background: Promise<unknown>[] = [];
    const first = await recoverStuckJobs(
      settleDepsOf({ db: db(), queue, config, inBackground: (task) => background.push(task) }),
      Date.now(),
    );
    expect(first.requeued).toBe(2);
    expect(sent).toHaveLength(1);
    expect(await countOf('SELECT MIN(attempts) AS n FROM job_addresses WHERE job_id = ?', jobId)).toBe(1);

    // Past the deadline: failed with a reason, every unverified address refunded, once.
    const later = Date.now() + (config.BATCH_MAX_HOURS + 1) * 3600_000;
    const second = await recoverStuckJobs(
      settleDepsOf({ db: db(), queue, config, inBackground: (task) => background.push(task) }),
      later,
    );
    await Promise.all(background);
    expect(second.failedJobs).toBe(1);
    const job = await jobViewOf(jobId);
    expect(job).toMatchObject({ status: 'failed', creditsCharged: 2, creditsRefunded: 2 });
    expect(String(job.failureReason)).toMatch(/did not finish/);
    expect(
      (await recoverStuckJobs(settleDepsOf({ db: db(), queue, config, inBackground: () => {} }), later))
        .failedJobs,
    ).toBe(0);
    expect(await balanceOf(accountId)).toBe(10);
  });

  it('fails and refunds in full a job whose rows never reached its lists, past a minute', async () => {
    const now = Date.now();
    const jobs = [
      await liveJob({ emails: ['a@x.test', 'b@x.test'], now }),
      await liveJob({ emails: ['c@x.test'], now }),
    ];
    // The upload stopped between the charge and the rows: rows_stored_at was never set.
    for (const { jobId } of jobs)
      await env.DB.prepare('UPDATE jobs SET rows_stored_at = NULL WHERE id = ?').bind(jobId).run();
    const [lost, young] = jobs as [(typeof jobs)[0], (typeof jobs)[0]];
    await env.DB.prepare('UPDATE jobs SET created_at = ? WHERE id = ?')
      .bind(now - ROWS_STORE_GRACE_MS - 1, lost.jobId)
      .run();
    const deps = () =>
      settleDepsOf({ db: db(), queue: silentQueue, config: configOf(env), inBackground: () => {} });
    expect((await recoverStuckJobs(deps(), now)).failedJobs).toBe(1);
    const job = await jobViewOf(lost.jobId);
    expect(job).toMatchObject({ status: 'failed', creditsCharged: 2, creditsRefunded: 2 });
    expect(String(job.failureReason)).toMatch(/rows could not be stored/);
    expect(await balanceOf(lost.accountId)).toBe(10);
    expect(await jobViewOf(young.jobId)).toMatchObject({ status: 'processing', creditsRefunded: 0 });
    expect((await recoverStuckJobs(deps(), now)).failedJobs).toBe(0);
  });

  it('finishes a job whose deadline passed without its deadline message: unprobed addresses refunded', async () => {
    const caller = await newCaller({ credits: 10 });
    const response = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['alice@accept.test', 'bob@accept.test'], maxWaitSeconds: 30 },
    });
    const { jobId } = await response.json<{ jobId: string }>();
    const config = configOf(env);
    // Never probed (no prober in this test): still queued when the deadline passes.
    await listsRows(
      "UPDATE job_addresses SET state = 'queued', result_json = NULL, sub_status = NULL WHERE job_id = ?",
      jobId,
    );
    await env.DB.prepare(
      "UPDATE jobs SET status = 'processing', finalized = 0, processed_emails = 0, credits_refunded = 0 WHERE id = ?",
    )
      .bind(jobId)
      .run();
    const queue = { sendBatch: async () => {} } as unknown as Queue<never>;
    const background: Promise<unknown>[] = [];
    const report = await recoverStuckJobs(
      settleDepsOf({ db: db(), queue, config, inBackground: (task) => background.push(task) }),
      Date.now() + 120_000,
    );
    await Promise.all(background);
    expect(report.finishedAtDeadline).toBeGreaterThanOrEqual(1);
    const status = await (await call(`/api/v1/bulk/status/${jobId}`, { key: caller.apiKey })).json<{
      job: Record<string, unknown>;
    }>();
    expect(status.job).toMatchObject({ status: 'completed', unknownCount: 2, creditsRefunded: 2 });
    const results = await (await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey })).json<{
      results: { subStatus: string }[];
    }>();
    expect(results.results.map((result) => result.subStatus)).toEqual([
      'smtp_unavailable',
      'smtp_unavailable',
    ]);
    expect(await countOf('SELECT credit_balance AS n FROM accounts WHERE id = ?', caller.accountId)).toBe(10);
  });
});
