// Single verification through the whole system: HTTP → edge → DoH stub → ProberHub →
// prober process → fake MX → verdict.
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type System, startSystem } from './harness.ts';

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
    meta: { mxHost: string | null; dnsType: string | null };
    retryAfterSeconds?: number;
  };
}

async function verify(email: string): Promise<VerifyBody> {
  const response = await system.api('/api/v1/verify', { json: { email } });
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json() as Promise<VerifyBody>;
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

  it('deliverable: a listed mailbox is accepted', async () => {
    const { data } = await verify(`alice@${system.world.domains.accept}`);
    expect(data).toMatchObject({ status: 'deliverable', subStatus: 'accepted_email', isDeliverable: true });
    expect(data.checks).toMatchObject({ smtpValid: true, isCatchAll: false });
    expect(data.meta.mxHost).toContain(system.world.domains.accept);
  });

  it('undeliverable: an unknown mailbox gets 550 5.1.1', async () => {
    const { data } = await verify(`nobody@${system.world.domains.accept}`);
    expect(data).toMatchObject({
      status: 'undeliverable',
      subStatus: 'mailbox_not_found',
      isDeliverable: false,
    });
    expect(data.checks.smtpValid).toBe(false);
  });

  it('catch-all: a random address is accepted too', async () => {
    const { data } = await verify(`anyone@${system.world.domains.catchall}`);
    expect(data).toMatchObject({ status: 'risky', subStatus: 'catch_all', isDeliverable: false });
    expect(data.checks.isCatchAll).toBe(true);
  });

  it('greylisted: unknown with a retry hint, not a bad mailbox', async () => {
    const { data } = await verify(`alice@${system.world.domains.greylist}`);
    expect(data).toMatchObject({ status: 'unknown', subStatus: 'greylisted' });
    expect(data.retryAfterSeconds).toBeGreaterThan(0);
  });

  it.each(['rbl', 'policy'])(
    'policy block (%s): unknown / antispam_blocked, never undeliverable',
    async (behaviour) => {
      const { data } = await verify(`alice@${system.world.domains[behaviour]}`);
      expect(data).toMatchObject({ status: 'unknown', subStatus: 'antispam_blocked' });
    },
  );

  it('null MX: the domain accepts no mail', async () => {
    const { data } = await verify('alice@nullmx.test');
    expect(data).toMatchObject({ status: 'undeliverable', subStatus: 'does_not_accept_mail' });
    expect(data.meta.dnsType).toBe('NULL_MX');
  });

  it('typo of a provider whose domain does not exist: undeliverable / possible_typo with a suggestion', async () => {
    const { data } = await verify('alice@gmial.com');
    expect(data).toMatchObject({ status: 'undeliverable', subStatus: 'possible_typo' });
    expect(data.checks.hasTypo?.suggested).toBe('gmail.com');
  });

  it('disposable: risky / disposable', async () => {
    const { data } = await verify('someone@mailinator.com');
    expect(data).toMatchObject({ status: 'risky', subStatus: 'disposable' });
    expect(data.checks.isDisposable).toBe(true);
  });

  it('charges one credit per verification and reports what is left', async () => {
    const first = await verify(`bob@${system.world.domains.accept}`);
    const second = await verify(`bob@${system.world.domains.accept}`);
    expect(second.creditsRemaining).toBe(first.creditsRemaining - 1);
  });

  it('answers smtp_unavailable, still 200, when no prober is connected', async () => {
    await system.stack.stopProber();
    try {
      const { data } = await verify(`carol@${system.world.domains.accept}`);
      expect(data).toMatchObject({ status: 'unknown', subStatus: 'smtp_unavailable' });
      expect(data.checks.smtpValid).toBeNull();
    } finally {
      await system.stack.startProber();
    }
    const { data } = await verify(`carol@${system.world.domains.accept}`);
    expect(data.status).toBe('deliverable');
  });
});
