// The operator CLI (`npm run admin`) against a scratch local D1, as an operator runs it.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { executeSql } from '../../scripts/stack/d1.ts';
import { REPO_ROOT } from '../../scripts/stack/wrangler-cli.ts';

const run = promisify(execFile);
let persistTo: string;

async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['scripts/admin.ts', ...args, '--persist-to', persistTo],
      {
        cwd: REPO_ROOT,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(() => {
  persistTo = mkdtempSync(join(tmpdir(), 'rcpt-admin-'));
  // The run's migrated database (test/e2e/migrated-database.ts), as a deployment's would be.
  cpSync(inject('migratedDatabase'), persistTo, { recursive: true });
});

afterAll(() => rmSync(persistTo, { recursive: true, force: true }));

describe('npm run admin', () => {
  it('creates an account, grants credits, issues and revokes a key and a prober token', async () => {
    const created = await admin(
      'account',
      'create',
      '--email',
      'ops@example.com',
      '--credits',
      '10',
      '--json',
    );
    const { accountId } = JSON.parse(created.stdout) as { accountId: string };
    expect((await admin('credits', 'grant', '--account', accountId, '--amount', '5')).stdout).toContain(
      'balance is now 15',
    );

    const key = JSON.parse(
      (await admin('key', 'create', '--account', accountId, '--test', '--json')).stdout,
    ) as {
      apiKey: string;
      prefix: string;
    };
    expect(key.apiKey).toMatch(/^rk_test_[A-Za-z0-9_-]{43}$/);
    // Only the hash is stored, with the visible prefix.
    const [stored] = executeSql(
      { persistTo },
      `SELECT key_hash, prefix, revoked_at FROM api_keys WHERE account_id = '${accountId}'`,
    );
    expect(stored).toEqual([
      { key_hash: await hashSecret(key.apiKey), prefix: key.prefix, revoked_at: null },
    ]);
    expect((await admin('key', 'revoke', '--key', key.prefix)).code).toBe(0);
    const [revoked] = executeSql(
      { persistTo },
      `SELECT revoked_at FROM api_keys WHERE account_id = '${accountId}'`,
    );
    expect(revoked?.[0]?.revoked_at).toEqual(expect.any(Number));

    const token = JSON.parse((await admin('prober-token', 'create', '--region', 'eu', '--json')).stdout) as {
      token: string;
    };
    expect(token.token).toMatch(/^rkp_/);
    const [ledger] = executeSql(
      { persistTo },
      `SELECT reason, delta FROM credit_ledger WHERE account_id = '${accountId}' ORDER BY id`,
    );
    expect(ledger).toEqual([
      { reason: 'signup_grant', delta: 10 },
      { reason: 'grant', delta: 5 },
    ]);
    // Its mailbox has had its free credits: a sign-up of ops+1@example.com gets none.
    const [claimed] = executeSql({ persistTo }, 'SELECT mailbox, account_id FROM signup_grant_mailboxes');
    expect(claimed).toEqual([{ mailbox: 'ops@example.com', account_id: accountId }]);
  });

  it('issues an operator token stored as its hash, revokes it, and asks for one before showing the fleet', async () => {
    const token = JSON.parse((await admin('operator-token', 'create', '--json')).stdout) as {
      tokenId: string;
      token: string;
      prefix: string;
    };
    expect(token.token).toMatch(/^rko_[A-Za-z0-9_-]{43}$/);
    const [stored] = executeSql(
      { persistTo },
      'SELECT id, token_hash, prefix, revoked_at FROM operator_tokens',
    );
    expect(stored).toEqual([
      {
        id: token.tokenId,
        token_hash: await hashSecret(token.token),
        prefix: token.prefix,
        revoked_at: null,
      },
    ]);
    expect((await admin('operator-token', 'revoke', '--token', token.prefix)).code).toBe(0);
    expect((await admin('operator-token', 'revoke', '--token', token.prefix)).code).toBe(2);
    const [revoked] = executeSql({ persistTo }, 'SELECT revoked_at FROM operator_tokens');
    expect(revoked?.[0]?.revoked_at).toEqual(expect.any(Number));
    // `fleet` reads the token from the environment; without it, it says where one comes from.
    const withoutToken = await admin('fleet');
    expect(withoutToken.code).toBe(2);
    expect(withoutToken.stderr).toContain('RCPT_OPERATOR_TOKEN is required');
  });

  it('grants credits to the account of an API key, the key given in place of the account id', async () => {
    const { accountId } = JSON.parse(
      (await admin('account', 'create', '--credits', '3', '--json')).stdout,
    ) as {
      accountId: string;
    };
    const { apiKey } = JSON.parse(
      (await admin('key', 'create', '--account', accountId, '--json')).stdout,
    ) as {
      apiKey: string;
    };
    const granted = await admin('credits', 'grant', '--account', apiKey, '--amount', '40', '--json');
    expect(JSON.parse(granted.stdout)).toEqual({ accountId, balance: 43 });
    // The key never reaches the output.
    expect(granted.stdout + granted.stderr).not.toContain(apiKey);

    expect((await admin('key', 'revoke', '--key', apiKey.slice(0, 12))).code).toBe(0);
    const revoked = await admin('credits', 'grant', '--account', apiKey, '--amount', '40');
    expect(revoked.code).toBe(2);
    expect(revoked.stderr).toContain('no live API key is that one');
  });

  it('exits 2 with the usage for an unknown command, a missing option or a bad number', async () => {
    for (const args of [
      ['bogus'],
      ['credits', 'grant', '--amount', '5'],
      ['account', 'create', '--credits', 'many'],
    ]) {
      const result = await admin(...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('usage: npm run admin');
    }
  });
});
