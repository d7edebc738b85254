// The statements that create accounts, API keys, prober and operator tokens, built here once
// for the storage modules that run them in D1 batches and for the operator's scripts
// (scripts/stack/operator.ts), which inline them for wrangler. Like ledger.ts, this file uses no
// Workers types, so Node scripts can import it.
import { claimSignupMailbox, credit, type SqlStatement } from './ledger.ts';
import type { accountLookups, apiKeys, operatorTokens, proberTokens } from './schema.ts';

export interface NewAccount {
  id: string;
  email: string | null;
  passwordHash: string | null;
  initialCredits: number;
  now: number;
}

/**
 * The statements that create a confirmed account (no confirmation to wait for: made by an
 * operator or a test) with an empty balance and grant its opening credits, in the account's
 * shard, as one transaction, after its `accountDirectoryEntries` (in the same batch when the
 * shard is the directory's). The operator's scripts run the same statements through wrangler.
 */
export function accountCreation(account: NewAccount): SqlStatement[] {
  const grant = credit({
    accountId: account.id,
    amount: account.initialCredits,
    reason: 'signup_grant',
    reference: account.id,
    now: account.now,
  });
  return [
    {
      sql: `INSERT INTO accounts (id, email, password_hash, credit_balance, created_at, email_confirmed_at)
            VALUES (?1, ?2, ?3, 0, ?4, ?4)`,
      params: [account.id, account.email, account.passwordHash, account.now],
    },
    grant.entry,
    grant.balance,
  ];
}

/**
 * The directory's rows of a new confirmed account in `shard` (docs/architecture.md, "Sharding
 * what still grows"), written before its own: its email's lookup, its shard and, with an
 * email and credits, its mailbox's claim as ledger.ts `claimSignupMailbox` says. The email's lookup
 * fails when another account, of any shard, holds the email: the batch then writes nothing.
 */
export function accountDirectoryEntries(account: NewAccount, shard: number): SqlStatement[] {
  return [
    ...(account.email ? [lookupInsert('email', account.email, account.id, account.now, 'fail')] : []),
    accountShardInsert(account.id, shard),
    ...claimSignupMailbox({
      accountId: account.id,
      email: account.email,
      amount: account.initialCredits,
      now: account.now,
    }),
  ];
}

/**
 * The directory's row that says which shard holds a new account (docs/architecture.md, "Sharding
 * what still grows"), written to the directory's database before the account's own rows.
 */
export function accountShardInsert(accountId: string, shard: number): SqlStatement {
  return {
    sql: 'INSERT INTO account_shards (account_id, shard) VALUES (?1, ?2)',
    params: [accountId, shard],
  };
}

/** What finds an account in the directory (schema.ts `accountLookups`). */
export type LookupKind = (typeof accountLookups.$inferInsert)['kind'];

/**
 * The directory's row that lets `value` of `kind` find its account, written before the row it
 * finds. When `value` already finds an account: nothing (its changes say whether it was
 * written), or with `onConflict` `fail` the statement fails, and its batch with it.
 */
export function lookupInsert(
  kind: LookupKind,
  value: string,
  accountId: string,
  createdAt: number | null = null,
  onConflict: 'ignore' | 'fail' = 'ignore',
): SqlStatement {
  const insert = 'INSERT INTO account_lookups (kind, value, account_id, created_at) VALUES (?1, ?2, ?3, ?4)';
  return {
    sql: onConflict === 'ignore' ? `${insert} ON CONFLICT DO NOTHING` : insert,
    params: [kind, value, accountId, createdAt],
  };
}

export type NewApiKey = Pick<
  typeof apiKeys.$inferInsert,
  | 'id'
  | 'accountId'
  | 'name'
  | 'mode'
  | 'keyHash'
  | 'prefix'
  | 'createdAt'
  | 'kind'
  | 'scopes'
  | 'allowedCidrs'
  | 'allowedOrigins'
  | 'dailyCap'
  | 'publishableKey'
  | 'turnstileSecret'
>;

export const API_KEY_INSERT = `INSERT INTO api_keys (id, account_id, name, mode, key_hash, prefix, created_at, kind,
  scopes, allowed_cidrs, allowed_origins, daily_cap, publishable_key, turnstile_secret)`;
export const API_KEY_VALUES = '?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14';

export function apiKeyParams(key: NewApiKey): SqlStatement['params'] {
  return [
    key.id,
    key.accountId,
    key.name,
    key.mode,
    key.keyHash,
    key.prefix,
    key.createdAt,
    key.kind ?? 'secret',
    key.scopes ?? null,
    key.allowedCidrs ?? null,
    key.allowedOrigins ?? null,
    key.dailyCap ?? null,
    key.publishableKey ?? null,
    key.turnstileSecret ?? null,
  ];
}

/**
 * A key as the operator's scripts store it (they run them through wrangler): its lookup, for the
 * directory's database, written before its row, for the account's shard (docs/architecture.md,
 * "Sharding what still grows"); in one transaction when the shard is the directory's.
 */
export interface KeyStatements {
  lookup: SqlStatement;
  row: SqlStatement;
}

/** The statements that store a key as it is. */
export function apiKeyInsert(key: NewApiKey): KeyStatements {
  return {
    lookup: lookupInsert('key', key.keyHash, key.accountId),
    row: { sql: `${API_KEY_INSERT} VALUES (${API_KEY_VALUES})`, params: apiKeyParams(key) },
  };
}

/**
 * The statements that store a key whose secret the operator chose (its hash is given), or
 * make it live again if the account already had it and revoked it.
 */
export function apiKeyRegistration(key: NewApiKey): KeyStatements {
  return {
    lookup: lookupInsert('key', key.keyHash, key.accountId),
    row: {
      sql: `${API_KEY_INSERT} VALUES (${API_KEY_VALUES})
            ON CONFLICT (key_hash) DO UPDATE SET revoked_at = NULL WHERE account_id = ?2`,
      params: apiKeyParams(key),
    },
  };
}

export type NewProberToken = Pick<
  typeof proberTokens.$inferInsert,
  'id' | 'name' | 'region' | 'tokenHash' | 'prefix' | 'createdAt'
> & {
  /** The account whose probers link with it; absent or null: the shared fleet. */
  accountId?: string | null;
};

const PROBER_TOKEN_COLUMNS = 'id, name, region, token_hash, prefix, created_at, account_id';

/**
 * The statement that stores a prober token (the operator's scripts run it through wrangler).
 * With `maxActiveOfAccount`, only while its account has fewer live tokens than that, the count
 * and the insert one statement (two concurrent creations cannot both take the last slot); it
 * returns the id it stored, or no row.
 */
export function proberTokenInsert(token: NewProberToken, maxActiveOfAccount?: number): SqlStatement {
  const params = [
    token.id,
    token.name,
    token.region,
    token.tokenHash,
    token.prefix,
    token.createdAt,
    token.accountId ?? null,
  ];
  if (maxActiveOfAccount === undefined) {
    return {
      sql: `INSERT INTO prober_tokens (${PROBER_TOKEN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
      params,
    };
  }
  return {
    sql: `INSERT INTO prober_tokens (${PROBER_TOKEN_COLUMNS}) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
          WHERE (SELECT COUNT(*) FROM prober_tokens WHERE account_id = ?7 AND revoked_at IS NULL) < ?8
          RETURNING id`,
    params: [...params, maxActiveOfAccount],
  };
}

/** The statement that stores an operator token (the operator's scripts run it through wrangler). */
export function operatorTokenInsert(
  token: Pick<typeof operatorTokens.$inferInsert, 'id' | 'name' | 'tokenHash' | 'prefix' | 'createdAt'>,
): SqlStatement {
  return {
    sql: 'INSERT INTO operator_tokens (id, name, token_hash, prefix, created_at) VALUES (?1, ?2, ?3, ?4, ?5)',
    params: [token.id, token.name, token.tokenHash, token.prefix, token.createdAt],
  };
}
