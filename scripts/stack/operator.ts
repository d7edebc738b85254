// Operator actions on the database (accounts, credits, API keys, prober tokens), as SQL
// through wrangler so they work on the local D1 and, with `remote`, on a deployed one.
import { issueSecret } from '@rcpt/shared/secret-tokens';
import { claimSignupMailbox, credit, type LedgerPair } from '../../edge/src/storage/ledger.ts';
import { type D1Target, executeSql, inlineStatement, sqlLiteral as q } from './d1.ts';

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
  const now = Date.now();
  const grant = credit({ accountId: id, amount: input.credits, reason: 'signup_grant', reference: id, now });
  // Its mailbox has had its free credits (docs/money.md), unless another account had them first.
  const claim = claimSignupMailbox({ accountId: id, email: input.email ?? null, amount: input.credits, now })
    .map((statement) => `${inlineStatement(statement)};`)
    .join('\n');
  return {
    id,
    // An operator's account needs no email confirmation: it is confirmed as it is made.
    sql: `INSERT INTO accounts (id, email, credit_balance, created_at, email_confirmed_at) VALUES (${q(id)}, ${q(input.email ?? null)}, 0, ${q(now)}, ${q(now)});
     ${claim}
     ${movementSql(grant)}`,
  };
}

export function createAccount(
  target: D1Target,
  input: { id?: string; email?: string | null; credits: number },
): string {
  const creation = accountCreation(input);
  executeSql(target, creation.sql);
  return creation.id;
}

/** A ledger movement as one script (wrangler runs a command's statements in one transaction). */
function movementSql(movement: LedgerPair): string {
  return `${inlineStatement(movement.entry)};\n${inlineStatement(movement.balance)};`;
}

export function accountExists(target: D1Target, accountId: string): boolean {
  const [rows] = executeSql(target, `SELECT id FROM accounts WHERE id = ${q(accountId)}`);
  return (rows?.length ?? 0) > 0;
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
  return {
    credential: { id, secret: issued.secret, prefix: issued.prefix },
    sql: `INSERT INTO api_keys (id, account_id, name, mode, key_hash, prefix, created_at)
     VALUES (${q(id)}, ${q(input.accountId)}, ${q(input.name)}, ${q(input.mode)}, ${q(issued.hash)}, ${q(issued.prefix)}, ${q(Date.now())});`,
  };
}

export async function createApiKey(
  target: D1Target,
  input: { accountId: string; name: string; mode: 'live' | 'test' },
): Promise<IssuedCredential> {
  const creation = await apiKeyCreation(input);
  executeSql(target, creation.sql);
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
  return `INSERT INTO api_keys (id, account_id, name, mode, key_hash, prefix, created_at)
     VALUES (${q(crypto.randomUUID())}, ${q(input.accountId)}, ${q(input.name)}, ${q(input.mode)}, ${q(input.hash)}, ${q(input.prefix)}, ${q(Date.now())})
     ON CONFLICT (key_hash) DO UPDATE SET revoked_at = NULL WHERE account_id = ${q(input.accountId)};`;
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

export function revokeCredential(
  target: D1Target,
  table: 'api_keys' | 'prober_tokens' | 'operator_tokens',
  idOrPrefix: string,
): number {
  const [rows] = executeSql(
    target,
    `UPDATE ${table} SET revoked_at = ${q(Date.now())} WHERE (id = ${q(idOrPrefix)} OR prefix = ${q(idOrPrefix)}) AND revoked_at IS NULL RETURNING id`,
  );
  return rows?.length ?? 0;
}

/** The statement that stores a new prober token, and the token (its secret shown once). */
export async function proberTokenCreation(input: {
  region: string;
  name: string;
}): Promise<{ credential: IssuedCredential; sql: string }> {
  const issued = await issueSecret('proberToken');
  const id = crypto.randomUUID();
  return {
    credential: { id, secret: issued.secret, prefix: issued.prefix },
    sql: `INSERT INTO prober_tokens (id, name, region, token_hash, prefix, created_at)
     VALUES (${q(id)}, ${q(input.name)}, ${q(input.region)}, ${q(issued.hash)}, ${q(issued.prefix)}, ${q(Date.now())});`,
  };
}

export async function createProberToken(
  target: D1Target,
  input: { region: string; name: string },
): Promise<IssuedCredential> {
  const creation = await proberTokenCreation(input);
  executeSql(target, creation.sql);
  return creation.credential;
}

/** Stores a new operator token (docs/operations.md, "The operator's view"); its secret is shown once. */
export async function createOperatorToken(
  target: D1Target,
  input: { name: string },
): Promise<IssuedCredential> {
  const issued = await issueSecret('operatorToken');
  const id = crypto.randomUUID();
  executeSql(
    target,
    `INSERT INTO operator_tokens (id, name, token_hash, prefix, created_at)
     VALUES (${q(id)}, ${q(input.name)}, ${q(issued.hash)}, ${q(issued.prefix)}, ${q(Date.now())});`,
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
  const values = issued.map(
    (key) =>
      `(${q(crypto.randomUUID())}, ${q(input.accountId)}, 'bench key', ${q(input.mode)}, ${q(key.hash)}, ${q(key.prefix)}, ${q(now)})`,
  );
  executeSql(
    target,
    `INSERT INTO api_keys (id, account_id, name, mode, key_hash, prefix, created_at) VALUES ${values.join(', ')}`,
  );
  return issued.map((key) => key.secret);
}
