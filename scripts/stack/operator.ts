// Operator actions on the database (accounts, credits, API keys, prober tokens), as SQL that
// works on the local D1 and, through wrangler with `remote`, on a deployed one. Every
// write is the statement the edge's storage module writes it with, inlined.
//
// A target names the deployment; each account's rows are read and written in its shard's
// database, which the directory's `account_shards` names, and what finds an account from outside
// (its keys' lookups) goes to the directory first, as the edge does (docs/architecture.md,
// "Sharding what still grows"). Prober and operator tokens live in the directory.
import { hashSecret, issueSecret, secretKindOf } from '@rcpt/shared/secret-tokens';
import { normaliseAccountEmail } from '../../edge/src/services/accounts/account-email.ts';
import { issueProberToken } from '../../edge/src/services/fleet/prober-token-secret.ts';
import { accountSettingsUpdate, liveKeyHashesSelect } from '../../edge/src/storage/account-settings.ts';
import {
  accountDirectoryEntries,
  accountCreation as accountStatements,
  apiKeyInsert,
  apiKeyRegistration as apiKeyUpsert,
  type KeyStatements,
  type NewAccount,
  operatorTokenInsert,
  proberTokenInsert,
} from '../../edge/src/storage/inserts.ts';
import { credit, type SqlStatement } from '../../edge/src/storage/ledger.ts';
import { ACCOUNTS_BY_SHARD, shardWithFewestAccounts } from '../../edge/src/storage/placement.ts';
import {
  type D1Target,
  declaredShardCount,
  executeSql,
  executeSqlAsync,
  inlineStatement,
  sqlLiteral as q,
  shardTarget,
} from './d1.ts';

/** Statements as one script (wrangler runs a command's statements in one transaction). */
function script(statements: readonly SqlStatement[]): string {
  return statements.map((statement) => `${inlineStatement(statement)};`).join('\n');
}

export interface IssuedCredential {
  id: string;
  secret: string; // shown once, never stored
  prefix: string;
}

/** What the operator asked for cannot be done as asked (an unknown account, a taken email); nothing was written. */
export class RefusedError extends Error {}

/** An account the directory does not place in a shard that holds it. */
export class UnknownAccountError extends RefusedError {
  constructor(accountId: string) {
    super(`no account ${accountId}`);
  }
}

/**
 * The shard holding the account: the one `account_shards` names in the directory, 0 when it names
 * none (where every account lived before the directory), or null when that shard has no such account.
 */
export function accountShard(target: D1Target, accountId: string): number | null {
  const [placed] = executeSql(
    shardTarget(target, 0),
    `SELECT shard FROM account_shards WHERE account_id = ${q(accountId)}`,
  );
  const shard = Number(placed?.[0]?.shard ?? 0);
  const [found] = executeSql(
    shardTarget(target, shard),
    `SELECT id FROM accounts WHERE id = ${q(accountId)}`,
  );
  return (found?.length ?? 0) > 0 ? shard : null;
}

/** The account's shard, as accountShard finds it; UnknownAccountError when there is none. */
function shardHolding(target: D1Target, accountId: string): number {
  const shard = accountShard(target, accountId);
  if (shard === null) throw new UnknownAccountError(accountId);
  return shard;
}

export function accountExists(target: D1Target, accountId: string): boolean {
  return accountShard(target, accountId) !== null;
}

/**
 * Writes the directory's statements, then the shard's: what finds a row is in the directory
 * before the row is (storage/shards.ts), and for shard 0, the directory's own database, both are
 * one transaction. The rows of the shard's statements.
 */
async function writePlaced(
  target: D1Target,
  shard: number,
  directory: readonly SqlStatement[],
  own: readonly SqlStatement[],
): Promise<Record<string, unknown>[][]> {
  if (shard === 0)
    return (await executeSqlAsync(shardTarget(target, 0), script([...directory, ...own]))).slice(
      directory.length,
    );
  if (directory.length > 0) await executeSqlAsync(shardTarget(target, 0), script(directory));
  return executeSqlAsync(shardTarget(target, shard), script(own));
}

/** The shard a new account goes to: the edge's rule (storage/placement.ts) over wrangler.toml's shards. */
export function shardForNewAccount(target: D1Target): number {
  const [rows] = executeSql(shardTarget(target, 0), ACCOUNTS_BY_SHARD);
  return shardWithFewestAccounts((rows ?? []) as { shard: number; accounts: number }[], declaredShardCount());
}

function newAccount(input: { id?: string; email?: string | null; credits: number }): NewAccount {
  // An operator's account needs no email confirmation, nor a password: it signs in with keys.
  // Its email is spelt as sign-up and sign-in spell it, so that its lookup finds it.
  return {
    id: input.id ?? crypto.randomUUID(),
    email: input.email ? normaliseAccountEmail(input.email) : null,
    passwordHash: null,
    initialCredits: input.credits,
    now: Date.now(),
  };
}

/**
 * The script that creates an account in shard 0, the directory's database, with its sign-up grant
 * (one transaction when run alone).
 */
export function accountCreation(input: { id?: string; email?: string | null; credits: number }): {
  id: string;
  sql: string;
} {
  const account = newAccount(input);
  return {
    id: account.id,
    sql: script([...accountDirectoryEntries(account, 0), ...accountStatements(account)]),
  };
}

/** Creates an account with its sign-up grant in `shard` (default 0); its id. */
export async function createAccount(
  target: D1Target,
  input: { id?: string; email?: string | null; credits: number; shard?: number },
): Promise<string> {
  const account = newAccount(input);
  const shard = input.shard ?? 0;
  // The email's lookup is written first and fails when another account holds the email
  // (inserts.ts `accountDirectoryEntries`); asked here first, the operator is told why.
  if (account.email !== null) {
    const [holder] = executeSql(
      shardTarget(target, 0),
      `SELECT account_id FROM account_lookups WHERE kind = 'email' AND value = ${q(account.email)}`,
    );
    if ((holder?.length ?? 0) > 0)
      throw new RefusedError(`${account.email} is the email of account ${String(holder?.[0]?.account_id)}`);
  }
  await writePlaced(target, shard, accountDirectoryEntries(account, shard), accountStatements(account));
  return account.id;
}

/**
 * Whether the shared fleet may probe for the account when none of its own probers can: the
 * statement PUT /api/v1/account/settings runs for `sharedFleetFallback`. Returns the hashes of
 * the account's live API keys, whose records the edge keeps with the setting.
 */
export function setSharedFleetFallback(target: D1Target, accountId: string, allowed: boolean): string[] {
  const [, keys] = executeSql(
    shardTarget(target, shardHolding(target, accountId)),
    script([
      accountSettingsUpdate(accountId, { sharedFleetFallback: allowed }),
      liveKeyHashesSelect(accountId),
    ]),
  );
  return ((keys ?? []) as Record<string, unknown>[]).map((row) => String(row.keyHash));
}

/** Whether `value` is an API key's secret (`rk_live_…`, `rk_test_…`), not an account id. */
export function isApiKey(value: string): boolean {
  const kind = secretKindOf(value);
  return kind === 'liveKey' || kind === 'testKey';
}

/**
 * The account of the live (not revoked) API key `secret`: the directory's lookup of its hash names
 * the account, whose shard holds the key. Null when none.
 */
export async function accountOfApiKey(target: D1Target, secret: string): Promise<string | null> {
  const hash = await hashSecret(secret);
  const [lookup] = executeSql(
    shardTarget(target, 0),
    `SELECT account_id FROM account_lookups WHERE kind = 'key' AND value = ${q(hash)}`,
  );
  const accountId = (lookup?.[0] as { account_id?: string } | undefined)?.account_id;
  const shard = accountId === undefined ? null : accountShard(target, accountId);
  if (accountId === undefined || shard === null) return null;
  const [live] = executeSql(
    shardTarget(target, shard),
    `SELECT id FROM api_keys WHERE key_hash = ${q(hash)} AND account_id = ${q(accountId)} AND revoked_at IS NULL`,
  );
  return (live?.length ?? 0) > 0 ? accountId : null;
}

/** Adds credits with a ledger row, in the account's shard; returns the new balance. */
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
  const results = executeSql(
    shardTarget(target, shardHolding(target, input.accountId)),
    script([grant.entry, grant.balance]),
  );
  const balance = results.at(-1)?.[0]?.credit_balance;
  if (typeof balance !== 'number') throw new UnknownAccountError(input.accountId);
  return balance;
}

/** The statements that store a new API key, and the key (its secret shown once). */
async function newApiKey(input: {
  accountId: string;
  name: string;
  mode: 'live' | 'test';
}): Promise<{ credential: IssuedCredential; statements: KeyStatements }> {
  const issued = await issueSecret(input.mode === 'live' ? 'liveKey' : 'testKey');
  const id = crypto.randomUUID();
  const key = { id, ...input, keyHash: issued.hash, prefix: issued.prefix, createdAt: Date.now() };
  return { credential: { id, secret: issued.secret, prefix: issued.prefix }, statements: apiKeyInsert(key) };
}

/** The script that stores a new API key of an account of shard 0, and the key (its secret shown once). */
export async function apiKeyCreation(input: {
  accountId: string;
  name: string;
  mode: 'live' | 'test';
}): Promise<{ credential: IssuedCredential; sql: string }> {
  const { credential, statements } = await newApiKey(input);
  return { credential, sql: script([statements.lookup, statements.row]) };
}

/** Creates an API key of the account, in its shard, its lookup first in the directory. */
export async function createApiKey(
  target: D1Target,
  input: { accountId: string; name: string; mode: 'live' | 'test' },
): Promise<IssuedCredential> {
  const shard = shardHolding(target, input.accountId);
  const { credential, statements } = await newApiKey(input);
  await writePlaced(target, shard, [statements.lookup], [statements.row]);
  return credential;
}

/**
 * The script that registers a key whose secret the operator chose, if not already there, for an
 * account of shard 0.
 */
export function apiKeyRegistration(input: {
  accountId: string;
  name: string;
  mode: 'live' | 'test';
  hash: string;
  prefix: string;
}): string {
  const { hash, ...key } = input;
  const statements = apiKeyUpsert({ id: crypto.randomUUID(), ...key, keyHash: hash, createdAt: Date.now() });
  return script([statements.lookup, statements.row]);
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

/** Revokes the directory's prober or operator token with this id or prefix; how many were. */
export function revokeCredential(
  target: D1Target,
  table: 'prober_tokens' | 'operator_tokens',
  idOrPrefix: string,
): number {
  return revokedRows(shardTarget(target, 0), table, idOrPrefix, 'id').length;
}

/**
 * Revokes the API key with this id or prefix in D1, in whichever shard holds it; returns the
 * revoked keys' hashes, which the edge's `POST /internal/keys/forget` takes so that the key fails
 * on its next request. The key's lookup stays, as the edge's revocation leaves it: it finds a
 * revoked key.
 */
export function revokeApiKeyRows(target: D1Target, idOrPrefix: string): string[] {
  return Array.from({ length: declaredShardCount() }, (_, shard) =>
    revokedRows(shardTarget(target, shard), 'api_keys', idOrPrefix, 'key_hash'),
  ).flatMap((rows) => rows.map((row) => String(row.key_hash)));
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

/** Many API keys of one account in one script (benchmarks spread load over keys to stay under 100/min each). */
export async function createApiKeys(
  target: D1Target,
  input: { accountId: string; count: number; mode: 'live' | 'test' },
): Promise<string[]> {
  const shard = shardHolding(target, input.accountId);
  const keys = await Promise.all(
    Array.from({ length: input.count }, () =>
      newApiKey({ accountId: input.accountId, name: 'bench key', mode: input.mode }),
    ),
  );
  await writePlaced(
    target,
    shard,
    keys.map((key) => key.statements.lookup),
    keys.map((key) => key.statements.row),
  );
  return keys.map((key) => key.credential.secret);
}
