import { env } from 'cloudflare:workers';
import { MAX_EVIDENCE_BYTES } from '@rcpt/shared/contract/prober';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it } from 'vitest';
import { until } from '../../../../test/eventually.ts';
import { hubOf, reportFor, startFakeProber, withEvidence } from '../../../test/fake-prober.ts';
import { balanceOf, call, newCaller } from '../../../test/fixtures.ts';
import { forgetKeyRecords } from '../../services/keys/api-keys.ts';

interface BadRequest {
  name: string;
  body?: BodyInit;
  json?: unknown;
  headers?: Record<string, string>;
  method?: string;
  path?: string;
  status: number;
  code: string;
}

const JSON_TYPE = { 'content-type': 'application/json' };
const invalidUtf8 = new Uint8Array([
  0x7b, 0x22, 0x65, 0x6d, 0x61, 0x69, 0x6c, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x40, 0x78, 0x2e, 0x79, 0x22, 0x7d,
]);

const BAD_REQUESTS: BadRequest[] = [
  { name: 'missing email', json: {}, status: 400, code: 'VALIDATION_ERROR' },
  // timeoutMs: 2,000 to 60,000 whole milliseconds (shared/src/contract/api.ts).
  ...[1_999, 60_001, 0, -5_000, 2_500.5, '5000', null, Number.MAX_SAFE_INTEGER + 2].map((timeoutMs) => ({
    name: `timeoutMs ${JSON.stringify(timeoutMs)}`,
    json: { email: 'a@example.com', timeoutMs },
    status: 400,
    code: 'VALIDATION_ERROR',
  })),
  { name: 'empty email', json: { email: '' }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'blank email', json: { email: '   ' }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'null email', json: { email: null }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'number email', json: { email: 42 }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'boolean email', json: { email: true }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'array email', json: { email: ['a@example.com'] }, status: 400, code: 'VALIDATION_ERROR' },
  {
    name: 'object email',
    json: { email: { address: 'a@example.com' } },
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: '10 KB email',
    json: { email: `${'a'.repeat(10_240)}@example.com` },
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: '513-character email',
    json: { email: `${'a'.repeat(501)}@example.com` },
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'CRLF inside',
    json: { email: 'alice\r\nRCPT TO:<x@example.com>@example.com' },
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  { name: 'trailing CRLF', json: { email: 'alice@example.com\r\n' }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'LF inside', json: { email: 'alice\n@example.com' }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'NUL inside', json: { email: 'alice\u0000@example.com' }, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'tab inside', json: { email: 'ali\tce@example.com' }, status: 400, code: 'VALIDATION_ERROR' },
  {
    name: 'extra field',
    json: { email: 'a@example.com', force: true },
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  { name: 'JSON array body', json: [{ email: 'a@example.com' }], status: 400, code: 'VALIDATION_ERROR' },
  {
    name: 'JSON string body',
    body: '"a@example.com"',
    headers: JSON_TYPE,
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  { name: 'JSON null body', body: 'null', headers: JSON_TYPE, status: 400, code: 'VALIDATION_ERROR' },
  {
    name: 'malformed JSON',
    body: '{"email": "a@example.com"',
    headers: JSON_TYPE,
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'JSON with trailing garbage',
    body: '{"email":"a@example.com"} x',
    headers: JSON_TYPE,
    status: 400,
    code: 'VALIDATION_ERROR',
  },
  { name: 'empty body', body: '', headers: JSON_TYPE, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'whitespace body', body: ' \n ', headers: JSON_TYPE, status: 400, code: 'VALIDATION_ERROR' },
  { name: 'invalid UTF-8', body: invalidUtf8, headers: JSON_TYPE, status: 400, code: 'VALIDATION_ERROR' },
  {
    name: 'text/plain',
    body: '{"email":"a@example.com"}',
    headers: { 'content-type': 'text/plain' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  { name: 'no content type', body: '{"email":"a@example.com"}', status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  {
    name: 'form encoded',
    body: 'email=a%40example.com',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'multipart',
    body: '--x\r\n\r\n--x--',
    headers: { 'content-type': 'multipart/form-data; boundary=x' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'body over 1 MB',
    body: `{"email":"a@example.com","pad":"${'x'.repeat(1024 * 1024)}"}`,
    headers: JSON_TYPE,
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  { name: 'GET on the verify path', method: 'GET', status: 405, code: 'METHOD_NOT_ALLOWED' },
  {
    name: 'PUT on the verify path',
    method: 'PUT',
    json: { email: 'a@example.com' },
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
  },
  {
    name: 'DELETE on the alias',
    method: 'DELETE',
    path: '/v1/verify',
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
  },
  {
    name: 'unknown operation',
    path: '/api/v1/verify-everything',
    json: { email: 'a@example.com' },
    status: 404,
    code: 'NOT_FOUND',
  },
];

describe('POST /api/v1/verify rejects bad input with its documented code, free of charge', () => {
  it.each(BAD_REQUESTS)('$name → $status $code', async (bad) => {
    const caller = await newCaller({ credits: 5 });
    const response = await call(bad.path ?? '/api/v1/verify', {
      method: bad.method ?? 'POST',
      key: caller.apiKey,
      json: bad.json,
      body: bad.body,
      headers: bad.headers,
    });
    expect(response.status).toBe(bad.status);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await response.json<{
      success: boolean;
      code: string;
      message: string;
      requestId: string;
    }>();
    expect(body.success).toBe(false);
    expect(body.code).toBe(bad.code);
    expect(body.message.length).toBeGreaterThan(0);
    expect(body.requestId).toBe(response.headers.get('X-Request-Id'));
    expect(await balanceOf(caller.accountId)).toBe(5);
  });

  it('answers unknown paths outside the API with a JSON 404 too', async () => {
    const response = await call('/no/such/page');
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ success: false, code: 'NOT_FOUND' });
  });
});

describe('POST /api/v1/verify charging', () => {
  it('charges exactly one credit for a verdict, whatever it is, and records it in the ledger', async () => {
    const caller = await newCaller({ credits: 3 });
    const response = await call('/api/v1/verify', { key: caller.apiKey, json: { email: 'not an address' } });
    expect(response.status).toBe(200);
    const body = await response.json<{
      success: boolean;
      creditsRemaining: number;
      data: { status: string; subStatus: string };
    }>();
    expect(body).toMatchObject({
      success: true,
      creditsRemaining: 2,
      data: { status: 'undeliverable', subStatus: 'invalid_syntax' },
    });
    expect(await balanceOf(caller.accountId)).toBe(2);
  });

  it('says plainly that rcpt could not run the check when no prober was free in time, and charges one credit', async () => {
    // One prober of capacity 1, held by a probe it never answers: the call waits for a slot
    // until its time budget runs out.
    const busy = await startFakeProber('default', () => 'ignore', 1);
    const hub = hubOf('default');
    const holding = hub.probe(
      {
        emails: ['held@accept.test'],
        domain: 'accept.test',
        mx: [{ host: 'mx.accept.test', preference: 10, ips: ['127.0.0.2'] }],
        mailFrom: 'probe@rcpt.test',
        helo: 'rcpt.test',
        timeoutMs: 5_000,
        transcript: false,
      },
      // Past the call's budget (VERIFY_TIMEOUT_MS, 3 s here); once its prober leaves, it waits
      // out the rest for another.
      5_000,
    );
    await until(
      async () => (await hub.status()).some((prober) => prober.inFlight > 0),
      'a probe is in flight',
    );
    const caller = await newCaller({ credits: 3 });
    const response = await call('/api/v1/verify', {
      key: caller.apiKey,
      json: { email: 'alice@accept.test' },
    });
    const body = await response.json<{ creditsRemaining: number; data: Record<string, unknown> }>();
    expect(body.data).toMatchObject({ status: 'unknown', subStatus: 'smtp_unavailable' });
    expect(body.data.reason).toMatch(/^rcpt could not run the SMTP check/);
    expect(body.creditsRemaining).toBe(2);
    busy.close();
    await holding;
  });

  it("answers by the caller's timeoutMs with timeout_exceeded, charged as any answer (SPEC), while the probe goes on", async () => {
    // A prober that never answers: only the caller's budget can end the call.
    const silent = await startFakeProber('default', () => 'ignore', 1);
    try {
      const caller = await newCaller({ credits: 3 });
      const startedAt = Date.now();
      const response = await call('/api/v1/verify', {
        key: caller.apiKey,
        json: { email: 'alice@accept.test', timeoutMs: 2_000 },
      });
      const elapsedMs = Date.now() - startedAt;
      const body = await response.json<{ creditsRemaining: number; data: Record<string, unknown> }>();
      expect(body.data).toMatchObject({
        status: 'unknown',
        subStatus: 'timeout_exceeded',
        checks: { mxRecords: true, smtpValid: null },
      });
      expect(body.creditsRemaining).toBe(2);
      expect(await balanceOf(caller.accountId)).toBe(2);
      // Well before the deployment's own budget (VERIFY_TIMEOUT_MS, 3 s here); the precision is
      // measured by `npm run bench`, not asserted.
      // Not before the budget, less the few ms the answer itself takes once it is spent.
      expect(elapsedMs).toBeGreaterThanOrEqual(1_900);
      expect(elapsedMs).toBeLessThan(3_000);
      expect(silent.probes).toHaveLength(1);
    } finally {
      silent.close();
    }
  });

  it('accepts a charset parameter and a +json media type', async () => {
    const caller = await newCaller({ credits: 3 });
    for (const type of ['application/json; charset=utf-8', 'application/vnd.rcpt+json']) {
      const response = await call('/api/v1/verify', {
        key: caller.apiKey,
        body: JSON.stringify({ email: 'not an address' }),
        headers: { 'content-type': type },
      });
      expect(response.status).toBe(200);
    }
  });

  it('never lets concurrent requests spend more credits than the balance', async () => {
    const caller = await newCaller({ credits: 5 });
    const responses = await Promise.all(
      Array.from({ length: 12 }, () =>
        call('/api/v1/verify', { key: caller.apiKey, json: { email: 'not an address' } }),
      ),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 402)).toHaveLength(7);
    expect(await balanceOf(caller.accountId)).toBe(0);
  });
});

describe('POST /api/v1/verify answers a repeated address from the account verdict cache', () => {
  interface Answer {
    creditsRemaining: number;
    data: { status: string; subStatus: string; meta: { cached: boolean; verifiedAt: string } };
  }

  it('marks the cached answer, charges it, and verifies again on fresh: true; a replayed key is neither', async () => {
    const prober = await startFakeProber('default', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    try {
      const caller = await newCaller({ credits: 10 });
      const email = `cache-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      const verify = async (json: unknown, headers: Record<string, string> = {}) => {
        const response = await call('/api/v1/verify', { key: caller.apiKey, json, headers });
        expect(response.status).toBe(200);
        return { body: await response.json<Answer>(), replayed: response.headers.get('Idempotent-Replayed') };
      };
      const first = await verify({ email });
      const second = await verify({ email }, { 'Idempotency-Key': 'k-1' });
      const replay = await verify({ email }, { 'Idempotency-Key': 'k-1' });
      const fresh = await verify({ email, fresh: true });

      expect(first.body.data).toMatchObject({ status: 'deliverable', meta: { cached: false } });
      expect(second.body).toMatchObject({
        creditsRemaining: 8,
        data: { status: 'deliverable', meta: { cached: true } },
      });
      expect(second.body.data.meta.verifiedAt).toBe(first.body.data.meta.verifiedAt);
      expect(replay).toEqual({ body: second.body, replayed: 'true' });
      expect(fresh.body).toMatchObject({ creditsRemaining: 7, data: { meta: { cached: false } } });
      expect(prober.probes.filter((probe) => probe.emails.includes(email))).toHaveLength(2);
      expect(await balanceOf(caller.accountId)).toBe(7);
    } finally {
      prober.close();
    }
  });
});

describe('POST /api/v1/verify with evidence', () => {
  interface EvidenceAnswer {
    data: {
      status: string;
      meta: { cached: boolean };
      evidence?: { mxHost: string; dialogue: { command: string | null; reply: { code: number } | null }[] };
    };
  }

  it('carries the session behind the answer only when asked, and never answers a kept verdict without it', async () => {
    const prober = await startFakeProber('default', (probe) =>
      withEvidence(probe, reportFor(probe, 250, '2.1.5', 'OK', 550)),
    );
    try {
      const caller = await newCaller({ credits: 10 });
      const email = `proof-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      const verify = async (json: Record<string, unknown>) => {
        const response = await call('/api/v1/verify', { key: caller.apiKey, json: { email, ...json } });
        expect(response.status).toBe(200);
        return (await response.json<EvidenceAnswer>()).data;
      };
      const plain = await verify({});
      expect(plain.evidence).toBeUndefined();
      expect(prober.probes.at(-1)?.evidence).toBeUndefined();

      // The kept verdict has no evidence: asked for, the address is verified again.
      const proven = await verify({ evidence: true });
      expect(prober.probes.at(-1)?.evidence).toBe(true);
      expect(prober.probes.filter((probe) => probe.emails.includes(email))).toHaveLength(2);
      expect(proven.meta.cached).toBe(false);
      expect(proven.evidence?.mxHost).toBe('mx.accept.test');
      expect(proven.evidence?.dialogue.map((step) => step.command)).toEqual([
        null,
        'EHLO verify.rcpt.dev',
        'MAIL FROM:<***@verify.rcpt.dev>',
        `RCPT TO:<${email}>`,
      ]);

      // Kept with its evidence now: answered again with it, and without it when not asked.
      const again = await verify({ evidence: true });
      expect(again).toMatchObject({ meta: { cached: true }, evidence: proven.evidence });
      const cachedPlain = await verify({});
      expect(cachedPlain.meta.cached).toBe(true);
      expect(cachedPlain.evidence).toBeUndefined();
      expect(prober.probes.filter((probe) => probe.emails.includes(email))).toHaveLength(2);
    } finally {
      prober.close();
    }
  });

  it('counts the evidence at its bound against the storage budget of the day', async () => {
    const prober = await startFakeProber('default', (probe) =>
      withEvidence(probe, reportFor(probe, 250, '2.1.5', 'OK', 550)),
    );
    try {
      const stored = async (evidence: boolean) => {
        const caller = await newCaller({ credits: 3 });
        const email = `bytes-${crypto.randomUUID().slice(0, 8)}@accept.test`;
        await call('/api/v1/verify', { key: caller.apiKey, json: { email, evidence } });
        const account = await (await call('/api/v1/account', { key: caller.apiKey })).json<{
          account: { usage: { storage: { usedBytesToday: number } } };
        }>();
        return account.account.usage.storage.usedBytesToday;
      };
      expect((await stored(true)) - (await stored(false))).toBe(MAX_EVIDENCE_BYTES);
    } finally {
      prober.close();
    }
  });

  it('refuses an evidence flag that is not a boolean', async () => {
    const caller = await newCaller({ credits: 3 });
    const response = await call('/api/v1/verify', {
      key: caller.apiKey,
      json: { email: 'alice@accept.test', evidence: 'yes' },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(await balanceOf(caller.accountId)).toBe(3);
  });
});

describe('POST /api/v1/verify for an account with probers of its own', () => {
  interface Answer {
    data: { status: string; subStatus: string };
  }

  it("keeps the call off the shared fleet while the account's fallback is off, and lets it on again when on", async () => {
    const shared = await startFakeProber('default', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    try {
      const caller = await newCaller({ credits: 3 });
      // As `npm run admin -- shared-fleet` does: D1, then the edge told to read the key again.
      const setFallback = async (allowed: boolean) => {
        await env.DB.prepare('UPDATE accounts SET shared_fleet_fallback = ?1 WHERE id = ?2')
          .bind(allowed ? 1 : 0, caller.accountId)
          .run();
        await forgetKeyRecords(env.KEY_LIMITER, [await hashSecret(caller.apiKey)]);
      };
      await setFallback(false);
      // No prober of its own is linked: the call waits its budget (VERIFY_TIMEOUT_MS) for one.
      const alone = await call('/api/v1/verify', {
        key: caller.apiKey,
        json: { email: 'alice@accept.test' },
      });
      expect((await alone.json<Answer>()).data).toMatchObject({
        status: 'unknown',
        subStatus: 'smtp_unavailable',
      });
      expect(shared.probes).toHaveLength(0);
      await setFallback(true);
      const helped = await call('/api/v1/verify', { key: caller.apiKey, json: { email: 'bob@accept.test' } });
      expect((await helped.json<Answer>()).data).toMatchObject({ subStatus: 'accepted_email' });
      expect(shared.probes).toHaveLength(1);
    } finally {
      shared.close();
    }
  });
});
