// The deploy check's rules (`npm run admin -- check`, docs/operations.md, "Deploying"):
// the production set-up, item by item, against what a deployment declares. Pure, and free of
// Worker types, so the operator script runs it in Node; config.ts parses the same settings in
// the Worker.
import { regionsOfVars } from '@rcpt/shared/prober-regions';

/**
 * What a deployment declares, as the deploy check (`npm run admin -- check`) reads it from the
 * wrangler configuration and, when asked, from Cloudflare: its vars, the names of its secrets
 * (null: not asked, so not checked), and the names of its `send_email` bindings.
 */
export interface DeploymentSettings {
  vars: Readonly<Record<string, unknown>>;
  secretNames: readonly string[] | null;
  sendEmailBindings: readonly string[];
  /** The D1 bindings and the database id each names (undefined: none given). */
  d1Databases: readonly { binding: string; databaseId: string | undefined }[];
}

/** What the operator tells the check beyond the deployment: the regions its probers join. */
export interface CheckOptions {
  proberRegions?: readonly string[];
}

/** One line of the deploy check: `missing` fails it, `unchecked` is said but does not. */
export interface DeploymentFinding {
  setting: string;
  state: 'ok' | 'missing' | 'unchecked';
  message: string;
}

/**
 * The production set-up of docs/operations.md, "Deploying", item by item, against what a
 * deployment declares.
 */
export function checkProductionSettings(
  settings: DeploymentSettings,
  options: CheckOptions = {},
): DeploymentFinding[] {
  const text = (name: string) => {
    const value = settings.vars[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const secret = (name: string, why: string): DeploymentFinding => {
    if (settings.secretNames === null)
      return {
        setting: name,
        state: 'unchecked',
        message: `the ${name} secret was not looked up (run the check with --remote): ${why}`,
      };
    return settings.secretNames.includes(name)
      ? { setting: name, state: 'ok', message: `the ${name} secret is set` }
      : {
          setting: name,
          state: 'missing',
          message: `the ${name} secret is not set (npx wrangler secret put ${name}): ${why}`,
        };
  };
  const findings: DeploymentFinding[] = [
    ...checkDatabases(settings),
    secret(
      'SECRETS_KEY',
      'it seals webhook secrets and signs confirmation links; sign-up answers 503 without it',
    ),
    ...checkProbingIdentity(text),
    ...checkProberRegions(settings, options.proberRegions ?? []),
  ];

  const sender = text('EMAIL_SENDER') ?? 'cloudflare';
  findings.push(
    sender === 'cloudflare'
      ? {
          setting: 'EMAIL_SENDER',
          state: 'ok',
          message: 'confirmation emails go through Cloudflare Email Service',
        }
      : {
          setting: 'EMAIL_SENDER',
          state: 'missing',
          message: `EMAIL_SENDER is "${sender}": confirmation emails are not sent (set it to "cloudflare" or remove it)`,
        },
  );
  if (sender === 'cloudflare') {
    findings.push(
      settings.sendEmailBindings.includes('EMAIL')
        ? { setting: 'EMAIL', state: 'ok', message: 'the send_email binding EMAIL is declared' }
        : {
            setting: 'EMAIL',
            state: 'missing',
            message: 'no send_email binding named EMAIL: sign-up answers 503 and creates nothing',
          },
      text('EMAIL_FROM')
        ? {
            setting: 'EMAIL_FROM',
            state: 'ok',
            message: `confirmation emails come from ${text('EMAIL_FROM')}`,
          }
        : {
            setting: 'EMAIL_FROM',
            state: 'missing',
            message: 'EMAIL_FROM is not set: sign-up answers 503 and creates nothing',
          },
    );
  }

  // Turnstile is off when its site key is unset: fine for development, not for a deployment,
  // whose sign-up form would then take any script's posts.
  const turnstileWhy = 'without Turnstile the sign-up form has no check that a person is filling it in';
  findings.push(
    text('TURNSTILE_SITE_KEY')
      ? { setting: 'TURNSTILE_SITE_KEY', state: 'ok', message: 'Turnstile is on for sign-up' }
      : {
          setting: 'TURNSTILE_SITE_KEY',
          state: 'missing',
          message: `Turnstile is not configured (TURNSTILE_SITE_KEY is not set): ${turnstileWhy}`,
        },
    secret('TURNSTILE_SECRET_KEY', `Siteverify needs it; ${turnstileWhy}`),
  );

  findings.push(...checkPurchases(settings, text));

  const allowPrivate = text('ALLOW_PRIVATE_TARGETS');
  findings.push(
    allowPrivate === 'true' || allowPrivate === '1'
      ? {
          setting: 'ALLOW_PRIVATE_TARGETS',
          state: 'missing',
          message:
            'ALLOW_PRIVATE_TARGETS is on: webhooks and probes may reach private addresses (tests only)',
        }
      : { setting: 'ALLOW_PRIVATE_TARGETS', state: 'ok', message: 'private targets are refused' },
  );
  return findings;
}

/**
 * The id `npx wrangler d1 create` gives is a UUID; wrangler.toml ships zeros in its place, the last
 * digit the shard's number.
 */
const DATABASE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PLACEHOLDER_DATABASE_ID = /^[0-]+[0-9]?$/;

/**
 * The `DB` binding, and each shard's (`DB_SHARD_n`, docs/architecture.md "Sharding what still
 * grows"), names a database `npx wrangler d1 create` made, not the placeholder.
 */
function checkDatabases(settings: DeploymentSettings): DeploymentFinding[] {
  const shards = settings.d1Databases.filter((database) => /^DB_SHARD_\d+$/.test(database.binding));
  return ['DB', ...shards.map((database) => database.binding)].map((binding) =>
    checkDatabase(settings, binding),
  );
}

function checkDatabase(settings: DeploymentSettings, binding: string): DeploymentFinding {
  const databaseId = settings.d1Databases.find((database) => database.binding === binding)?.databaseId;
  const name = binding === 'DB' ? 'rcpt' : `rcpt-shard-${binding.slice('DB_SHARD_'.length)}`;
  const fix = `run npx wrangler d1 create ${name} and put the id it prints in wrangler.toml (database_id)`;
  if (!databaseId)
    return {
      setting: binding,
      state: 'missing',
      message: `the D1 binding ${binding} has no database_id: ${fix}`,
    };
  if (PLACEHOLDER_DATABASE_ID.test(databaseId) || !DATABASE_ID.test(databaseId))
    return {
      setting: binding,
      state: 'missing',
      message: `the D1 binding ${binding} names database_id "${databaseId}", a placeholder: ${fix}`,
    };
  return { setting: binding, state: 'ok', message: `the D1 binding ${binding} names database ${databaseId}` };
}

/** The probing identity wrangler.toml ships with, to be replaced by the deployment's own. */
const SHIPPED_MAIL_DOMAIN = 'verify.rcpt.dev';

/** A name reserved for examples and tests (RFC 2606, RFC 6761), or the shipped one: never a real sender. */
function isExampleDomain(domain: string): boolean {
  const name = domain.toLowerCase().replace(/\.$/, '');
  return (
    name === SHIPPED_MAIL_DOMAIN ||
    name.endsWith(`.${SHIPPED_MAIL_DOMAIN}`) ||
    /(^|\.)example\.(com|net|org)$/.test(name) ||
    /(^|\.)(example|test|invalid|localhost)$/.test(name)
  );
}

/**
 * HELO_NAME and MAIL_FROM are who the probes say they are: a mail server checks the HELO name
 * against the prober's PTR record and MAIL FROM's domain against SPF (prober/README.md, "What a
 * probing IP needs"). Left at an example, every probe announces a name the deployment does not hold.
 */
function checkProbingIdentity(text: (name: string) => string | undefined): DeploymentFinding[] {
  const helo = text('HELO_NAME');
  const mailFrom = text('MAIL_FROM');
  const mailDomain = mailFrom?.split('@').at(-1);
  return [
    !helo || isExampleDomain(helo)
      ? {
          setting: 'HELO_NAME',
          state: 'missing',
          message: `HELO_NAME is ${helo ? `"${helo}", an example name` : 'not set'}: set it to the name your probers' PTR records give`,
        }
      : { setting: 'HELO_NAME', state: 'ok', message: `probes say EHLO ${helo}` },
    !mailFrom || !mailDomain || mailFrom === mailDomain || isExampleDomain(mailDomain)
      ? {
          setting: 'MAIL_FROM',
          state: 'missing',
          message: `MAIL_FROM is ${mailFrom ? `"${mailFrom}", not an address of your own domain` : 'not set'}: set it to an address of a domain whose SPF record includes your probers' IPs`,
        }
      : { setting: 'MAIL_FROM', state: 'ok', message: `probes send MAIL FROM:<${mailFrom}>` },
  ];
}

/**
 * The regions the operator's probers join must be among PROBER_REGIONS: the edge refuses a prober
 * of any other region (it would never be sent work).
 */
function checkProberRegions(
  settings: DeploymentSettings,
  proberRegions: readonly string[],
): DeploymentFinding[] {
  let listed: string[];
  try {
    listed = regionsOfVars(settings.vars).map((region) => region.name);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return [{ setting: 'PROBER_REGIONS', state: 'missing', message: `PROBER_REGIONS is not valid: ${why}` }];
  }
  const findings: DeploymentFinding[] = proberRegions.map((region) =>
    listed.includes(region)
      ? { setting: 'PROBER_REGIONS', state: 'ok', message: `probers of region "${region}" are sent work` }
      : {
          setting: 'PROBER_REGIONS',
          state: 'missing',
          message: `region "${region}" is not in PROBER_REGIONS ("${listed.join(',')}"): the edge refuses its probers; add it, or create their tokens with --region ${listed[0]}`,
        },
  );
  if (proberRegions.length === 0)
    findings.push({
      setting: 'PROBER_REGIONS',
      state: 'unchecked',
      message: `PROBER_REGIONS is "${listed.join(',')}"; name your probers' regions with --region to check them against it`,
    });
  return findings;
}

const STRIPE_SECRETS = ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'] as const;

/**
 * Buying credits (docs/operations.md, "Payments"): on with both Stripe secrets, off with neither;
 * one without the other is a deployment configured half-way (the dashboard says purchases are
 * off, or Stripe's events cannot be verified). The secrets are never plain vars, and the library
 * talks to Stripe itself, not to a fake.
 */
function checkPurchases(
  settings: DeploymentSettings,
  text: (name: string) => string | undefined,
): DeploymentFinding[] {
  const findings: DeploymentFinding[] = [];
  for (const name of STRIPE_SECRETS) {
    if (text(name)) {
      findings.push({
        setting: name,
        state: 'missing',
        message: `${name} is a plain var, readable in the deployment's configuration: remove it and run npx wrangler secret put ${name}`,
      });
    }
  }
  if (text('STRIPE_API_URL')) {
    findings.push({
      setting: 'STRIPE_API_URL',
      state: 'missing',
      message: `STRIPE_API_URL sends the Stripe library to ${text('STRIPE_API_URL')} instead of Stripe (local runs and tests only): remove it`,
    });
  }
  if (settings.secretNames === null) {
    if (text('CREDIT_PACKS')) {
      findings.push({
        setting: 'STRIPE_SECRET_KEY',
        state: 'unchecked',
        message: 'the Stripe secrets were not looked up (run the check with --remote): purchases need both',
      });
    }
    return findings;
  }
  const present = STRIPE_SECRETS.filter((name) => settings.secretNames?.includes(name));
  if (present.length === STRIPE_SECRETS.length) {
    findings.push({
      setting: 'STRIPE_SECRET_KEY',
      state: 'ok',
      message: 'purchases are on (both Stripe secrets are set)',
    });
  } else if (present.length === 0) {
    findings.push({
      setting: 'STRIPE_SECRET_KEY',
      state: 'ok',
      message:
        'purchases are off (no Stripe secrets): the dashboard says so, credits come from operators only',
    });
  } else {
    const missing = STRIPE_SECRETS.find((name) => !present.includes(name)) as string;
    findings.push({
      setting: missing,
      state: 'missing',
      message: `purchases are configured half-way: ${present[0]} is set but ${missing} is not (npx wrangler secret put ${missing}); until both are, the dashboard says purchases are off`,
    });
  }
  return findings;
}
