// Storage that cannot be filled for free, and sandbox keys that stay in the sandbox, through the
// whole system: the storage budget a day counts every write (docs/money.md, "Quotas and free
// work"), refusals are not kept under Idempotency-Keys, and keys and webhooks are per key mode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../scripts/stack/operator.ts';
import { newAccount, okJson, type System, sqlRows, startSystem } from './harness.ts';
import { verifiedEvent, WebhookReceiver } from './webhook-receiver.ts';

/** The budget of this system: a 10 MB list does not fit, a 1 MB one does. */
const BUDGET = 8_000_000;

let system: System;
let testKey: string;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  await receiver.listen();
  // The account's budget grows with the credits it holds, up to QUOTA_STORAGE_BYTES_PER_DAY: with
  // 10,000 credits it is that most (docs/money.md, "Quotas and free work").
  system = await startSystem({ credits: 10_000, vars: { QUOTA_STORAGE_BYTES_PER_DAY: String(BUDGET) } });
  testKey = (
    await createApiKey(system.stack.d1, { accountId: system.stack.accountId, name: 'sandbox', mode: 'test' })
  ).secret;
});

afterAll(async () => {
  await system?.close();
  await new Promise((resolve) => receiver.server.close(resolve));
});

interface QuotaBody {
  code: string;
  details: { quota: string; limit: number; used: number; requested: number; resetAt: string };
}
interface AccountBody {
  account: {
    creditsRemaining: number;
    usage: { storage: { usedBytesToday: number; limitBytesPerDay: number } };
  };
}

const note = 'n'.repeat(1_000);
/** An IP-literal address (valid, charged, answered without DNS or SMTP, refunded) and `rows` invalid rows of 1 KB. */
const ipLiteralList = (rows: number) =>
  `email,note\na@[192.0.2.1],${note}\n${Array.from({ length: rows }, (_, i) => `not an address ${i},${note}`).join('\n')}\n`;

function uploadCsv(csv: string, key?: string, headers: Record<string, string> = {}): Promise<Response> {
  return system.api('/api/v1/bulk/upload', {
    body: csv,
    headers: { 'content-type': 'text/csv', ...headers },
    ...(key ? { key } : {}),
  });
}

const account = async (key?: string) =>
  (await okJson<AccountBody>(await system.api('/api/v1/account', key ? { key } : {}))).account;

describe('the storage budget', () => {
  it('refuses a 10 MB list of one refunded address and 9,999 free rows; a smaller one is counted by its bytes', async () => {
    const before = await account();
    expect(before.usage.storage).toMatchObject({ usedBytesToday: 0, limitBytesPerDay: BUDGET });

    const refused = await uploadCsv(ipLiteralList(9_999));
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as QuotaBody;
    expect(body).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'storage_bytes_per_day', limit: BUDGET },
    });
    expect(body.details.requested).toBeGreaterThan(10_000_000);
    expect(Number(refused.headers.get('Retry-After'))).toBeGreaterThan(0);
    // Nothing charged, nothing stored.
    const after = await account();
    expect(after.creditsRemaining).toBe(before.creditsRemaining);
    expect(after.usage.storage.usedBytesToday).toBe(0);

    await okJson(await uploadCsv(ipLiteralList(999)));
    const used = (await account()).usage.storage.usedBytesToday;
    expect(used).toBeGreaterThan(1_000_000);
    expect(used).toBeLessThan(2_000_000);
  });

  it('keeps no refusal under an Idempotency-Key: a zero-balance account stores nothing per new key', async () => {
    const { accountId, key } = await newAccount(system, 0);
    for (let attempt = 0; attempt < 25; attempt++) {
      const response = await system.api('/api/v1/verify', {
        key,
        json: { email: 'someone@example.test' },
        headers: { 'Idempotency-Key': `new-key-${attempt}` },
      });
      expect(response.status).toBe(402);
    }
    const [row] = await sqlRows<{ n: number }>(
      system,
      `SELECT COUNT(*) AS n FROM idempotency_keys WHERE account_id = '${accountId}'`,
    );
    expect(row?.n).toBe(0);
    expect((await account(key)).usage.storage.usedBytesToday).toBe(0);
  });
});

describe('test keys stay in the sandbox', () => {
  interface VerifyBody {
    data: { email: string; meta: { verifiedVia: string | null } };
  }

  it('a test key replaying a live request’s key and body gets a sandbox answer, and the reverse', async () => {
    const request = (key: string | undefined, idempotencyKey: string) =>
      system.api('/api/v1/verify', {
        ...(key ? { key } : {}),
        json: { email: 'deliverable@example.test' },
        headers: { 'Idempotency-Key': idempotencyKey },
      });
    const live = await okJson<VerifyBody>(await request(undefined, 'shared-by-modes'));
    expect(live.data.meta.verifiedVia).not.toBe('sandbox');
    const sandboxResponse = await request(testKey, 'shared-by-modes');
    expect(sandboxResponse.headers.get('Idempotent-Replayed')).toBeNull();
    expect((await okJson<VerifyBody>(sandboxResponse)).data.meta.verifiedVia).toBe('sandbox');

    const sandboxFirst = await okJson<VerifyBody>(await request(testKey, 'sandbox-first'));
    expect(sandboxFirst.data.meta.verifiedVia).toBe('sandbox');
    const liveAfter = await request(undefined, 'sandbox-first');
    expect(liveAfter.headers.get('Idempotent-Replayed')).toBeNull();
    expect((await okJson<VerifyBody>(liveAfter)).data.meta.verifiedVia).not.toBe('sandbox');
  });

  it('a sandbox job sends no webhook, not even to the default URL; a live job’s is signed with the live secret', async () => {
    const { secret } = await okJson<{ secret: string }>(
      await system.api('/api/v1/webhooks/secret', { method: 'POST' }),
    );
    await okJson(await system.api('/api/v1/webhooks', { method: 'PUT', json: { url: receiver.url() } }));

    const withUrl = await system.api('/api/v1/bulk/upload', {
      key: testKey,
      json: { emails: ['deliverable@example.test'], webhookUrl: receiver.url() },
    });
    expect(withUrl.status).toBe(400);
    const sandboxJob = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', {
        key: testKey,
        json: { emails: ['deliverable@example.test'] },
      }),
    );
    const sandboxStatus = await okJson<{ job: { status: string } }>(
      await system.api(`/api/v1/bulk/status/${sandboxJob.jobId}`, { key: testKey }),
    );
    expect(sandboxStatus.job.status).toBe('completed');

    // A live job after it: its event arrives, signed with the account's (live) secret.
    const liveJob = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { json: { emails: [`alice@${system.world.domains.accept}`] } }),
    );
    const event = verifiedEvent<{ type: string }>(
      secret,
      await receiver.next(liveJob.jobId, 'job.completed'),
    );
    expect(event.type).toBe('job.completed');

    const { deliveries } = await okJson<{ deliveries: { eventType: string; jobId?: string | null }[] }>(
      await system.api('/api/v1/webhooks/deliveries'),
    );
    expect(deliveries.map((delivery) => JSON.stringify(delivery)).join('\n')).toContain(liveJob.jobId);
    expect(deliveries.map((delivery) => JSON.stringify(delivery)).join('\n')).not.toContain(sandboxJob.jobId);
    expect(receiver.deliveries.some((delivery) => delivery.body.includes(sandboxJob.jobId))).toBe(false);
  });
});
