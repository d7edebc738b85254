// The operator CLI (`npm run admin`) against a scratch local D1, as an operator runs it, and
// against a running system for a key of an account of shard 1.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { executeSql, shardTarget } from '../../scripts/stack/d1.ts';
import { REPO_ROOT } from '../../scripts/stack/wrangler-cli.ts';
import { untilValue } from '../eventually.ts';
import { okJson, SQL_POLL_MS, type System, startSystem } from './harness.ts';

const run = promisify(execFile);
let persistTo: string;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm run admin` on the local D1 under `folder`, with more of the environment. */
async function adminIn(folder: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['scripts/admin.ts', ...args, '--persist-to', folder],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, ...env },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as Ran;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function admin(...args: string[]): Promise<Ran> {
  return adminIn(persistTo, args);
}

/** The rows of one query of shard `shard`'s database (0: the directory's) under `folder`. */
function rowsIn(shard: number, query: string, folder = persistTo): Record<string, unknown>[] {
  return executeSql(shardTarget({ persistTo: folder }, shard), query)[0] ?? [];
}

beforeAll(() => {
  persistTo = mkdtempSync(join(tmpdir(), 'rcpt-admin-'));
  // The run's migrated databases (test/e2e/migrated-database.ts), as a deployment's would be.
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
    const { accountId, shard } = JSON.parse(created.stdout) as { accountId: string; shard: number };
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
    const stored = rowsIn(
      shard,
      `SELECT key_hash, prefix, revoked_at FROM api_keys WHERE account_id = '${accountId}'`,
    );
    expect(stored).toEqual([
      { key_hash: await hashSecret(key.apiKey), prefix: key.prefix, revoked_at: null },
    ]);
    expect((await admin('key', 'revoke', '--key', key.prefix)).code).toBe(0);
    const revoked = rowsIn(shard, `SELECT revoked_at FROM api_keys WHERE account_id = '${accountId}'`);
    expect(revoked?.[0]?.revoked_at).toEqual(expect.any(Number));

    const token = JSON.parse((await admin('prober-token', 'create', '--region', 'eu', '--json')).stdout) as {
      token: string;
    };
    expect(token.token).toMatch(/^rkp_/);
    const ledger = rowsIn(
      shard,
      `SELECT reason, delta FROM credit_ledger WHERE account_id = '${accountId}' ORDER BY id`,
    );
    expect(ledger).toEqual([
      { reason: 'signup_grant', delta: 10 },
      { reason: 'grant', delta: 5 },
    ]);
    // Its mailbox has had its free credits: a sign-up of ops+1@example.com gets none. The
    // mailboxes are the directory's, whatever the account's shard.
    const claimed = rowsIn(
      0,
      `SELECT mailbox, account_id FROM signup_grant_mailboxes WHERE account_id = '${accountId}'`,
    );
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

  it('keeps an account of shard 1 in shard 1: its credits, keys and settings; the directory finds it', async () => {
    const created = await admin(
      'account',
      'create',
      '--shard',
      '1',
      '--email',
      ' One@Example.com',
      '--credits',
      '10',
      '--json',
    );
    const { accountId, shard } = JSON.parse(created.stdout) as { accountId: string; shard: number };
    expect(shard).toBe(1);
    const account = `SELECT credit_balance, shared_fleet_fallback FROM accounts WHERE id = '${accountId}'`;
    expect(rowsIn(1, account)).toEqual([{ credit_balance: 10, shared_fleet_fallback: 1 }]);
    expect(rowsIn(0, account)).toEqual([]);
    // The directory places it, and its email finds it, spelt as sign-in spells it.
    expect(rowsIn(0, `SELECT shard FROM account_shards WHERE account_id = '${accountId}'`)).toEqual([
      { shard: 1 },
    ]);
    expect(rowsIn(0, `SELECT kind, value FROM account_lookups WHERE account_id = '${accountId}'`)).toEqual([
      { kind: 'email', value: 'one@example.com' },
    ]);
    // The email is that account's in every shard: another account of it is refused, and not made.
    const placed = () => rowsIn(0, 'SELECT COUNT(*) AS n FROM account_shards')[0]?.n;
    const before = placed();
    const taken = await admin('account', 'create', '--shard', '0', '--email', 'one@example.COM');
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain(`one@example.com is the email of account ${accountId}`);
    expect(placed()).toBe(before);

    const granted = await admin('credits', 'grant', '--account', accountId, '--amount', '5', '--json');
    expect(JSON.parse(granted.stdout)).toEqual({ accountId, balance: 15 });
    const ledger = `SELECT reason, delta FROM credit_ledger WHERE account_id = '${accountId}' ORDER BY id`;
    expect(rowsIn(1, ledger)).toEqual([
      { reason: 'signup_grant', delta: 10 },
      { reason: 'grant', delta: 5 },
    ]);
    expect(rowsIn(0, ledger)).toEqual([]);

    const key = JSON.parse((await admin('key', 'create', '--account', accountId, '--json')).stdout) as {
      keyId: string;
      apiKey: string;
      prefix: string;
    };
    const keyHash = await hashSecret(key.apiKey);
    const keys = `SELECT id, key_hash, revoked_at FROM api_keys WHERE account_id = '${accountId}'`;
    expect(rowsIn(1, keys)).toEqual([{ id: key.keyId, key_hash: keyHash, revoked_at: null }]);
    expect(rowsIn(0, keys)).toEqual([]);
    expect(
      rowsIn(0, `SELECT account_id FROM account_lookups WHERE kind = 'key' AND value = '${keyHash}'`),
    ).toEqual([{ account_id: accountId }]);
    // The key, given in place of the account, finds it through the directory.
    const byKey = await admin('credits', 'grant', '--account', key.apiKey, '--amount', '1', '--json');
    expect(JSON.parse(byKey.stdout)).toEqual({ accountId, balance: 16 });

    const fallback = `SELECT shared_fleet_fallback FROM accounts WHERE id = '${accountId}'`;
    expect((await admin('shared-fleet', 'off', '--account', accountId)).code).toBe(0);
    expect(rowsIn(1, fallback)).toEqual([{ shared_fleet_fallback: 0 }]);
    expect((await admin('shared-fleet', 'on', '--account', accountId)).code).toBe(0);
    expect(rowsIn(1, fallback)).toEqual([{ shared_fleet_fallback: 1 }]);

    // A customer's prober token lives in the directory, as every prober token: the hub finds it
    // there across accounts (docs/architecture.md, "Sharding what still grows").
    const token = JSON.parse(
      (await admin('prober-token', 'create', '--account', accountId, '--region', 'eu', '--json')).stdout,
    ) as { tokenId: string; accountId: string };
    expect(token.accountId).toBe(accountId);
    const tokens = `SELECT id, region FROM prober_tokens WHERE account_id = '${accountId}'`;
    expect(rowsIn(0, tokens)).toEqual([{ id: token.tokenId, region: 'eu' }]);
    expect(rowsIn(1, tokens)).toEqual([]);

    expect((await admin('key', 'revoke', '--key', key.prefix)).code).toBe(0);
    expect(rowsIn(1, keys)).toEqual([{ id: key.keyId, key_hash: keyHash, revoked_at: expect.any(Number) }]);
    const again = await admin('key', 'revoke', '--key', key.keyId);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('no such live key');
    expect((await admin('credits', 'grant', '--account', key.apiKey, '--amount', '1')).stderr).toContain(
      'no live API key is that one',
    );
  });

  it('refuses an account no shard holds, writing nothing', async () => {
    const unknown = crypto.randomUUID();
    for (const args of [
      ['credits', 'grant', '--account', unknown, '--amount', '5'],
      ['key', 'create', '--account', unknown],
      ['shared-fleet', 'off', '--account', unknown],
      ['prober-token', 'create', '--account', unknown],
    ]) {
      const result = await admin(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(`no account ${unknown}`);
    }
    for (const shard of [0, 1]) {
      expect(rowsIn(shard, `SELECT id FROM api_keys WHERE account_id = '${unknown}'`)).toEqual([]);
      expect(rowsIn(shard, `SELECT id FROM credit_ledger WHERE account_id = '${unknown}'`)).toEqual([]);
    }
    expect(rowsIn(0, `SELECT kind FROM account_lookups WHERE account_id = '${unknown}'`)).toEqual([]);
    expect(rowsIn(0, `SELECT id FROM prober_tokens WHERE account_id = '${unknown}'`)).toEqual([]);
  });

  it('places a new account in the shard with the fewest accounts, and refuses a shard wrangler.toml does not bind', async () => {
    const placed = (shard: number) =>
      Number(rowsIn(0, `SELECT COUNT(*) AS n FROM account_shards WHERE shard = ${shard}`)[0]?.n);
    const create = async (...args: string[]) =>
      (
        JSON.parse((await admin('account', 'create', '--credits', '0', '--json', ...args)).stdout) as {
          shard: number;
        }
      ).shard;
    while (placed(0) <= placed(1)) expect(await create('--shard', '0')).toBe(0);
    expect(await create()).toBe(1);
    while (placed(1) <= placed(0)) expect(await create('--shard', '1')).toBe(1);
    expect(await create()).toBe(0);

    const before = placed(0) + placed(1);
    for (const shard of ['2', '-1', 'one']) {
      const refused = await admin('account', 'create', '--shard', shard);
      expect(refused.code, shard).toBe(2);
      expect(refused.stderr).toContain('--shard');
    }
    expect(placed(0) + placed(1)).toBe(before);
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

describe('npm run admin on a running system', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem();
  });

  afterAll(async () => {
    await system?.close();
  });

  it('a key it creates for an account of shard 1 verifies through the edge, and fails on the next request once revoked', async () => {
    const folder = system.stack.d1.persistTo as string;
    const { accountId } = JSON.parse(
      (await adminIn(folder, ['account', 'create', '--shard', '1', '--credits', '5', '--json'])).stdout,
    ) as { accountId: string };
    const { apiKey, prefix } = JSON.parse(
      (await adminIn(folder, ['key', 'create', '--account', accountId, '--json'])).stdout,
    ) as { apiKey: string; prefix: string };

    const verify = () =>
      system.api('/api/v1/verify', { key: apiKey, json: { email: `alice@${system.world.domains.accept}` } });
    const body = await okJson<{ creditsRemaining: number; data: { status: string; subStatus: string } }>(
      await verify(),
    );
    expect(body.data).toMatchObject({ status: 'deliverable', subStatus: 'accepted_email' });
    expect(body.creditsRemaining).toBe(4);
    // The account's desk writes the charge to its shard's database about a second after the call
    // (docs/money.md, "Where the balance lives").
    const balance = `SELECT credit_balance FROM accounts WHERE id = '${accountId}'`;
    await untilValue(
      async () => (rowsIn(1, balance, folder)[0]?.credit_balance === 4 ? true : undefined),
      "the call's charge is in shard 1",
      50_000,
      SQL_POLL_MS,
    );
    expect(rowsIn(0, balance, folder)).toEqual([]);

    const { token } = JSON.parse((await adminIn(folder, ['operator-token', 'create', '--json'])).stdout) as {
      token: string;
    };
    const revoked = await adminIn(
      folder,
      ['key', 'revoke', '--key', prefix, '--edge', system.stack.baseUrl, '--json'],
      {
        RCPT_OPERATOR_TOKEN: token,
      },
    );
    expect(JSON.parse(revoked.stdout)).toEqual({ revoked: 1, edgeTold: true });
    const refused = await verify();
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code?: string }).code).toBe('INVALID_API_KEY');
  });
});
