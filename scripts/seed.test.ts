// The local stack's seeding against a real local D1 (wrangler's own CLI, no dev server): a new
// folder is seeded in one transaction, a folder with saved credentials keeps them, and a
// database whose credentials file is gone keeps its one account and its one sign-up grant.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations, executeSql } from './stack/d1.ts';
import { DEV_ACCOUNT_ID, seedDevelopmentAccount } from './stack/local-stack.ts';
import { isLiveCredential } from './stack/operator.ts';

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
    applyMigrations(d1);
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
  }, 120_000);
});
