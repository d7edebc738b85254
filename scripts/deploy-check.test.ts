// The deploy check (`npm run admin -- check`): the production set-up of docs/operations.md,
// item by item, against what a deployment declares; Turnstile among it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkProductionSettings, type DeploymentSettings } from '../edge/src/production-check.ts';
import { REPO_ROOT } from './stack/wrangler-cli.ts';

const DATABASE_ID = '4b2f1c7e-93d1-4c55-8d0e-6f1a2b3c4d5e';

const COMPLETE: DeploymentSettings = {
  vars: {
    EMAIL_FROM: 'accounts@rcpt.example',
    TURNSTILE_SITE_KEY: '0x4AAAAAAA-site-key',
    ALLOW_PRIVATE_TARGETS: 'false',
    HELO_NAME: 'probe1.mailcheck.acme.io',
    MAIL_FROM: 'verify@mailcheck.acme.io',
    PROBER_REGIONS: 'eu:weur,us',
  },
  secretNames: ['SECRETS_KEY', 'TURNSTILE_SECRET_KEY'],
  sendEmailBindings: ['EMAIL'],
  d1Databases: [{ binding: 'DB', databaseId: DATABASE_ID }],
};

const missingOf = (settings: DeploymentSettings, proberRegions?: string[]) =>
  checkProductionSettings(settings, { proberRegions })
    .filter((finding) => finding.state === 'missing')
    .map((finding) => finding.setting);

describe('checkProductionSettings', () => {
  it('finds nothing missing in the documented set-up', () => {
    expect(missingOf(COMPLETE, ['eu', 'us'])).toEqual([]);
  });

  it.each<[string, DeploymentSettings['d1Databases']]>([
    ["wrangler.toml's placeholder", [{ binding: 'DB', databaseId: '00000000-0000-0000-0000-000000000000' }]],
    ['no id', [{ binding: 'DB', databaseId: undefined }]],
    ['a name instead of an id', [{ binding: 'DB', databaseId: 'rcpt' }]],
    ['no DB binding', [{ binding: 'OTHER', databaseId: DATABASE_ID }]],
  ])('fails a database that was never created: %s', (_, d1Databases) => {
    expect(missingOf({ ...COMPLETE, d1Databases })).toEqual(['DB']);
  });

  it("fails a shard's database that was never created, as the directory's", () => {
    const d1Databases = [
      { binding: 'DB', databaseId: DATABASE_ID },
      { binding: 'DB_SHARD_1', databaseId: '00000000-0000-0000-0000-000000000001' },
    ];
    expect(missingOf({ ...COMPLETE, d1Databases })).toEqual(['DB_SHARD_1']);
    const created = [d1Databases[0], { binding: 'DB_SHARD_1', databaseId: DATABASE_ID.replace(/^./, 'b') }];
    expect(missingOf({ ...COMPLETE, d1Databases: created as DeploymentSettings['d1Databases'] })).toEqual([]);
  });

  it.each<[Record<string, string | undefined>, string[]]>([
    [{ HELO_NAME: 'verify.rcpt.dev', MAIL_FROM: 'probe@verify.rcpt.dev' }, ['HELO_NAME', 'MAIL_FROM']],
    [{ HELO_NAME: 'probe.example.com' }, ['HELO_NAME']],
    [{ HELO_NAME: 'mx.acme.test' }, ['HELO_NAME']],
    [{ MAIL_FROM: 'verify@example.org' }, ['MAIL_FROM']],
    [{ MAIL_FROM: 'verify' }, ['MAIL_FROM']],
    [{ HELO_NAME: undefined, MAIL_FROM: undefined }, ['HELO_NAME', 'MAIL_FROM']],
  ])('fails an example probing identity: %j', (vars, missing) => {
    expect(missingOf({ ...COMPLETE, vars: { ...COMPLETE.vars, ...vars } })).toEqual(missing);
  });

  it("fails a prober's region the edge does not list, naming the ones it does", () => {
    const findings = checkProductionSettings(COMPLETE, { proberRegions: ['eu', 'eu-west'] });
    expect(findings.filter((finding) => finding.setting === 'PROBER_REGIONS')).toEqual([
      { setting: 'PROBER_REGIONS', state: 'ok', message: 'probers of region "eu" are sent work' },
      {
        setting: 'PROBER_REGIONS',
        state: 'missing',
        message: expect.stringContaining('region "eu-west" is not in PROBER_REGIONS ("eu,us")'),
      },
    ]);
    // Unset, the edge's regions are `default` (or PROBER_REGION alone), as the edge reads them.
    const { PROBER_REGIONS: _, ...withoutRegions } = COMPLETE.vars;
    expect(missingOf({ ...COMPLETE, vars: withoutRegions }, ['default'])).toEqual([]);
    expect(missingOf({ ...COMPLETE, vars: withoutRegions }, ['eu'])).toEqual(['PROBER_REGIONS']);
    expect(missingOf({ ...COMPLETE, vars: { ...withoutRegions, PROBER_REGION: 'eu' } }, ['eu'])).toEqual([]);
    expect(missingOf({ ...COMPLETE, vars: { ...COMPLETE.vars, PROBER_REGIONS: 'eu:mars' } })).toEqual([
      'PROBER_REGIONS',
    ]);
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
    ).toEqual(['SECRETS_KEY', 'PROBER_REGIONS', 'TURNSTILE_SECRET_KEY']);
  });
});

describe('npm run admin -- check', () => {
  const folder = mkdtempSync(join(tmpdir(), 'rcpt-deploy-check-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  const IDENTITY = { HELO_NAME: 'probe1.mailcheck.acme.io', MAIL_FROM: 'verify@mailcheck.acme.io' };

  function check(
    vars: Record<string, string>,
    options: { databaseId?: string; args?: string[] } = {},
  ): { status: number | null; stdout: string } {
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
        '[[d1_databases]]',
        'binding = "DB"',
        'database_name = "rcpt"',
        `database_id = "${options.databaseId ?? DATABASE_ID}"`,
      ].join('\n'),
    );
    const args = ['scripts/admin.ts', 'check', '--config', configPath, ...(options.args ?? [])];
    const result = spawnSync(process.execPath, args, {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true' },
    });
    return { status: result.status, stdout: result.stdout };
  }

  it('exits 1 and says so when Turnstile is not configured', () => {
    const { status, stdout } = check({ EMAIL_FROM: 'accounts@rcpt.example', ...IDENTITY });
    expect(stdout).toMatch(/^MISSING\s+TURNSTILE_SITE_KEY: Turnstile is not configured/m);
    expect(stdout).toContain('1 missing from the production set-up of docs/operations.md');
    expect(status).toBe(1);
  });

  it('exits 0 for the documented vars and bindings, saying which secrets it did not look up', () => {
    const { status, stdout } = check({
      EMAIL_FROM: 'accounts@rcpt.example',
      TURNSTILE_SITE_KEY: '0x4AAAAAAA-site-key',
      ...IDENTITY,
    });
    expect(stdout).toMatch(/^ok\s+TURNSTILE_SITE_KEY: Turnstile is on for sign-up$/m);
    expect(stdout).toMatch(/^unchecked\s+TURNSTILE_SECRET_KEY: .*--remote/m);
    expect(stdout).toContain('the production set-up of docs/operations.md is complete');
    expect(status).toBe(0);
  });

  it("exits 1 for the repository's own wrangler.toml: a placeholder database, the example probing identity, an unlisted region", () => {
    const result = spawnSync(process.execPath, ['scripts/admin.ts', 'check', '--region', 'eu-west'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true' },
    });
    expect(result.stdout).toMatch(
      /^MISSING\s+DB: the D1 binding DB names database_id "00000000-0000-0000-0000-000000000000", a placeholder/m,
    );
    expect(result.stdout).toMatch(
      /^MISSING\s+DB_SHARD_1: the D1 binding DB_SHARD_1 names database_id "00000000-0000-0000-0000-000000000001", a placeholder: run npx wrangler d1 create rcpt-shard-1/m,
    );
    expect(result.stdout).toMatch(/^MISSING\s+HELO_NAME: HELO_NAME is "verify.rcpt.dev", an example name/m);
    expect(result.stdout).toMatch(/^MISSING\s+MAIL_FROM: MAIL_FROM is "probe@verify.rcpt.dev"/m);
    expect(result.stdout).toMatch(
      /^MISSING\s+PROBER_REGIONS: region "eu-west" is not in PROBER_REGIONS \("default"\)/m,
    );
    expect(result.status).toBe(1);
  });
});
