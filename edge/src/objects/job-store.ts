// JobStore: one Durable Object per batch job (named by the job's id) that keeps the job's lists in
// its own SQLite storage (docs/architecture.md, "Where a job's lists live"). It runs the very
// statements of the D1 implementation (storage/job-lists/d1.ts) over the same three tables, on a
// small D1-shaped adapter of its storage: one copy of the SQL, so both stores answer alike (the
// contract test runs the same cases against both). The `job_id` column is kept, constant here,
// at a few bytes an address. A batch is one synchronous transaction (transactionSync), and the
// object runs one call at a time, so a write and its report are one step, as in D1.
// Not wired to uploads yet: `jobLists` still answers with D1's implementation.
import { DurableObject } from 'cloudflare:workers';
import { d1JobLists } from '../storage/job-lists/d1.ts';
import type { JobLists } from '../storage/job-lists/index.ts';
import { LISTS_SCHEMA } from '../storage/job-lists/object-schema.ts';

type ListsMethod = keyof JobLists;

export class JobStore extends DurableObject<Env> {
  readonly #db: D1Database;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    for (const statement of LISTS_SCHEMA) ctx.storage.sql.exec(statement);
    this.#db = sqlStorageAsD1(ctx.storage);
  }

  /** Runs one method of the job's lists here (the job's id names the object). */
  async lists<M extends ListsMethod>(
    jobId: string,
    method: M,
    args: Parameters<JobLists[M]>,
  ): Promise<Awaited<ReturnType<JobLists[M]>>> {
    const lists = d1JobLists(this.#db, jobId);
    const run = lists[method] as (...each: Parameters<JobLists[M]>) => ReturnType<JobLists[M]>;
    return await run(...args);
  }
}

/** The lists of job `jobId` in its JobStore object, through the same interface. */
export function objectJobLists(namespace: DurableObjectNamespace<JobStore>, jobId: string): JobLists {
  const stub = namespace.get(namespace.idFromName(jobId));
  return new Proxy({} as JobLists, {
    get:
      (_target, method: ListsMethod) =>
      (...args: unknown[]) =>
        stub.lists(jobId, method, args as never),
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
