// Test fixtures for edge tests: accounts and keys made through the real services, and a
// client that calls the Worker's fetch handler like an HTTP client would.
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { ApiError } from '@rcpt/shared/errors';
import { type OpenApiDocument, OpenApiResponseChecker } from '../../test/openapi/response-check.ts';
import { createApp } from '../src/app.ts';
import { configOf } from '../src/config.ts';
import { normaliseAccountEmail } from '../src/services/accounts/account-email.ts';
import { rowsFromJson } from '../src/services/batch/input.ts';
import { createBatchJob } from '../src/services/batch/jobs.ts';
import type { BatchMessage } from '../src/services/batch/queue.ts';
import { createApiKey, type KeyScope } from '../src/services/keys/api-keys.ts';
import { settleDesk } from '../src/services/money/account-desk.ts';
import { type Quotas, quotasOf } from '../src/services/money/quotas.ts';
import { insertAccount } from '../src/storage/accounts.ts';
import { createDb, type Db } from '../src/storage/db.ts';
import { recordMailRoute } from '../src/storage/domain-facts.ts';
import type { JobStoreKind } from '../src/storage/job-lists/index.ts';
import { shardBindings, shardsOf } from '../src/storage/shards.ts';

export interface TestCaller {
  accountId: string;
  apiKey: string;
  keyId: string;
}

export const db = () => createDb(env.DB);
/** The deployment's quotas, as the routes pass them to services. */
export const quotas = () => quotasOf(configOf(env));

export async function newCaller(
  options: {
    credits?: number;
    mode?: 'live' | 'test';
    scopes?: readonly KeyScope[];
    allowedCidrs?: readonly string[];
  } = {},
): Promise<TestCaller> {
  const accountId = crypto.randomUUID();
  const now = Date.now();
  await insertAccount(db(), {
    id: accountId,
    email: null,
    passwordHash: null,
    initialCredits: options.credits ?? 100,
    now,
  });
  const key = await createApiKey(db(), {
    accountId,
    name: 'test key',
    mode: options.mode ?? 'live',
    maxActiveKeys: configOf(env).QUOTA_API_KEYS,
    now,
    scopes: options.scopes,
    allowedCidrs: options.allowedCidrs,
  });
  return { accountId, apiKey: key.secret, keyId: key.id };
}

export interface CallOptions {
  method?: string;
  key?: string | null;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  /** Worker vars for this call only, over wrangler.toml's (e.g. smaller quotas). */
  vars?: Record<string, string>;
  /** Bindings for this call only, over the test env's (e.g. a D1 whose writes fail: failing-d1.ts). */
  bindings?: Partial<Env>;
  /** Returns only once the work the request left running (its `waitUntil`s) has ended. */
  settled?: boolean;
}

let appWithVars: ReturnType<typeof createApp> | null = null;

/** The Worker's app run with `vars` (or bindings) over the test env: the deployment a test needs, per call. */
export async function fetchWithVars(request: Request, vars: Record<string, unknown>): Promise<Response> {
  appWithVars ??= createApp();
  const ctx = createExecutionContext();
  const response = await appWithVars.fetch(request, { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

export async function call(path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.key) headers.set('X-API-Key', options.key);
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  }
  const method = options.method ?? (body ? 'POST' : 'GET');
  const request = new Request(`http://edge.test${path}`, { method, headers, body });
  const response =
    options.vars || options.bindings || options.settled
      ? await fetchWithVars(request, { ...options.vars, ...options.bindings })
      : await exports.default.fetch(request);
  await expectDocumented(method, path, response);
  return response;
}

let checker: OpenApiResponseChecker | null = null;

/** Every response a test sees must match the served OpenAPI document. */
async function expectDocumented(method: string, path: string, response: Response): Promise<void> {
  if (!checker) {
    const document = await (await exports.default.fetch('http://edge.test/openapi.json')).json();
    checker = new OpenApiResponseChecker(document as OpenApiDocument);
  }
  const contentType = response.headers.get('content-type');
  const body = contentType?.startsWith('application/json') ? await response.clone().json() : null;
  const problems = checker.problems(
    method,
    new URL(path, 'http://edge.test').pathname,
    response.status,
    contentType,
    body,
  );
  if (problems.length > 0)
    throw new Error(`response does not match the OpenAPI document:\n${problems.join('\n')}`);
}

/** The `n` a query selects (`SELECT COUNT(*) AS n …`); NaN when it selects no row. */
/**
 * `countOf` over the account's rows once its desk wrote what it answered (history rows, storage
 * counted): `sql` takes the account id as its one parameter.
 */
export async function countOfAccount(sql: string, accountId: string): Promise<number> {
  await settledDesk(accountId);
  return countIn(await accountD1(accountId), sql, accountId);
}

export function countOf(sql: string, ...params: unknown[]): Promise<number> {
  return countIn(env.DB, sql, ...params);
}

async function countIn(database: D1Database, sql: string, ...params: unknown[]): Promise<number> {
  return (
    (
      await database
        .prepare(sql)
        .bind(...params)
        .first<{ n: number }>()
    )?.n ?? Number.NaN
  );
}

/**
 * The shard holding the account's rows (docs/architecture.md, "Sharding what still grows"): a
 * dashboard sign-up may be placed in any. Read from the directory each time, so an account asked
 * for before it is placed is not remembered in the wrong shard, as the isolate's cache would.
 */
async function shardOfTestAccount(accountId: string): Promise<number> {
  const row = await env.DB.prepare('SELECT shard FROM account_shards WHERE account_id = ?1')
    .bind(accountId)
    .first<{ shard: number }>();
  return row?.shard ?? 0;
}

/** The D1 binding of the account's shard, for a test's own SQL. */
export async function accountD1(accountId: string): Promise<D1Database> {
  const shard = await shardOfTestAccount(accountId);
  const binding = shardBindings(env)[shard];
  if (!binding) throw new Error(`account ${accountId} is in shard ${shard}, which is not bound`);
  return binding;
}

/** `accountD1` of the account `email` signed up; the directory's database when none did. */
export async function accountD1OfEmail(email: string): Promise<D1Database> {
  const accountId = await accountIdOfEmail(email);
  return accountId === null ? env.DB : accountD1(accountId);
}

/** The account's shard's database as the services take it (its directory known). */
export async function dbOfAccount(accountId: string): Promise<Db> {
  return shardsOf(env).db(await shardOfTestAccount(accountId));
}

/** The account an email signed up (the directory's lookup), or null. */
export async function accountIdOfEmail(email: string): Promise<string | null> {
  const row = await env.DB.prepare(
    "SELECT account_id FROM account_lookups WHERE kind = 'email' AND value = ?1",
  )
    .bind(normaliseAccountEmail(email))
    .first<{ account_id: string }>();
  return row?.account_id ?? null;
}

/**
 * Runs `sql` on a job's lists wherever they live — D1's tables (of every shard) and the job's
 * JobStore object (docs/architecture.md, "Where a job's lists live") — and returns the rows of
 * all: a job's lists are in one of them, the others answer nothing. `sql` takes the job id as ?1.
 */
export async function listsRows<Row = Record<string, unknown>>(
  sql: string,
  jobId: string,
  ...params: unknown[]
): Promise<Row[]> {
  const inD1: Row[] = [];
  for (const shard of shardBindings(env))
    inD1.push(
      ...(
        await shard
          .prepare(sql)
          .bind(jobId, ...params)
          .all<Row>()
      ).results,
    );
  const stub = env.JOB_STORE.get(env.JOB_STORE.idFromName(jobId));
  const inObject = await runInDurableObject(stub, (_instance, state) => {
    // An object whose storage was deleted (deleteAll) has no tables left until it runs again.
    const tables = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'job_rows'").toArray();
    return tables.length === 0
      ? []
      : state.storage.sql.exec(sql, jobId, ...(params as SqlStorageValue[])).toArray();
  });
  return [...inD1, ...(inObject as Row[])];
}

/** `countOf` over a job's lists wherever they live (listsRows): the sum of both stores' `n`. */
export async function listsCountOf(sql: string, jobId: string, ...params: unknown[]): Promise<number> {
  const rows = await listsRows<{ n: number | null }>(sql, jobId, ...params);
  return rows.reduce((sum, row) => sum + (row.n ?? 0), 0);
}

/** The rows the account's jobs keep in their lists, wherever they live. */
export async function storedRowsOf(accountId: string): Promise<number> {
  const { results } = await (await accountD1(accountId))
    .prepare('SELECT id FROM jobs WHERE account_id = ?')
    .bind(accountId)
    .all<{ id: string }>();
  let rows = 0;
  for (const { id } of results)
    rows += await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', id);
  return rows;
}

/** A queue that drops the work: the job stays processing (in flight) for as long as the test needs. */
export const silentQueue = {
  send: async () => {},
  sendBatch: async () => {},
} as unknown as Queue<BatchMessage>;

/**
 * A job created as the upload route creates it, by `caller` (keyId null: the dashboard) with a
 * key of `mode`, the deployment's quotas over `options.quotas`, the clock at `options.now`, and
 * its lists in `options.store` (new jobs' store unless said).
 */
export async function createJobAs(
  caller: { accountId: string; keyId: string | null },
  mode: 'live' | 'test',
  emails: string[],
  options: { quotas?: Partial<Quotas>; now?: number; store?: JobStoreKind } = {},
) {
  return createBatchJob({
    db: await dbOfAccount(caller.accountId),
    queue: silentQueue,
    caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode, creditBalance: 0 },
    upload: rowsFromJson(emails),
    source: 'json',
    name: null,
    webhookUrl: null,
    maxWaitSeconds: null,
    quotas: { ...quotas(), ...options.quotas },
    now: options.now ?? Date.now(),
    ...(options.store ? { store: options.store } : {}),
  });
}

/** The ApiError `promise` rejects with. */
export async function refusalOf(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

/**
 * What the account's desk answered, written to D1 first, as every reader of the balance or the
 * history does (docs/money.md, "Where the balance lives").
 */
export async function settledDesk(accountId: string): Promise<void> {
  await settleDesk(env.ACCOUNT_DESK, accountId);
}

export async function balanceOf(accountId: string): Promise<number> {
  await settledDesk(accountId);
  const row = await (await accountD1(accountId))
    .prepare('SELECT credit_balance FROM accounts WHERE id = ?')
    .bind(accountId)
    .first<{ credit_balance: number }>();
  return row?.credit_balance ?? Number.NaN;
}

export async function ledgerOf(
  accountId: string,
): Promise<{ delta: number; reason: string; reference: string }[]> {
  await settledDesk(accountId);
  const { results } = await (await accountD1(accountId))
    .prepare('SELECT delta, reason, reference FROM credit_ledger WHERE account_id = ? ORDER BY id')
    .bind(accountId)
    .all<{ delta: number; reason: string; reference: string }>();
  return results;
}

export async function revokeCredentialForTest(
  table: 'api_keys' | 'prober_tokens' | 'operator_tokens',
  id: string,
): Promise<void> {
  await env.DB.prepare(`UPDATE ${table} SET revoked_at = ? WHERE id = ?`).bind(Date.now(), id).run();
}

/**
 * A mail route for `domain` in the shared domain facts (the directory's), an MX at 127.0.0.2 kept
 * for an hour, so a verification needs no DNS for it.
 */
export async function recordAcceptRoute(domain: string): Promise<void> {
  const now = Date.now();
  await recordMailRoute(db(), {
    domain,
    route: JSON.stringify({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: `mx.${domain}`, preference: 10, ips: ['127.0.0.2'] }],
    }),
    routeKey: `mx|MX|10 mx.${domain}`,
    provider: null,
    expiresAt: now + 3600_000,
    now,
  });
}
