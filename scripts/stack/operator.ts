// Operator actions on the database (accounts, credits, API keys, prober tokens), as SQL that
// works on the local D1 and, through wrangler with `remote`, on a deployed one. Every
// write is the statement the edge's storage module writes it with, inlined.
import { hashSecret, issueSecret, secretKindOf } from '@rcpt/shared/secret-tokens';
import { issueProberToken } from '../../edge/src/services/fleet/prober-token-secret.ts';
import { accountSettingsUpdate, liveKeyHashesSelect } from '../../edge/src/storage/account-settings.ts';
import {
  accountDirectoryEntries,
  accountCreation as accountStatements,
  apiKeyInsert,
  apiKeyRegistration as apiKeyUpsert,
  operatorTokenInsert,
  proberTokenInsert,
} from '../../edge/src/storage/inserts.ts';
import { credit, type LedgerPair, type SqlStatement } from '../../edge/src/storage/ledger.ts';
import { type D1Target, executeSql, executeSqlAsync, inlineStatement, sqlLiteral as q } from './d1.ts';

/** Statements as one script (wrangler runs a command's statements in one transaction). */
function script(statements: readonly SqlStatement[]): string {
  return statements.map((statement) => `${inlineStatement(statement)};`).join('\n');
}

export interface IssuedCredential {
  id: string;
  secret: string; // shown once, never stored
  prefix: string;
}

/** The script that creates an account with its sign-up grant (one transaction when run alone). */
export function accountCreation(input: { id?: string; email?: string | null; credits: number }): {
  id: string;
  sql: string;
} {
  const id = input.id ?? crypto.randomUUID();
  // An operator's account needs no email confirmation, nor a password: it signs in with keys.
  // It lives in shard 0, the directory's database (docs/architecture.md, "Sharding what still grows").
  const account = {
    id,
    email: input.email ?? null,
    passwordHash: null,
    initialCredits: input.credits,
    now: Date.now(),
  };
  const statements = [...accountDirectoryEntries(account, 0), ...accountStatements(account)];
  return { id, sql: script(statements) };
}

export function createAccount(
  target: D1Target,
  input: { id?: string; email?: string | null; credits: number },
): string {
  const creation = accountCreation(input);
  executeSql(target, creation.sql);
  return creation.id;
}

/** A ledger movement as one script. */
function movementSql(movement: LedgerPair): string {
  return script([movement.entry, movement.balance]);
}

/**
 * Whether the shared fleet may probe for the account when none of its own probers can: the
 * statement PUT /api/v1/account/settings runs for `sharedFleetFallback`.
 */
export function setSharedFleetFallback(target: D1Target, accountId: string, allowed: boolean): boolean {
  const [rows] = executeSql(
    target,
    script([accountSettingsUpdate(accountId, { sharedFleetFallback: allowed })]),
  );
  return (rows?.length ?? 0) > 0;
}

/** The hashes of the account's live API keys (for the edge to read their records again). */
export function liveKeyHashesOf(target: D1Target, accountId: string): string[] {
  const [rows] = executeSql(target, script([liveKeyHashesSelect(accountId)]));
  return ((rows ?? []) as Record<string, unknown>[]).map((row) => String(row.keyHash));
}

export function accountExists(target: D1Target, accountId: string): boolean {
  const [rows] = executeSql(target, `SELECT id FROM accounts WHERE id = ${q(accountId)}`);
  return (rows?.length ?? 0) > 0;
}

/** Whether `value` is an API key's secret (`rk_live_…`, `rk_test_…`), not an account id. */
export function isApiKey(value: string): boolean {
  const kind = secretKindOf(value);
  return kind === 'liveKey' || kind === 'testKey';
}

/** The account of the live (not revoked) API key `secret`, found by its hash; null when none. */
export async function accountOfApiKey(target: D1Target, secret: string): Promise<string | null> {
  const [rows] = executeSql(
    target,
    `SELECT account_id FROM api_keys WHERE key_hash = ${q(await hashSecret(secret))} AND revoked_at IS NULL`,
  );
  return (rows?.[0] as { account_id?: string } | undefined)?.account_id ?? null;
}

/** Adds credits with a ledger row; returns the new balance. */
export function grantCredits(
  target: D1Target,
  input: { accountId: string; amount: number; reference?: string },
): number {
  if (!Number.isInteger(input.amount) || input.amount <= 0)
    throw new Error('amount must be a positive integer');
  const grant = credit({
    accountId: input.accountId,
    amount: input.amount,
    reason: 'grant',
    reference: input.reference ?? 'operator',
    now: Date.now(),
  });
  const results = executeSql(target, movementSql(grant));
  const balance = results.at(-1)?.[0]?.credit_balance;
  if (typeof balance !== 'number') throw new Error(`no account ${input.accountId}`);
  return balance;
}

/** The statement that stores a new API key, and the key (its secret shown once). */
export async function apiKeyCreation(input: {
  accountId: string;
  name: string;
  mode: 'live' | 'test';
}): Promise<{ credential: IssuedCredential; sql: string }> {
  const issued = await issueSecret(input.mode === 'live' ? 'liveKey' : 'testKey');
  const id = crypto.randomUUID();
  const key = { id, ...input, keyHash: issued.hash, prefix: issued.prefix, createdAt: Date.now() };
  return {
    credential: { id, secret: issued.secret, prefix: issued.prefix },
    sql: script(apiKeyInsert(key)),
  };
}

export async function createApiKey(
  target: D1Target,
  input: { accountId: string; name: string; mode: 'live' | 'test' },
): Promise<IssuedCredential> {
  const creation = await apiKeyCreation(input);
  await executeSqlAsync(target, creation.sql);
  return creation.credential;
}

/** The statement that registers a key whose secret the operator chose, if not already there. */
export function apiKeyRegistration(input: {
  accountId: string;
  name: string;
  mode: 'live' | 'test';
  hash: string;
  prefix: string;
}): string {
  const { hash, ...key } = input;
  return script(apiKeyUpsert({ id: crypto.randomUUID(), ...key, keyHash: hash, createdAt: Date.now() }));
}

export function isLiveCredential(
  target: D1Target,
  table: 'api_keys' | 'prober_tokens',
  hash: string,
): boolean {
  const column = table === 'api_keys' ? 'key_hash' : 'token_hash';
  const [rows] = executeSql(
    target,
    `SELECT id FROM ${table} WHERE ${column} = ${q(hash)} AND revoked_at IS NULL`,
  );
  return (rows?.length ?? 0) > 0;
}

/** The region of the live prober token with this hash, or null when there is none. */
export function proberTokenRegion(target: D1Target, hash: string): string | null {
  const [rows] = executeSql(
    target,
    `SELECT region FROM prober_tokens WHERE token_hash = ${q(hash)} AND revoked_at IS NULL`,
  );
  return (rows?.[0] as { region?: string } | undefined)?.region ?? null;
}

export function revokeCredential(
  target: D1Target,
  table: 'api_keys' | 'prober_tokens' | 'operator_tokens',
  idOrPrefix: string,
): number {
  return revokedRows(target, table, idOrPrefix, 'id').length;
}

/**
 * Revokes the API key with this id or prefix in D1; returns the revoked keys' hashes, which the
 * edge's `POST /internal/keys/forget` takes so that the key fails on its next request.
 */
export function revokeApiKeyRows(target: D1Target, idOrPrefix: string): string[] {
  return revokedRows(target, 'api_keys', idOrPrefix, 'key_hash').map((row) => String(row.key_hash));
}

function revokedRows(
  target: D1Target,
  table: 'api_keys' | 'prober_tokens' | 'operator_tokens',
  idOrPrefix: string,
  returning: string,
): Record<string, unknown>[] {
  const [rows] = executeSql(
    target,
    `UPDATE ${table} SET revoked_at = ${q(Date.now())} WHERE (id = ${q(idOrPrefix)} OR prefix = ${q(idOrPrefix)}) AND revoked_at IS NULL RETURNING ${returning}`,
  );
  return (rows ?? []) as Record<string, unknown>[];
}

/**
 * The statement that stores a new prober token, and the token (its secret shown once). With
 * `accountId`, a customer-run prober's: it serves that account only (docs/operations.md,
 * "Customer-run probers").
 */
export async function proberTokenCreation(input: {
  region: string;
  name: string;
  accountId?: string | null;
}): Promise<{ credential: IssuedCredential; sql: string }> {
  const { row, token } = await issueProberToken({ ...input, now: Date.now() });
  return { credential: token, sql: script([proberTokenInsert(row)]) };
}

export async function createProberToken(
  target: D1Target,
  input: { region: string; name: string; accountId?: string | null },
): Promise<IssuedCredential> {
  const creation = await proberTokenCreation(input);
  await executeSqlAsync(target, creation.sql);
  return creation.credential;
}

/** Stores a new operator token (docs/operations.md, "The operator's view"); its secret is shown once. */
export async function createOperatorToken(
  target: D1Target,
  input: { name: string },
): Promise<IssuedCredential> {
  const issued = await issueSecret('operatorToken');
  const id = crypto.randomUUID();
  await executeSqlAsync(
    target,
    script([
      operatorTokenInsert({
        id,
        ...input,
        tokenHash: issued.hash,
        prefix: issued.prefix,
        createdAt: Date.now(),
      }),
    ]),
  );
  return { id, secret: issued.secret, prefix: issued.prefix };
}

/** Many API keys in one statement (benchmarks spread load over keys to stay under 100/min each). */
export async function createApiKeys(
  target: D1Target,
  input: { accountId: string; count: number; mode: 'live' | 'test' },
): Promise<string[]> {
  const issued = await Promise.all(
    Array.from({ length: input.count }, () => issueSecret(input.mode === 'live' ? 'liveKey' : 'testKey')),
  );
  const now = Date.now();
  const inserts = issued.flatMap((key) =>
    apiKeyInsert({
      id: crypto.randomUUID(),
      accountId: input.accountId,
      name: 'bench key',
      mode: input.mode,
      keyHash: key.hash,
      prefix: key.prefix,
      createdAt: now,
    }),
  );
  await executeSqlAsync(target, script(inserts));
  return issued.map((key) => key.secret);
}
