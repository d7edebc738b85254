// The local stack's seeding against a real local D1 (migrated by wrangler's own CLI, no dev
// server): a new folder is seeded in one transaction, a folder with saved credentials keeps them,
// and a database whose credentials file is gone keeps its one account and its one sign-up grant.
// The database file this module opens directly is the one wrangler's D1 reads and writes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { afterAll, describe, expect, it } from 'vitest';
import {
  applyMigrations,
  DATABASE_NAME,
  declaredDatabases,
  executeSql,
  localDatabaseFile,
  splitStatements,
} from './stack/d1.ts';
import { DEV_ACCOUNT_ID, seedDevelopmentAccount } from './stack/local-stack.ts';
import { isLiveCredential } from './stack/operator.ts';
import { runWrangler } from './stack/wrangler-cli.ts';

const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-seed-'));
const d1 = { persistTo };
afterAll(() => rmSync(persistTo, { recursive: true, force: true }));

function accountRows() {
  const [rows] = executeSql(
    d1,
    `SELECT a.credit_balance AS balance, (SELECT count(*) FROM accounts) AS accounts,
            (SELECT count(*) FROM credit_ledger WHERE account_id = a.id) AS movements
       FROM accounts a WHERE a.id = '${DEV_ACCOUNT_ID}'`,
  );
  return rows;
}

describe('seeding the development account', () => {
  it('seeds a new database, keeps saved credentials, and never grants twice', async () => {
    await applyMigrations(d1);
    const first = await seedDevelopmentAccount(d1, persistTo, { devCredits: 100 });
    expect(accountRows()).toEqual([{ balance: 100, accounts: 1, movements: 1 }]);
    expect(isLiveCredential(d1, 'api_keys', await hashSecret(first.apiKey))).toBe(true);
    expect(isLiveCredential(d1, 'prober_tokens', await hashSecret(first.proberToken))).toBe(true);

    const again = await seedDevelopmentAccount(d1, persistTo, { devCredits: 100 });
    expect(again).toEqual(first);

    rmSync(join(persistTo, 'rcpt-dev-credentials.json'));
    const afterLoss = await seedDevelopmentAccount(d1, persistTo, { devCredits: 100 });
    expect(afterLoss.apiKey).not.toBe(first.apiKey);
    expect(isLiveCredential(d1, 'api_keys', await hashSecret(afterLoss.apiKey))).toBe(true);
    expect(accountRows()).toEqual([{ balance: 100, accounts: 1, movements: 1 }]);
    // A hang guard, not a speed target: two wrangler migration runs and three seedings, each
    // wrangler process bounded by RUN_LIMIT_MS (scripts/stack/wrangler-cli.ts).
  }, 600_000);
});

/** The rows of one statement as wrangler's own `d1 execute --local` sees them. */
function wranglerRows(sql: string, database = DATABASE_NAME): unknown[] {
  const output = runWrangler([
    'd1',
    'execute',
    database,
    '--local',
    '--persist-to',
    persistTo,
    '--json',
    '--command',
    sql,
  ]);
  return (JSON.parse(output) as { results: unknown[] }[])[0]?.results ?? [];
}

describe('the local database, opened as a file', () => {
  it("is the one wrangler's D1 reads and writes, both ways", () => {
    executeSql(d1, `UPDATE accounts SET credit_balance = 321 WHERE id = '${DEV_ACCOUNT_ID}'`);
    expect(wranglerRows(`SELECT credit_balance FROM accounts WHERE id = '${DEV_ACCOUNT_ID}'`)).toEqual([
      { credit_balance: 321 },
    ]);
    wranglerRows(`UPDATE accounts SET credit_balance = 100 WHERE id = '${DEV_ACCOUNT_ID}'`);
    expect(accountRows()).toEqual([{ balance: 100, accounts: 1, movements: 1 }]);
  }, 60_000);

  it("names each shard's own file: a write to one is seen by wrangler in that one only", () => {
    const names = declaredDatabases().map((database) => database.name);
    expect(names.length).toBeGreaterThanOrEqual(2);
    const files = names.map((database) => localDatabaseFile({ persistTo, database }));
    expect(new Set(files).size).toBe(names.length);
    for (const file of files) expect(file).not.toBeNull();
    const shard = names[1] as string;
    executeSql(
      { persistTo, database: shard },
      "INSERT INTO account_shards (account_id, shard) VALUES ('marker', 1)",
    );
    expect(wranglerRows("SELECT shard FROM account_shards WHERE account_id = 'marker'", shard)).toEqual([
      { shard: 1 },
    ]);
    expect(wranglerRows("SELECT shard FROM account_shards WHERE account_id = 'marker'")).toEqual([]);
    executeSql({ persistTo, database: shard }, "DELETE FROM account_shards WHERE account_id = 'marker'");
  }, 60_000);

  it('runs a script as one transaction: a failing statement leaves nothing of those before it', () => {
    expect(() =>
      executeSql(
        d1,
        `UPDATE accounts SET credit_balance = 5 WHERE id = '${DEV_ACCOUNT_ID}';
         INSERT INTO credit_ledger (account_id) VALUES ('no such account')`,
      ),
    ).toThrow();
    expect(accountRows()).toEqual([{ balance: 100, accounts: 1, movements: 1 }]);
  });

  it('answers the rows of each statement of a script', () => {
    expect(executeSql(d1, "SELECT 1 AS one; SELECT 'a;b' AS text")).toEqual([
      [{ one: 1 }],
      [{ text: 'a;b' }],
    ]);
  });
});

describe('splitStatements', () => {
  it.each([
    ['SELECT 1; SELECT 2;', ['SELECT 1', 'SELECT 2']],
    ["INSERT INTO t VALUES ('it''s; fine'); SELECT 1", ["INSERT INTO t VALUES ('it''s; fine')", 'SELECT 1']],
    ['SELECT "a;b" FROM [c;d]; SELECT `e;f`', ['SELECT "a;b" FROM [c;d]', 'SELECT `e;f`']],
    ['-- one; two\nSELECT 1; /* ; */ SELECT 2', ['-- one; two\nSELECT 1', '/* ; */ SELECT 2']],
    ['SELECT 1; -- the end;', ['SELECT 1']],
    [' ; ;\n', []],
  ])('splits %j', (sql, statements) => {
    expect(splitStatements(sql)).toEqual(statements);
  });
});
