// A prober with three egresses (SOURCE_ADDRESSES=127.0.0.1,127.0.0.2,127.0.0.3) checks their
// health at start with the world's resolver: 127.0.0.2 is listed on the world's Spamhaus ZEN
// zone, and 127.0.0.3's PTR name does not resolve back to it. From the first probe — before any
// server refuses anything — the listed egress carries none at all, the one without
// forward-confirmed reverse DNS none to Microsoft, the verdicts are right, and the operator's view
// (HTTP and `npm run admin -- fleet`) shows the listing and the mismatch.
import { Buffer } from 'node:buffer';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperatorToken } from '../../scripts/stack/operator.ts';
import { REPO_ROOT } from '../../scripts/stack/wrangler-cli.ts';
import { untilValue } from '../eventually.ts';
import { companyList, EGRESS_PTR, EXPECTED_VERDICTS, PROVIDER_DOMAINS } from '../world/index.ts';
import { jobWhen, okJson, type System, startSystem, subStatusesOf } from './harness.ts';

const [CLEAN, LISTED, MISMATCH] = EGRESS_PTR;
let system: System;
/** The operator's webhook: every alert the edge posts, as received. */
const alerts: { headers: Record<string, string>; body: string }[] = [];
const OPERATOR_SECRET = `whsec_${Buffer.from('egress health e2e operator secret').toString('base64')}`;
let operatorHook: Server;

beforeAll(async () => {
  operatorHook = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
      );
      alerts.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => operatorHook.listen(0, '127.0.0.1', resolve));
  const { port } = operatorHook.address() as AddressInfo;
  system = await startSystem({
    credits: 5_000,
    vars: {
      OPERATOR_WEBHOOK_URL: `http://127.0.0.1:${port}/alerts`,
      OPERATOR_WEBHOOK_SECRET: OPERATOR_SECRET,
    },
    world: {
      zenListed: [LISTED.address],
      // The hosts that would refuse it, were it ever asked from: their refusals are counted.
      companies: { domains: 8, hosts: 4, blocklisted: { clients: [LISTED.address], hosts: [1, 2, 3, 4] } },
      blocklistedAtProvider: [LISTED.address],
    },
    proberEnv: {
      SOURCE_ADDRESSES: EGRESS_PTR.map(({ address, name }) => `${address}=${name}`).join(','),
    },
  });
});

afterAll(async () => {
  await system?.close();
  operatorHook?.close();
});

interface HealthView {
  address: string | null;
  ptr: string | null;
  fcrdns: string;
  heloMatches: boolean | null;
  listings: { zone: string; codes: string[]; meaning: string }[];
  port25: string;
}

interface FleetBody {
  regions: { probers: { state: string; egresses: { id: string; health: HealthView | null }[] }[] }[];
}

describe('egress health before the first refusal', () => {
  it('keeps the ZEN-listed egress from every probe and the PTR mismatch from Microsoft; the view shows both', async () => {
    const companies = companyList({ count: 200, domains: 8 });
    const tenantRows = EXPECTED_VERDICTS.filter((row) => row.verifiedVia === 'tenant');
    const atProvider = PROVIDER_DOMAINS.flatMap((domain) => [1, 2, 3].map((n) => `user${n}@${domain}`));
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', {
        json: { emails: [...companies, ...tenantRows].map((row) => row.address).concat(atProvider) },
      }),
    );
    const job = await jobWhen(system, jobId, (job) => job.status !== 'processing', {
      what: 'the job to complete',
    });
    expect(job.status).toBe('completed');

    const found = await subStatusesOf(system, jobId);
    const wrong = [...companies, ...tenantRows].filter((row) => found.get(row.address) !== row.subStatus);
    expect(wrong.map((row) => `${row.address}: ${found.get(row.address)}`)).toEqual([]);
    expect(atProvider.filter((email) => found.get(email) === 'antispam_blocked')).toEqual([]);

    // Not one session from the listed egress, so not one refusal: it was never asked from.
    const servers = Object.values(system.world.mx);
    const sessionsFrom = (address: string) => servers.reduce((sum, mx) => sum + mx.sessionsFrom(address), 0);
    expect(sessionsFrom(LISTED.address)).toBe(0);
    expect(servers.reduce((sum, mx) => sum + mx.stats().blocklisted, 0)).toBe(0);
    // The mismatched one worked, but never at Microsoft's host (the tenant behind the gateways).
    expect(sessionsFrom(MISMATCH.address)).toBeGreaterThan(0);
    const tenant = system.world.mx.tenant;
    expect(tenant?.sessionsFrom(MISMATCH.address)).toBe(0);
    expect(tenant?.sessionsFrom(CLEAN.address)).toBeGreaterThan(0);

    const token = await createOperatorToken(system.stack.d1, { name: 'e2e health operator' });
    const view = await untilValue(
      async () => {
        const response = await fetch(`${system.stack.baseUrl}/internal/fleet`, {
          headers: { authorization: `Bearer ${token.secret}` },
        });
        const body = (await response.json()) as FleetBody;
        const egresses = body.regions
          .flatMap((region) => region.probers)
          .flatMap((prober) => prober.egresses);
        return egresses.length === 3 && egresses.every((egress) => egress.health) ? egresses : undefined;
      },
      'the health checks to reach the operator view',
      undefined,
      250,
    );
    const healthOf = (address: string) => view.find((egress) => egress.id === address)?.health;
    expect(healthOf(CLEAN.address)).toMatchObject({
      ptr: CLEAN.name,
      fcrdns: 'pass',
      heloMatches: true,
      listings: [],
    });
    expect(healthOf(LISTED.address)).toMatchObject({
      ptr: LISTED.name,
      fcrdns: 'pass',
      listings: [{ zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: expect.stringMatching(/^SBL/) }],
    });
    expect(healthOf(MISMATCH.address)).toMatchObject({ ptr: MISMATCH.name, fcrdns: 'fail', listings: [] });

    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['scripts/admin.ts', 'fleet', '--edge', system.stack.baseUrl],
      { cwd: REPO_ROOT, env: { ...process.env, RCPT_OPERATOR_TOKEN: token.secret } },
    );
    expect(stdout).toContain(`${LISTED.address} PTR ${LISTED.name}, FCrDNS pass, HELO = PTR`);
    expect(stdout).toContain('LISTED on zen.spamhaus.org (127.0.0.2): SBL');
    expect(stdout).toContain(`${MISMATCH.address} PTR ${MISMATCH.name}, FCrDNS fail`);
    // The prober logged each unhealthy egress as an event an operator can alert on.
    expect(system.logs.some((line) => line.includes('"event":"egress_unhealthy"'))).toBe(true);
  });

  it('posts the listing and the reverse-DNS mismatch to the operator webhook, signed; the view lists them', async () => {
    type Alert = { type: string; data: { egress: string; listing?: { zone: string }; ptr?: string } };
    const received = await untilValue(
      async () => {
        const verified = alerts.map(
          ({ headers, body }) => new Webhook(OPERATOR_SECRET).verify(body, headers) as Alert,
        );
        const listed = verified.find(
          (alert) => alert.type === 'egress.listed' && alert.data.egress === LISTED.address,
        );
        const mismatch = verified.find(
          (alert) => alert.type === 'egress.reverse_dns_failed' && alert.data.egress === MISMATCH.address,
        );
        return listed && mismatch ? { listed, mismatch } : undefined;
      },
      'the alerts to reach the operator webhook',
      undefined,
      250,
    );
    expect(received.listed.data.listing).toMatchObject({ zone: 'zen.spamhaus.org' });
    expect(received.mismatch.data.ptr).toBe(MISMATCH.name);
    // Nothing alerted of the clean egress.
    const verified = alerts.map(
      ({ headers, body }) => new Webhook(OPERATOR_SECRET).verify(body, headers) as Alert,
    );
    expect(verified.filter((alert) => alert.data.egress === CLEAN.address)).toEqual([]);

    const token = await createOperatorToken(system.stack.d1, { name: 'e2e alerts operator' });
    const response = await fetch(`${system.stack.baseUrl}/internal/fleet`, {
      headers: { authorization: `Bearer ${token.secret}` },
    });
    const { alerts: shown } = (await response.json()) as {
      alerts: { type: string; subject: string; delivery: string }[];
    };
    expect(shown).toContainEqual(
      expect.objectContaining({ type: 'egress.listed', subject: LISTED.address, delivery: 'delivered' }),
    );
    expect(shown).toContainEqual(
      expect.objectContaining({ type: 'egress.reverse_dns_failed', subject: MISMATCH.address }),
    );
  });
});
