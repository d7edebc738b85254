// Single verification through the whole system: HTTP → edge → DoH stub → ProberHub →
// prober process → fake MX → verdict.
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilValue } from '../eventually.ts';
import { EXPECTED_VERDICTS } from '../world/expected-verdicts.ts';
import { DOMAINS } from '../world/zone.ts';
import { API_POLL_MS, okJson, type System, startSystem } from './harness.ts';

let system: System;

beforeAll(async () => {
  system = await startSystem();
});

afterAll(async () => {
  await system?.close();
});

interface VerifyBody {
  success: boolean;
  creditsRemaining: number;
  data: {
    email: string;
    status: string;
    subStatus: string;
    isDeliverable: boolean;
    score: number;
    checks: {
      smtpValid: boolean | null;
      isCatchAll: boolean | null;
      isDisposable: boolean;
      hasTypo: { suggested: string } | null;
    };
    meta: {
      mxHost: string | null;
      dnsType: string | null;
      cached: boolean;
      verifiedAt: string;
      verifiedVia: string | null;
    };
    retryAfterSeconds?: number;
  };
}

async function verify(
  email: string,
  options: { fresh?: boolean; timeoutMs?: number } = {},
): Promise<VerifyBody> {
  return okJson<VerifyBody>(await system.api('/api/v1/verify', { json: { email, ...options } }));
}

describe('single verification end to end', () => {
  it('serves an OpenAPI 3.0.3 document that a real validator accepts', async () => {
    const document = (await (await fetch(`${system.stack.baseUrl}/openapi.json`)).json()) as {
      openapi: string;
      info: { version: string };
    };
    expect(document.openapi).toBe('3.0.3');
    expect(document.info.version).toBe('1.0.1');
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toMatchObject({
      openapi: '3.0.3',
    });
    // OpenAPI 3.0.3 ignores `nullable` without a `type`: `allOf: [$ref, {nullable: true}]`
    // would document a field as never null. No schema may take that form.
    const ambiguous: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (Array.isArray(node)) {
        for (const [index, item] of node.entries()) walk(item, `${path}/${index}`);
      } else if (node && typeof node === 'object') {
        const allOf = (node as { allOf?: unknown[] }).allOf;
        if (allOf?.some((part) => JSON.stringify(part) === '{"nullable":true}')) ambiguous.push(path);
        for (const [key, value] of Object.entries(node)) walk(value, `${path}/${key}`);
      }
    };
    walk(document, '#');
    expect(ambiguous).toEqual([]);
  });

  // The verdict of every address of the fake world, as `npm run demo` and `npm run world` list it.
  it.each(EXPECTED_VERDICTS)('$address: $status / $subStatus ($because)', async (expected) => {
    const { data } = await verify(expected.address);
    expect({ status: data.status, subStatus: data.subStatus }).toEqual({
      status: expected.status,
      subStatus: expected.subStatus,
    });
    if (expected.verifiedVia !== undefined) expect(data.meta.verifiedVia).toBe(expected.verifiedVia);
    if (expected.isCatchAll !== undefined) expect(data.checks.isCatchAll).toBe(expected.isCatchAll);
  });

  // What the answer carries besides the verdict, for the addresses where it tells something.
  it.each<[string, Record<string, unknown>]>([
    [
      `alice@${DOMAINS.accept}`,
      {
        isDeliverable: true,
        checks: { smtpValid: true, isCatchAll: false },
        meta: { mxHost: expect.stringContaining(DOMAINS.accept) },
      },
    ],
    [`nobody@${DOMAINS.accept}`, { isDeliverable: false, checks: { smtpValid: false } }],
    [`anyone@${DOMAINS.catchall}`, { isDeliverable: false, checks: { isCatchAll: true } }],
    [
      `alice@${DOMAINS.gateway}`,
      {
        isDeliverable: true,
        checks: { smtpValid: true, isCatchAll: true },
        meta: { verifiedVia: 'tenant', mxHost: 'mx0a-00123401.pphosted.com', provider: 'proofpoint' },
      },
    ],
    [`alice@${DOMAINS.gatewayNoTenant}`, { isDeliverable: false, meta: { verifiedVia: 'mx' } }],
    [
      `bob@${DOMAINS.relayGateway}`,
      {
        isDeliverable: true,
        checks: { smtpValid: true, isCatchAll: true },
        // No registry names the relay: no provider is claimed for it.
        meta: { verifiedVia: 'tenant', mxHost: 'mailgw.selfrelayed.test', provider: null },
      },
    ],
    [`alice@${DOMAINS.greylist}`, { retryAfterSeconds: expect.any(Number) }],
    [`alice@${DOMAINS.nullmx}`, { meta: { dnsType: 'NULL_MX' } }],
    [`alice@${DOMAINS.typo}`, { checks: { hasTypo: { suggested: 'gmail.com' } } }],
    [`alice@${DOMAINS.disposable}`, { checks: { isDisposable: true } }],
  ])('%s also answers %o', async (address, details) => {
    const { data } = await verify(address);
    expect(data).toMatchObject(details);
    if (data.retryAfterSeconds !== undefined) expect(data.retryAfterSeconds).toBeGreaterThan(0);
  });

  it('charges one credit per verification and reports what is left', async () => {
    const first = await verify(`bob@${system.world.domains.accept}`);
    const second = await verify(`bob@${system.world.domains.accept}`);
    expect(second.creditsRemaining).toBe(first.creditsRemaining - 1);
  });

  it("answers smtp_unavailable, still 200, when no prober links in time, and never keeps rcpt's own failure", async () => {
    const email = `carol@${system.world.domains.accept}`;
    await system.stack.stopProber();
    let failed: VerifyBody;
    let again: VerifyBody;
    try {
      failed = await verify(email);
      expect(failed.data).toMatchObject({ status: 'unknown', subStatus: 'smtp_unavailable' });
      expect(failed.data.checks.smtpValid).toBeNull();
      // Not the account's answer: the repeat asks again (and fails again: still no prober).
      again = await verify(email);
      expect(again.data).toMatchObject({ subStatus: 'smtp_unavailable', meta: { cached: false } });
    } finally {
      await system.stack.startProber();
    }
    // Once a prober is linked, the next call is a real answer, not the failure from the cache.
    const real = await verify(email);
    expect(real.data).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    // SPEC §1: each call costs its credit, whatever it returned.
    expect(again.creditsRemaining).toBe(failed.creditsRemaining - 1);
    expect(real.creditsRemaining).toBe(again.creditsRemaining - 1);
    // The real answer is the one kept.
    expect((await verify(email)).data).toMatchObject({ status: 'deliverable', meta: { cached: true } });
  });

  it("answers a call made before the prober linked once it links, within the call's budget", async () => {
    const email = `user-late@${system.world.domains.accept}`;
    await system.stack.stopProber();
    const asked = verify(email);
    // The call waits in the hub; the prober links a moment later (its process start and hello).
    await system.stack.startProber();
    const { data } = await asked;
    expect(data).toMatchObject({
      status: 'deliverable',
      subStatus: 'accepted_email',
      meta: { cached: false },
    });
  });

  it("answers by the caller's timeoutMs from a tarpit, charged, and keeps the verdict the probe reaches later", async () => {
    const email = `budget@${DOMAINS.tarpit}`;
    const balance = async () =>
      (await okJson<{ account: { creditsRemaining: number } }>(await system.api('/api/v1/account'))).account
        .creditsRemaining;
    const before = await balance();
    const startedAt = Date.now();
    const response = await system.api('/api/v1/verify', { json: { email, timeoutMs: 2_000 } });
    const elapsedMs = Date.now() - startedAt;
    const cut = await okJson<VerifyBody>(response);
    // The tarpit never greets: only the budget can have ended the call (the prober gives up
    // on the greeting after COMMAND_TIMEOUT_MS, 3 s here). The overshoot is `npm run bench`'s.
    expect(cut.data).toMatchObject({
      status: 'unknown',
      subStatus: 'timeout_exceeded',
      checks: { mxRecords: true, smtpValid: null },
      meta: { cached: false },
    });
    // Not before the budget, less the few ms the answer itself takes once it is spent.
    expect(elapsedMs).toBeGreaterThanOrEqual(1_900);
    // SPEC §1: 1 credit whatever the status.
    expect(cut.creditsRemaining).toBe(before - 1);
    expect(await balance()).toBe(before - 1);
    // The probe goes on to the server's own answer, kept in the call's history entry.
    const requestId = response.headers.get('X-Request-Id');
    await untilValue(
      async () => {
        const { history } = await okJson<{ history: { id: string; subStatus: string | null }[] }>(
          await system.api('/api/v1/history?kind=single&limit=20'),
        );
        return history.find((entry) => entry.id === requestId)?.subStatus === 'smtp_timeout'
          ? true
          : undefined;
      },
      'the late verdict is kept',
      undefined,
      API_POLL_MS,
    );
    const next = await verify(email);
    expect(next.data).toMatchObject({ subStatus: 'smtp_timeout', meta: { cached: true } });
    expect(next.creditsRemaining).toBe(before - 2);
  });

  it('answers a repeated address from the verdict cache, marked and charged, without asking the server; fresh asks again', async () => {
    const email = `user-stable@${system.world.domains.accept}`;
    const asked = () => system.world.mx.accept?.received().filter((address) => address === email).length;
    const first = await verify(email);
    const second = await verify(email);
    expect(first.data).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(second.data).toEqual({ ...first.data, meta: { ...first.data.meta, cached: true } });
    expect(second.creditsRemaining).toBe(first.creditsRemaining - 1);
    expect(asked()).toBe(1);
    const fresh = await verify(email, { fresh: true });
    expect(fresh.data).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(fresh.data.meta.verifiedAt > first.data.meta.verifiedAt).toBe(true);
    expect(fresh.creditsRemaining).toBe(second.creditsRemaining - 1);
    expect(asked()).toBe(2);
  });
});
