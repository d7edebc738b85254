// JobStore: one Durable Object per batch job (named by the job's id) that keeps the job's lists in
// its own SQLite storage (docs/architecture.md, "Where a job's lists live"). It runs the very
// statements of the D1 implementation (storage/job-lists/d1.ts) over the same three tables, on a
// small D1-shaped adapter of its storage: one copy of the SQL, so both stores answer alike (the
// contract test runs the same cases against both). The `job_id` column is kept, constant here,
// at a few bytes an address. A batch is one synchronous transaction (transactionSync), and the
// object runs one call at a time, so a write and its report are one step, as in D1.
//
// Its alarm is the job's clock, set by the upload's call (its time is the job's creation): while
// addresses are unanswered, at each lease (BATCH_LEASE_SECONDS) it hands those whose lease ran out
// to its sink to enqueue again and re-reports its counters (a report D1 did not apply heals);
// at FREE_ROWS_RETENTION_DAYS it drops its free rows; a day past RETENTION_DAYS, once the cron
// deleted the job's row, it deletes everything (deleteAll).
import { DurableObject } from 'cloudflare:workers';
import { configOf } from '../config.ts';
import { errorFields, log } from '../logger.ts';
import { type MeterVars, meter, meterFrom } from '../meter.ts';
import { d1JobLists } from '../storage/job-lists/d1.ts';
import { LISTS_SCHEMA } from '../storage/job-lists/object-schema.ts';
import type { JobLists, ListsReport, StaleListAddress } from '../storage/job-lists/types.ts';

type ListsMethod = keyof JobLists;

const DAY_MS = 86_400_000;
/** Most addresses one tick hands back to the queue; the next tick takes the rest. */
const STALE_PER_TICK = 5000;
/** Most free rows one statement drops. */
const FREE_ROWS_PER_STATEMENT = 1000;

/** What the object keeps of its job's times (learnt from the upload's call). */
interface JobClock {
  jobId: string;
  createdAt: number;
  freeRowsDropped: boolean;
  /** The sequence number of the last report handed to the sink after every address was answered. */
  finalSeq: number | null;
  /** The shard whose database holds the job (storage/shards.ts); absent: shard 0. */
  shard?: number;
}

/** The job a clock's work is about, for its sink. */
export interface ClockedJob {
  id: string;
  shard: number;
}

/** Where the clock's work goes: the batch lifecycle, wired in by the Worker's entry (index.ts). */
export interface JobStoreSink {
  /** Enqueues again the job's addresses whose lease ran out (already counted as requeued). */
  requeue(job: ClockedJob, addresses: readonly StaleListAddress[]): Promise<void>;
  /**
   * Applies a report of the lists to D1's job row (one it applied already changes nothing);
   * answers whether the job still runs (a failed or deleted job's unanswered addresses wait for
   * nothing).
   */
  report(job: ClockedJob, report: ListsReport, lists: JobLists, now: number): Promise<boolean>;
}

export class JobStore extends DurableObject<Env> {
  readonly #db: D1Database;
  readonly #sink: JobStoreSink | null;

  constructor(ctx: DurableObjectState, env: Env, sink: JobStoreSink | null = null) {
    super(ctx, env);
    for (const statement of LISTS_SCHEMA) ctx.storage.sql.exec(statement);
    this.#db = sqlStorageAsD1(ctx.storage);
    this.#sink = sink;
  }

  /**
   * Runs one method of the job's lists here (the job's id names the object); `shard`: the shard
   * holding the job, which the upload's call tells the clock.
   */
  async lists<M extends ListsMethod>(
    jobId: string,
    method: M,
    args: Parameters<JobLists[M]>,
    shard = 0,
  ): Promise<Awaited<ReturnType<JobLists[M]>>> {
    meterFrom(this.env as MeterVars);
    meter({ doRequests: 1 });
    const lists = d1JobLists(this.#db, jobId);
    const run = lists[method] as (...each: Parameters<JobLists[M]>) => ReturnType<JobLists[M]>;
    const answer = await run(...args);
    if (method === 'storeUpload') {
      const [upload] = args as Parameters<JobLists['storeUpload']>;
      await this.#startClock(jobId, upload.now, shard);
    }
    return answer;
  }

  async #startClock(jobId: string, createdAt: number, shard: number): Promise<void> {
    if (await this.ctx.storage.get<JobClock>('clock')) return;
    const clock: JobClock = { jobId, createdAt, freeRowsDropped: false, finalSeq: null, shard };
    await this.ctx.storage.put('clock', clock);
    await this.ctx.storage.setAlarm(createdAt + this.#leaseMs());
  }

  #leaseMs(): number {
    return configOf(this.env).BATCH_LEASE_SECONDS * 1000;
  }

  override async alarm(): Promise<void> {
    meterFrom(this.env as MeterVars);
    await this.tick(Date.now());
  }

  /** One step of the job's clock at `now` (the alarm's; a test gives its own), setting the next. */
  async tick(now: number): Promise<void> {
    const clock = await this.ctx.storage.get<JobClock>('clock');
    if (!clock) return;
    const config = configOf(this.env);
    const deleteAt = clock.createdAt + (config.RETENTION_DAYS + 1) * DAY_MS;
    if (now >= deleteAt) {
      await this.ctx.storage.deleteAlarm();
      await this.ctx.storage.deleteAll();
      return;
    }
    const lists = d1JobLists(this.#db, clock.jobId);
    const report = await lists.report();
    const job: ClockedJob = { id: clock.jobId, shard: clock.shard ?? 0 };
    const running = report.pending > 0 && (await this.#tickRunning(job, lists, report, now));
    if (report.pending === 0 && clock.finalSeq !== report.seq) {
      // Every address is answered: the report that completes the job, once more (D1 applies it
      // at most once; this heals a completion lost between the two steps).
      await this.#sink?.report(job, report, lists, now);
      clock.finalSeq = report.seq;
    }
    const freeRowsAt = clock.createdAt + config.FREE_ROWS_RETENTION_DAYS * DAY_MS;
    if (!clock.freeRowsDropped && now >= freeRowsAt) {
      while ((await lists.dropFreeRows(FREE_ROWS_PER_STATEMENT)) === FREE_ROWS_PER_STATEMENT);
      clock.freeRowsDropped = true;
    }
    await this.ctx.storage.put('clock', clock);
    const next = running ? now + this.#leaseMs() : clock.freeRowsDropped ? deleteAt : freeRowsAt;
    await this.ctx.storage.setAlarm(next);
  }

  /**
   * The job's counters reported again, and — while D1 says it runs — the stale-work sweep of this
   * job. Returns whether the job still runs (a tick that failed counts as running: the next one
   * tries again).
   */
  async #tickRunning(job: ClockedJob, lists: JobLists, report: ListsReport, now: number): Promise<boolean> {
    if (!this.#sink) return false;
    try {
      if (!(await this.#sink.report(job, report, lists, now))) return false;
      const stale = await lists.stale(now - this.#leaseMs(), STALE_PER_TICK);
      if (stale.length > 0) {
        await lists.markRequeued(
          stale.map((address) => address.idx),
          now,
        );
        await this.#sink.requeue(job, stale);
      }
    } catch (error) {
      // The addresses stay queued, their lease runs out once more.
      log.error('a job store tick failed', { jobId: job.id, ...errorFields(error) });
    }
    return true;
  }
}

/** The lists of job `jobId` of shard `shard` in its JobStore object, through the same interface. */
export function objectJobLists(
  namespace: DurableObjectNamespace<JobStore>,
  jobId: string,
  shard = 0,
): JobLists {
  const stub = namespace.get(namespace.idFromName(jobId));
  return new Proxy({} as JobLists, {
    get: (_target, method: ListsMethod | 'then') =>
      // Not a promise: awaiting the lists themselves must not call the object.
      method === 'then' ? undefined : (...args: unknown[]) => stub.lists(jobId, method, args as never, shard),
  });
}

interface Ran {
  results: Record<string, unknown>[];
  meta: { changes: number };
}

/** The calls of D1's binding that d1.ts makes, on the object's SQLite storage. */
function sqlStorageAsD1(storage: DurableObjectStorage): D1Database {
  const prepare = (query: string, params: unknown[] = []) => {
    const runSync = (): Ran => {
      const cursor = storage.sql.exec(query, ...(params as SqlStorageValue[]));
      const results = cursor.toArray() as Record<string, unknown>[];
      // rowsWritten also counts index entries: the rows a statement changed, as D1's meta says.
      const changes = storage.sql.exec<{ n: number }>('SELECT changes() AS n').one().n;
      return { results, meta: { changes } };
    };
    return {
      runSync,
      bind: (...values: unknown[]) => prepare(query, values),
      all: async () => runSync(),
      run: async () => runSync(),
      first: async (column?: string) => {
        const row = runSync().results[0];
        if (row === undefined) return null;
        return column === undefined ? row : row[column];
      },
    };
  };
  return {
    prepare,
    batch: async (statements: { runSync: () => Ran }[]) =>
      storage.transactionSync(() => statements.map((statement) => statement.runSync())),
  } as unknown as D1Database;
}
