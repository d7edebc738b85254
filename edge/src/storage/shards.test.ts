// An account the directory places in shard 1 (storage/shards.ts): its key finds it, its calls and
// its lists are charged, answered and kept in shard 1's database, and nothing of it is written to
// the directory's but the directory's own rows. The fake prober answers as a mail server does.
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { untilValue } from '../../../test/eventually.ts';
import { reportFor, startFakeProber } from '../../test/fake-prober.ts';
import { call, recordAcceptRoute } from '../../test/fixtures.ts';
import { configOf } from '../config.ts';
import { type BatchMessage, verifyQueueOf } from '../services/batch/queue.ts';
import { createApiKey } from '../services/keys/api-keys.ts';
import { settleDesk } from '../services/money/account-desk.ts';
import { insertAccount } from './accounts.ts';
import { directoryOf, shardBindings, shardNumberOf, shardOfAccount, shardsOf } from './shards.ts';

const DOMAIN = 'shard-one.test';

let closeProber: (() => void) | null = null;
afterEach(() => {
  closeProber?.();
  closeProber = null;
});

/** An account placed in `shard` with `credits` and a live key. */
async function accountIn(shard: number, credits: number) {
  const account = shardsOf(env).db(shard);
  const accountId = crypto.randomUUID();
  const now = Date.now();
  await insertAccount(account, {
    id: accountId,
    email: null,
    passwordHash: null,
    initialCredits: credits,
    now,
  });
  const key = await createApiKey(account, {
    accountId,
    name: 'shard key',
    mode: 'live',
    maxActiveKeys: configOf(env).QUOTA_API_KEYS,
    now,
  });
  return { accountId, apiKey: key.secret };
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

describe('shards', () => {
  it('binds two databases, the directory shard 0, each database made here knowing its shard and directory', () => {
    const shards = shardsOf(env);
    expect(shardBindings(env)).toEqual([env.DB, env.DB_SHARD_1]);
    expect(shards.count).toBe(2);
    expect(shardNumberOf(shards.db(1))).toBe(1);
    expect(directoryOf(shards.db(1))).toBe(shards.directory);
    expect(directoryOf(shards.directory)).toBe(shards.directory);
    expect(() => shards.db(2)).toThrow(/no D1 binding for shard 2/);
  });

  it('stamps the shard on every message a shard sends, and leaves shard 0 messages as they were', async () => {
    const sent: BatchMessage[] = [];
    const recording = {
      send: async (body: BatchMessage) => void sent.push(body),
      sendBatch: async (messages: Iterable<MessageSendRequest<BatchMessage>>) => {
        for (const message of messages) sent.push(message.body);
      },
    };
    const bound = { ...env, VERIFY_QUEUE: recording } as unknown as Env;
    await verifyQueueOf(bound, 1).sendBatch([{ body: { kind: 'deadline', jobId: 'j1' } }]);
    await verifyQueueOf(bound, 1).send({ kind: 'deadline', jobId: 'j2' });
    await verifyQueueOf(bound).send({ kind: 'deadline', jobId: 'j3' });
    expect(sent).toEqual([
      { kind: 'deadline', jobId: 'j1', shard: 1 },
      { kind: 'deadline', jobId: 'j2', shard: 1 },
      { kind: 'deadline', jobId: 'j3' },
    ]);
  });

  it("keeps an account of shard 1 in shard 1's database: its key, single calls, charges and a list to completion", async () => {
    const prober = await startFakeProber('default', (probe) => ({
      ...reportFor(probe, 250, '2.1.5', 'OK', 550),
      perAddress: probe.emails.map((email) => ({
        email,
        reply: email.startsWith('alice')
          ? { code: 250, enhanced: '2.1.5', text: 'OK' }
          : { code: 550, enhanced: '5.1.1', text: 'User unknown' },
        failure: null,
      })),
    }));
    closeProber = () => prober.close();
    await recordAcceptRoute(DOMAIN);
    const caller = await accountIn(1, 10);
    expect(await shardOfAccount(shardsOf(env), caller.accountId)).toBe(1);
    // The directory holds where it lives and what finds it; the account's rows are in shard 1 only.
    expect(
      await countIn(
        env.DB,
        'SELECT COUNT(*) AS n FROM account_shards WHERE account_id = ?1 AND shard = 1',
        caller.accountId,
      ),
    ).toBe(1);
    expect(
      await countIn(
        env.DB,
        "SELECT COUNT(*) AS n FROM account_lookups WHERE kind = 'key' AND account_id = ?1",
        caller.accountId,
      ),
    ).toBe(1);
    expect(await countIn(env.DB, 'SELECT COUNT(*) AS n FROM accounts WHERE id = ?1', caller.accountId)).toBe(
      0,
    );
    expect(
      await countIn(
        env.DB_SHARD_1,
        'SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?1',
        caller.accountId,
      ),
    ).toBe(1);

    const single = await call('/api/v1/verify', { key: caller.apiKey, json: { email: `alice@${DOMAIN}` } });
    expect(single.status).toBe(200);
    expect(await single.json()).toMatchObject({
      data: { status: 'deliverable', subStatus: 'accepted_email' },
    });
    const account = await call('/api/v1/account', { key: caller.apiKey });
    expect(account.status).toBe(200);
    expect(await account.json()).toMatchObject({ account: { id: caller.accountId } });

    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: [`alice@${DOMAIN}`, `bob@${DOMAIN}`], maxWaitSeconds: 60 },
    });
    expect(upload.status).toBe(200);
    const { jobId } = await upload.json<{ jobId: string }>();
    await untilValue(async () => {
      const row = await env.DB_SHARD_1.prepare('SELECT status FROM jobs WHERE id = ?1')
        .bind(jobId)
        .first<{ status: string }>();
      return row?.status === 'completed' ? true : undefined;
    }, `job ${jobId} of shard 1 completed`);
    const status = await call(`/api/v1/bulk/status/${jobId}`, { key: caller.apiKey });
    expect(status.status).toBe(200);
    const { job } = await status.json<{ job: Record<string, unknown> }>();
    expect(job).toMatchObject({ deliverableCount: 1, undeliverableCount: 1, creditsCharged: 2 });
    const results = await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey });
    expect(
      (await results.json<{ results: { email: string; subStatus: string }[] }>()).results.map(
        (result) => `${result.email} ${result.subStatus}`,
      ),
    ).toEqual([`alice@${DOMAIN} accepted_email`, `bob@${DOMAIN} mailbox_not_found`]);

    // What the desk answered is written to the account's shard: one call and two addresses charged,
    // and the history of both.
    await settleDesk(env.ACCOUNT_DESK, caller.accountId);
    expect(
      await env.DB_SHARD_1.prepare('SELECT credit_balance AS balance FROM accounts WHERE id = ?1')
        .bind(caller.accountId)
        .first(),
    ).toEqual({ balance: 7 });
    expect(
      await countIn(
        env.DB_SHARD_1,
        'SELECT COUNT(*) AS n FROM verifications WHERE account_id = ?1',
        caller.accountId,
      ),
    ).toBe(2); // the single call's history entry and the list's
    expect(
      await countIn(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?1', caller.accountId),
    ).toBe(1);
    for (const table of ['verifications', 'jobs', 'credit_ledger'])
      expect(
        await countIn(env.DB, `SELECT COUNT(*) AS n FROM ${table} WHERE account_id = ?1`, caller.accountId),
      ).toBe(0);
    // The domain facts every account shares stay in the directory.
    expect(await countIn(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM domain_facts')).toBe(0);
  });

  it('keeps finding an account of shard 0 by its key, with no row of it in shard 1', async () => {
    const caller = await accountIn(0, 5);
    expect(
      await countIn(
        env.DB,
        'SELECT COUNT(*) AS n FROM account_shards WHERE account_id = ?1 AND shard = 0',
        caller.accountId,
      ),
    ).toBe(1);
    const account = await call('/api/v1/account', { key: caller.apiKey });
    expect(account.status).toBe(200);
    expect(await account.json()).toMatchObject({ account: { id: caller.accountId, creditsRemaining: 5 } });
    expect(
      await countIn(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM accounts WHERE id = ?1', caller.accountId),
    ).toBe(0);
  });
});
