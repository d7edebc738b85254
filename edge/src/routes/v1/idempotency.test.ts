// Idempotency-Key on the charged POSTs, with Stripe's semantics.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { balanceOf, call, db, newCaller, type TestCaller } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { createApiKey } from '../../services/keys/api-keys.ts';
import { digestOf, requestFingerprint } from '../../services/money/idempotency.ts';
import { prepare } from '../../storage/db.ts';
import { credit } from '../../storage/ledger.ts';
import { deleteExpired } from '../../storage/retention.ts';

const keptKeysOf = async (accountId: string) =>
  (
    await env.DB.prepare('SELECT COUNT(*) AS n FROM idempotency_keys WHERE account_id = ?')
      .bind(accountId)
      .first<{ n: number }>()
  )?.n;

/** A test key of the same account as `caller`'s live key. */
async function testKeyOf(caller: TestCaller): Promise<string> {
  const key = await createApiKey(db(), {
    accountId: caller.accountId,
    name: 'sandbox',
    mode: 'test',
    maxActiveKeys: configOf(env).QUOTA_API_KEYS,
    now: Date.now(),
  });
  return key.secret;
}

const HOUR = 3600_000;

function verify(key: string, email: string, idempotencyKey?: string): Promise<Response> {
  return call('/api/v1/verify', {
    key,
    json: { email },
    headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {},
  });
}

describe('Idempotency-Key on POST /api/v1/verify', () => {
  it('answers a retry with the first response, charged once', async () => {
    const caller = await newCaller({ credits: 5 });
    const first = await verify(caller.apiKey, 'not an address', 'retry-1');
    expect(first.status).toBe(200);
    const firstBody = await first.json();
    const retry = await verify(caller.apiKey, 'not an address', 'retry-1');
    expect(retry.status).toBe(200);
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await retry.json()).toEqual(firstBody);
    expect(await balanceOf(caller.accountId)).toBe(4);
    // Without a key, the same request is a new one.
    await verify(caller.apiKey, 'not an address');
    expect(await balanceOf(caller.accountId)).toBe(3);
  });

  it('refuses the same key with another body: 422 IDEMPOTENCY_KEY_REUSED, not charged', async () => {
    const caller = await newCaller({ credits: 5 });
    await verify(caller.apiKey, 'not an address', 'reused');
    const other = await verify(caller.apiKey, 'another non-address', 'reused');
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ success: false, code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await balanceOf(caller.accountId)).toBe(4);
  });

  it('charges concurrent retries of one key once', async () => {
    const caller = await newCaller({ credits: 10 });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => verify(caller.apiKey, 'not an address', 'concurrent')),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true);
    expect(statuses).toContain(200);
    for (const answer of answers.filter((response) => response.status === 409)) {
      expect(await answer.json()).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE' });
    }
    expect(await balanceOf(caller.accountId)).toBe(9);
  });

  it('keeps keys per account: another account may use the same key', async () => {
    const first = await newCaller({ credits: 5 });
    const second = await newCaller({ credits: 5 });
    await verify(first.apiKey, 'not an address', 'shared-key');
    const response = await verify(second.apiKey, 'not an address', 'shared-key');
    expect(response.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await balanceOf(second.accountId)).toBe(4);
  });

  it('keeps no refusal: a 402 stores no key, and the same key runs once credits are there', async () => {
    const caller = await newCaller({ credits: 0 });
    for (const key of ['broke-1', 'broke-2', 'broke-3']) {
      const refused = await verify(caller.apiKey, 'not an address', key);
      expect(refused.status).toBe(402);
    }
    expect(await keptKeysOf(caller.accountId)).toBe(0);
    const grant = credit({
      accountId: caller.accountId,
      amount: 1,
      reason: 'grant',
      reference: 'top-up',
      now: Date.now(),
    });
    await env.DB.batch([prepare(env.DB, grant.entry), prepare(env.DB, grant.balance)]);
    const paid = await verify(caller.apiKey, 'not an address', 'broke-1');
    expect(paid.status).toBe(200);
    expect(paid.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await balanceOf(caller.accountId)).toBe(0);
  });

  it('keeps keys per key mode: a test key never gets a live answer, nor a live key a sandbox one', async () => {
    const caller = await newCaller({ credits: 5 });
    const testKey = await testKeyOf(caller);
    const live = await verify(caller.apiKey, 'someone@nonexistent.test', 'same-key');
    expect(live.status).toBe(200);
    const liveBody = await live.json<{ data: { verifiedAt: string } }>();
    const sandbox = await verify(testKey, 'someone@nonexistent.test', 'same-key');
    expect(sandbox.status).toBe(200);
    expect(sandbox.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await sandbox.json()).not.toEqual(liveBody);
    // Each mode's retry gets its own mode's answer.
    const liveRetry = await verify(caller.apiKey, 'someone@nonexistent.test', 'same-key');
    expect(liveRetry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await liveRetry.json()).toEqual(liveBody);
    const sandboxFirst = await verify(testKey, 'another@nonexistent.test', 'sandbox-first');
    expect(sandboxFirst.status).toBe(200);
    const liveAfter = await verify(caller.apiKey, 'another@nonexistent.test', 'sandbox-first');
    expect(liveAfter.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await balanceOf(caller.accountId)).toBe(3);
  });

  it('identifies the request by its raw body: the same JSON sent with other bytes is another request', async () => {
    const caller = await newCaller({ credits: 5 });
    const send = (body: string) =>
      call('/api/v1/verify', {
        key: caller.apiKey,
        body,
        headers: { 'content-type': 'application/json', 'Idempotency-Key': 'bytes' },
      });
    expect((await send('{"email":"not an address"}')).status).toBe(200);
    expect((await send('{"email":"not an address"}')).headers.get('Idempotent-Replayed')).toBe('true');
    const reencoded = await send('{ "email": "not an address" }');
    expect(reencoded.status).toBe(422);
    expect(await balanceOf(caller.accountId)).toBe(4);
  });

  it('refuses a malformed key with 400 before any charge', async () => {
    const caller = await newCaller({ credits: 5 });
    const response = await verify(caller.apiKey, 'not an address', 'x'.repeat(256));
    expect(response.status).toBe(400);
    expect(await balanceOf(caller.accountId)).toBe(5);
  });

  it('forgets keys after 24 hours (the retention cron deletes them)', async () => {
    const caller = await newCaller({ credits: 5 });
    await verify(caller.apiKey, 'not an address', 'short-lived');
    // Nothing else older than its retention: only the keys' 24 hours are past.
    await deleteExpired(db(), { retention: 0, sandbox: 0, trial: 0, freeRows: 0 }, Date.now() + 25 * HOUR);
    const count = await env.DB.prepare('SELECT COUNT(*) AS n FROM idempotency_keys WHERE account_id = ?')
      .bind(caller.accountId)
      .first<{ n: number }>();
    expect(count?.n).toBe(0);
    const again = await verify(caller.apiKey, 'not an address', 'short-lived');
    expect(again.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await balanceOf(caller.accountId)).toBe(3);
  });
});

describe('Idempotency-Key on POST /api/v1/bulk/upload', () => {
  it('answers a retry with the same job, charged once; another list with the key is 422', async () => {
    const caller = await newCaller({ credits: 10 });
    const upload = (emails: string[]) =>
      call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails },
        headers: { 'Idempotency-Key': 'upload-1' },
      });
    const first = await upload(['a@idem.test', 'b@idem.test']);
    expect(first.status).toBe(200);
    const firstBody = await first.json<{ jobId: string }>();
    const retry = await upload(['a@idem.test', 'b@idem.test']);
    expect(await retry.json()).toEqual(firstBody);
    expect(await balanceOf(caller.accountId)).toBe(8);
    const other = await upload(['c@idem.test']);
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await balanceOf(caller.accountId)).toBe(8);
  });

  it('documents the header on both charged operations', async () => {
    const document = await (await call('/openapi.json')).json<{
      paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>;
    }>();
    for (const [path, method] of [
      ['/api/v1/verify', 'post'],
      ['/api/v1/bulk/upload', 'post'],
    ] as const) {
      const parameters = document.paths[path]?.[method]?.parameters ?? [];
      expect(parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')).toBe(
        true,
      );
    }
  });
});

describe('an answer that could not be kept', () => {
  /** Makes keeping the answer of `key` fail, as a D1 write can; returns the undo. */
  async function failKeeping(key: string): Promise<() => Promise<unknown>> {
    const trigger = `keep_fails_${crypto.randomUUID().replaceAll('-', '')}`;
    await env.DB.prepare(
      `CREATE TRIGGER ${trigger} BEFORE UPDATE OF state ON idempotency_keys
       WHEN NEW.state = 'done' AND NEW.key = '${key}'
       BEGIN SELECT RAISE(ABORT, 'injected: the answer could not be kept'); END`,
    ).run();
    return () => env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
  }

  /** As if the holder's lock had lapsed (IDEMPOTENCY_LOCK_MS ago and more). */
  const lapse = (accountId: string, key: string) =>
    env.DB.prepare(
      'UPDATE idempotency_keys SET locked_at = locked_at - 600000 WHERE account_id = ?1 AND key = ?2',
    )
      .bind(accountId, key)
      .run();

  it('never lets a retry charge a verification twice, even after the lock lapses', async () => {
    const caller = await newCaller({ credits: 5 });
    const undo = await failKeeping('keep-fails-verify');
    try {
      const first = await verify(caller.apiKey, 'not an address', 'keep-fails-verify');
      expect(first.status).toBe(200);
    } finally {
      await undo();
    }
    expect(await balanceOf(caller.accountId)).toBe(4);
    expect((await verify(caller.apiKey, 'not an address', 'keep-fails-verify')).status).toBe(409);
    await lapse(caller.accountId, 'keep-fails-verify');
    const retry = await verify(caller.apiKey, 'not an address', 'keep-fails-verify');
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({
      code: 'IDEMPOTENCY_KEY_IN_USE',
      details: { chargedAs: expect.any(String) },
    });
    expect(await balanceOf(caller.accountId)).toBe(4);
  });

  it('never lets a retry upload (and charge) a list twice; the refusal names the job', async () => {
    const caller = await newCaller({ credits: 5 });
    const upload = () =>
      call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['someone@[192.0.2.1]'] },
        headers: { 'Idempotency-Key': 'keep-fails-upload' },
      });
    const undo = await failKeeping('keep-fails-upload');
    let jobId: string;
    try {
      const first = await upload();
      expect(first.status).toBe(200);
      jobId = ((await first.json()) as { jobId: string }).jobId;
    } finally {
      await undo();
    }
    await lapse(caller.accountId, 'keep-fails-upload');
    const retry = await upload();
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ details: { chargedAs: jobId } });
    const jobs = await env.DB.prepare('SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?1')
      .bind(caller.accountId)
      .first<{ n: number }>();
    expect(jobs?.n).toBe(1);
  });

  it('still lets a retry run a request whose holder died before it charged', async () => {
    const caller = await newCaller({ credits: 5 });
    const body = JSON.stringify({ email: 'not an address' });
    const fingerprint = await requestFingerprint({
      operation: 'verify',
      contentType: 'application/json',
      query: '',
      bodyDigest: await digestOf(new TextEncoder().encode(body)),
    });
    // The holder took the key long ago and charged nothing under its reference.
    await env.DB.prepare(
      `INSERT INTO idempotency_keys (account_id, key, fingerprint, state, created_at, locked_at, mode, charge_reference)
       VALUES (?1, 'died-early', ?2, 'running', ?3, ?3, 'live', 'never-charged')`,
    )
      .bind(caller.accountId, fingerprint, Date.now() - 600_000)
      .run();
    const retry = await verify(caller.apiKey, 'not an address', 'died-early');
    expect(retry.status).toBe(200);
    expect(await balanceOf(caller.accountId)).toBe(4);
  });
});
