// The deploy check (`npm run admin -- check`): the production set-up of docs/operations.md,
// item by item, against what a deployment declares; Turnstile among it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkProductionSettings, type DeploymentSettings } from '../edge/src/production-check.ts';
import { REPO_ROOT } from './stack/wrangler-cli.ts';

const COMPLETE: DeploymentSettings = {
  vars: {
    EMAIL_FROM: 'accounts@rcpt.example',
    TURNSTILE_SITE_KEY: '0x4AAAAAAA-site-key',
    ALLOW_PRIVATE_TARGETS: 'false',
  },
  secretNames: ['SECRETS_KEY', 'TURNSTILE_SECRET_KEY'],
  sendEmailBindings: ['EMAIL'],
};

const missingOf = (settings: DeploymentSettings) =>
  checkProductionSettings(settings)
    .filter((finding) => finding.state === 'missing')
    .map((finding) => finding.setting);

describe('checkProductionSettings', () => {
  it('finds nothing missing in the documented set-up', () => {
    expect(missingOf(COMPLETE)).toEqual([]);
  });

  it.each<[string, DeploymentSettings, string[]]>([
    [
      'no Turnstile site key',
      { ...COMPLETE, vars: { ...COMPLETE.vars, TURNSTILE_SITE_KEY: '' } },
      ['TURNSTILE_SITE_KEY'],
    ],
    ['no Turnstile secret', { ...COMPLETE, secretNames: ['SECRETS_KEY'] }, ['TURNSTILE_SECRET_KEY']],
    ['no SECRETS_KEY', { ...COMPLETE, secretNames: ['TURNSTILE_SECRET_KEY'] }, ['SECRETS_KEY']],
    [
      'the console sender',
      { ...COMPLETE, vars: { ...COMPLETE.vars, EMAIL_SENDER: 'console' } },
      ['EMAIL_SENDER'],
    ],
    ['no EMAIL binding', { ...COMPLETE, sendEmailBindings: [] }, ['EMAIL']],
    ['no EMAIL_FROM', { ...COMPLETE, vars: { ...COMPLETE.vars, EMAIL_FROM: undefined } }, ['EMAIL_FROM']],
    [
      'private targets allowed',
      { ...COMPLETE, vars: { ...COMPLETE.vars, ALLOW_PRIVATE_TARGETS: 'true' } },
      ['ALLOW_PRIVATE_TARGETS'],
    ],
    [
      'purchases half-way: a Stripe key without the webhook secret',
      { ...COMPLETE, secretNames: [...(COMPLETE.secretNames ?? []), 'STRIPE_SECRET_KEY'] },
      ['STRIPE_WEBHOOK_SECRET'],
    ],
    [
      'purchases half-way: a webhook secret without the Stripe key',
      { ...COMPLETE, secretNames: [...(COMPLETE.secretNames ?? []), 'STRIPE_WEBHOOK_SECRET'] },
      ['STRIPE_SECRET_KEY'],
    ],
    [
      'a Stripe secret as a plain var, and the library pointed at a fake',
      {
        ...COMPLETE,
        vars: { ...COMPLETE.vars, STRIPE_SECRET_KEY: 'sk_live_x', STRIPE_API_URL: 'http://127.0.0.1:12111' },
      },
      ['STRIPE_SECRET_KEY', 'STRIPE_API_URL'],
    ],
  ])('%s', (_, settings, missing) => {
    expect(missingOf(settings)).toEqual(missing);
  });

  it('says whether purchases are on or off when the secrets were looked up', () => {
    const stripe = (secretNames: string[]) =>
      checkProductionSettings({ ...COMPLETE, secretNames }).find(
        (finding) => finding.setting === 'STRIPE_SECRET_KEY',
      );
    expect(stripe(['SECRETS_KEY', 'TURNSTILE_SECRET_KEY'])).toMatchObject({
      state: 'ok',
      message: expect.stringContaining('purchases are off'),
    });
    expect(
      stripe(['SECRETS_KEY', 'TURNSTILE_SECRET_KEY', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET']),
    ).toMatchObject({ state: 'ok', message: expect.stringContaining('purchases are on') });
  });

  it('says plainly that Turnstile is not configured', () => {
    const turnstile = checkProductionSettings({ ...COMPLETE, vars: {} }).find(
      (finding) => finding.setting === 'TURNSTILE_SITE_KEY',
    );
    expect(turnstile).toMatchObject({
      state: 'missing',
      message: expect.stringContaining('Turnstile is not configured'),
    });
  });

  it('does not fail on secrets it was not asked to look up', () => {
    const findings = checkProductionSettings({ ...COMPLETE, secretNames: null });
    expect(findings.filter((finding) => finding.state === 'missing')).toEqual([]);
    expect(
      findings.filter((finding) => finding.state === 'unchecked').map((finding) => finding.setting),
    ).toEqual(['SECRETS_KEY', 'TURNSTILE_SECRET_KEY']);
  });
});

describe('npm run admin -- check', () => {
  const folder = mkdtempSync(join(tmpdir(), 'rcpt-deploy-check-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  function check(vars: Record<string, string>): { status: number | null; stdout: string } {
    const configPath = join(folder, `wrangler-${crypto.randomUUID()}.toml`);
    writeFileSync(
      configPath,
      [
        'name = "rcpt-edge"',
        `main = "${join(REPO_ROOT, 'edge/src/index.ts')}"`,
        'compatibility_date = "2026-10-01"',
        '[vars]',
        ...Object.entries(vars).map(([name, value]) => `${name} = "${value}"`),
        '[[send_email]]',
        'name = "EMAIL"',
      ].join('\n'),
    );
    const result = spawnSync(process.execPath, ['scripts/admin.ts', 'check', '--config', configPath], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true' },
    });
    return { status: result.status, stdout: result.stdout };
  }

  it('exits 1 and says so when Turnstile is not configured', () => {
    const { status, stdout } = check({ EMAIL_FROM: 'accounts@rcpt.example' });
    expect(stdout).toMatch(/^MISSING\s+TURNSTILE_SITE_KEY: Turnstile is not configured/m);
    expect(stdout).toContain('1 missing from the production set-up of docs/operations.md');
    expect(status).toBe(1);
  });

  it('exits 0 for the documented vars and bindings, saying which secrets it did not look up', () => {
    const { status, stdout } = check({
      EMAIL_FROM: 'accounts@rcpt.example',
      TURNSTILE_SITE_KEY: '0x4AAAAAAA-site-key',
    });
    expect(stdout).toMatch(/^ok\s+TURNSTILE_SITE_KEY: Turnstile is on for sign-up$/m);
    expect(stdout).toMatch(/^unchecked\s+TURNSTILE_SECRET_KEY: .*--remote/m);
    expect(stdout).toContain('the production set-up of docs/operations.md is complete');
    expect(status).toBe(0);
  });
});
