// Test fixtures for edge tests: accounts and keys made through the real services, and a
// client that calls the Worker's fetch handler like an HTTP client would.
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { type OpenApiDocument, OpenApiResponseChecker } from '../../test/openapi/response-check.ts';
import { createApp } from '../src/app.ts';
import { configOf } from '../src/config.ts';
import { createApiKey, type KeyScope } from '../src/services/keys/api-keys.ts';
import { quotasOf } from '../src/services/money/quotas.ts';
import { insertAccount } from '../src/storage/accounts.ts';
import { createDb } from '../src/storage/db.ts';

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
}

let appWithVars: ReturnType<typeof createApp> | null = null;

/** The Worker's app run with `vars` over the test env: the deployment a test needs, per call. */
export async function fetchWithVars(request: Request, vars: Record<string, string>): Promise<Response> {
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
  const response = options.vars
    ? await fetchWithVars(request, options.vars)
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

export async function balanceOf(accountId: string): Promise<number> {
  const row = await env.DB.prepare('SELECT credit_balance FROM accounts WHERE id = ?')
    .bind(accountId)
    .first<{ credit_balance: number }>();
  return row?.credit_balance ?? Number.NaN;
}

export async function ledgerOf(
  accountId: string,
): Promise<{ delta: number; reason: string; reference: string }[]> {
  const { results } = await env.DB.prepare(
    'SELECT delta, reason, reference FROM credit_ledger WHERE account_id = ? ORDER BY id',
  )
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
