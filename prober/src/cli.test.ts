import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessRun, runNodeScript } from '../../test/node-process.ts';
import { EXPECTED_VERDICTS } from '../../test/world/expected-verdicts.ts';
import { type MailWorld, startWorld } from '../../test/world/index.ts';

// `rcpt-prober verify` as a real process against the fake mail world: the system resolver
// pointed at the world's UDP DNS (DNS_SERVERS), SMTP to its fake MX hosts, configured as the
// end-to-end suite configures the edge and its prober.

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

let world: MailWorld;

beforeAll(async () => {
  // Greylisting stays in force for the whole run, as in the end-to-end suite.
  world = await startWorld({ greylistDelayMs: 60_000 });
});

afterAll(async () => {
  await world?.close();
});

/** What the end-to-end suite gives the prober behind the API, plus the world's DNS. */
function worldEnv(): Record<string, string | undefined> {
  return {
    PATH: process.env.PATH,
    DNS_SERVERS: world.dnsServer,
    SMTP_PORT: String(world.smtpPort),
    ALLOW_PRIVATE_TARGETS: 'true',
    COMMAND_TIMEOUT_MS: '3000',
    CONNECT_TIMEOUT_MS: '2000',
    HELO_NAME: 'verify.rcpt.dev',
    MAIL_FROM: 'probe@verify.rcpt.dev',
  };
}

function verify(args: string[], env = worldEnv()): Promise<ProcessRun> {
  return runNodeScript(CLI, ['verify', ...args], { env });
}

// Each case starts a Node process that loads the verification core: seconds on a busy machine.
const PROCESS_TIMEOUT = { timeout: 120_000 };

describe('rcpt-prober verify', PROCESS_TIMEOUT, () => {
  it('says deliverable, as JSON, for a mailbox the server accepts, and exits 0', async () => {
    const { code, stdout } = await verify([`alice@${world.domains.accept}`, '--json']);
    const output = JSON.parse(stdout);
    expect(output.result).toMatchObject({
      email: 'alice@accept.test',
      status: 'deliverable',
      isDeliverable: true,
    });
    expect(output.dns).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.accept.test', preference: 10, ips: ['127.0.0.10'] }],
    });
    expect(output.probe.perAddress[0].reply.code).toBe(250);
    expect(output.probe.session.transcript).toBeUndefined();
    expect(code).toBe(0);
  });

  it('says undeliverable for a mailbox the server rejects, prints the transcript, and exits 1', async () => {
    const { code, stdout } = await verify([`nobody@${world.domains.accept}`, '--transcript']);
    expect(stdout).toMatch(/^nobody@accept\.test: undeliverable \/ mailbox_not_found/);
    expect(stdout).toMatch(/RCPT nobody@accept\.test: 550 5\.1\.1 /);
    expect(stdout).toContain('SMTP transcript:');
    expect(stdout).toMatch(/RCPT TO:<nobody@accept\.test>/);
    expect(code).toBe(1);
  });

  it('calls an MX on a private address unroutable unless ALLOW_PRIVATE_TARGETS, as the API does', async () => {
    const { ALLOW_PRIVATE_TARGETS: _allowed, ...env } = worldEnv();
    const { stdout } = await verify([`alice@${world.domains.accept}`, '--json'], env);
    expect(JSON.parse(stdout).result).toMatchObject({
      status: 'undeliverable',
      subStatus: 'unroutable_ip_address',
    });
  });

  it('says which tenant behind a catch-all gateway answered, and how it was found', async () => {
    const { code, stdout } = await verify([`nobody@${world.domains.gateway}`]);
    expect(stdout).toMatch(/^nobody@gatewayed\.test: undeliverable \/ mailbox_not_found/);
    expect(stdout).toContain('catch-all yes');
    expect(stdout).toContain('verified via tenant');
    expect(stdout).toContain(
      'tenant microsoft at gatewayed-test.mail.protection.outlook.com (SPF include:spf.protection.outlook.com)',
    );
    expect(stdout).toMatch(
      /tenant RCPT nobody@gatewayed\.test: 550 5\.1\.10 RESOLVER\.ADR\.RecipientNotFound/,
    );
    expect(code).toBe(1);
  });

  it('says why no tenant was found behind a catch-all gateway', async () => {
    const { code, stdout } = await verify([`alice@${world.domains.gatewayNoTenant}`]);
    expect(stdout).toMatch(/^alice@untenanted\.test: risky \/ catch_all/);
    expect(stdout).toContain('no tenant behind the gateway: no microsoft or google tenant signal');
    expect(code).toBe(3);
  });

  it('exits 2 on a usage or configuration error', async () => {
    expect((await verify([])).code).toBe(2);
    const badFlag = await verify(['alice@accept.test', '--loud']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("Unknown option '--loud'");
  });
});

describe(
  'rcpt-prober verify gives the verdict the API gives, for every address of the world',
  PROCESS_TIMEOUT,
  () => {
    // The end-to-end suite holds the API to the same table; a few addresses at a time
    // (vitest's maxConcurrency).
    it.concurrent.each(EXPECTED_VERDICTS)(
      '$address: $status / $subStatus',
      async ({ address, status, subStatus, verifiedVia, isCatchAll }) => {
        const { stdout, stderr } = await verify([address, '--json', '--timeout-ms', '8000']);
        expect(stderr).toBe('');
        const { result } = JSON.parse(stdout);
        expect({ status: result.status, subStatus: result.subStatus }).toEqual({ status, subStatus });
        if (verifiedVia !== undefined) expect(result.meta.verifiedVia).toBe(verifiedVia);
        if (isCatchAll !== undefined) expect(result.checks.isCatchAll).toBe(isCatchAll);
      },
    );
  },
);
