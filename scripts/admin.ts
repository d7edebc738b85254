// Operator commands: `npm run admin -- <command> [options]`. Local D1 by default; --remote
// for the deployed database. Secrets are printed once and never stored.
import { parseArgs } from 'node:util';
import { checkProductionSettings } from '../edge/src/production-check.ts';
import { type D1Target, declaredShardCount } from './stack/d1.ts';
import { fleetLines } from './stack/fleet-view.ts';
import {
  accountExists,
  accountOfApiKey,
  createAccount,
  createApiKey,
  createOperatorToken,
  createProberToken,
  grantCredits,
  isApiKey,
  RefusedError,
  revokeApiKeyRows,
  revokeCredential,
  setSharedFleetFallback,
  shardForNewAccount,
} from './stack/operator.ts';

const USAGE = `usage: npm run admin -- <command> [options] [--remote] [--persist-to DIR] [--json]

  account create [--email E] [--credits N] [--shard N]
                                                  create an account (default 100 credits) in shard N
                                                  (default: the one with the fewest accounts)
  credits grant --account ID|API_KEY --amount N   add credits (a ledger row says why); the account is
                                                  its id, or found from one of its API keys (rk_…)
  key create --account ID [--name N] [--test]     create an API key; prints the secret once
  key revoke --key ID|PREFIX [--edge URL]         revoke an API key, in whichever shard holds it; with
                                                  RCPT_OPERATOR_TOKEN the edge is told and it fails on its
                                                  next request (else within 5 minutes)
  prober-token create [--region R] [--name N] [--account ID]
                                                  create a prober token; prints it once. With --account,
                                                  a customer-run prober's: it serves that account only
  shared-fleet on|off --account ID                whether the shared fleet probes for the account when
                                                  none of its own probers can (default on)
  prober-token revoke --token ID|PREFIX           revoke a prober token
  operator-token create [--name N]                create an operator token (for fleet); prints it once
  operator-token revoke --token ID|PREFIX         revoke an operator token
  fleet [--edge URL] [--region R]                 the probers, their egresses, blocks and hourly use
                                                  (RCPT_OPERATOR_TOKEN; edge default http://127.0.0.1:8787)
  check [--config FILE] [--env NAME] [--region R]  check the edge's production set-up (docs/operations.md,
                                                  "Deploying"): the database id, the probing identity,
                                                  the regions R of your probers (comma-separated) against
                                                  PROBER_REGIONS, sign-up, payments; with --remote, its
                                                  secrets too; exits 1 when one is missing`;

function fail(message: string): never {
  console.error(`rcpt admin: ${message}\n\n${USAGE}`);
  process.exit(2);
}

/** The command line; a malformed one (an option without its value, say) is refused with the usage. */
function parsedArguments() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        remote: { type: 'boolean', default: false },
        'persist-to': { type: 'string' },
        json: { type: 'boolean', default: false },
        email: { type: 'string' },
        credits: { type: 'string', default: '100' },
        shard: { type: 'string' },
        account: { type: 'string' },
        amount: { type: 'string' },
        name: { type: 'string' },
        test: { type: 'boolean', default: false },
        key: { type: 'string' },
        token: { type: 'string' },
        region: { type: 'string' },
        edge: { type: 'string' },
        config: { type: 'string' },
        env: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    fail((error as Error).message);
  }
}

const { values, positionals } = parsedArguments();

function required(name: 'account' | 'key' | 'token', value: string | undefined): string {
  if (!value) fail(`--${name} is required`);
  return value;
}

function positiveInteger(name: string, value: string | undefined): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    fail(`--${name} must be a whole number ≥ 0, got ${JSON.stringify(value)}`);
  return number;
}

/** A shard wrangler.toml declares (docs/architecture.md, "Sharding what still grows"). */
function declaredShard(value: string): number {
  const shard = positiveInteger('shard', value);
  const count = declaredShardCount();
  if (shard >= count) fail(`--shard ${shard}: wrangler.toml declares shards 0 to ${count - 1}`);
  return shard;
}

/** How long the edge keeps a key's record without reading D1 (objects/key-limiter.ts, KEY_RECORD_TTL_MS). */
const KEY_RECORD_TTL_MINUTES = 5;

/**
 * Has the edge forget the records of these revoked keys (`POST /internal/keys/forget`, with
 * RCPT_OPERATOR_TOKEN): null when it did, else why not.
 */
async function tellEdgeToForget(keyHashes: string[]): Promise<string | null> {
  const token = process.env.RCPT_OPERATOR_TOKEN?.trim();
  if (!token) return 'RCPT_OPERATOR_TOKEN is not set';
  const url = new URL('/internal/keys/forget', values.edge ?? 'http://127.0.0.1:8787');
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ keyHashes }),
    });
    return response.ok ? null : `the edge answered ${response.status}`;
  } catch (cause) {
    return `no answer from ${url.origin}: ${(cause as Error).message}`;
  }
}

function report(result: Record<string, unknown>, lines: string[]): void {
  console.log(values.json ? JSON.stringify(result) : lines.join('\n'));
}

async function main(): Promise<void> {
  if (values.help) return void console.log(USAGE);
  const target: D1Target = {
    remote: values.remote,
    ...(values['persist-to'] ? { persistTo: values['persist-to'] } : {}),
  };
  const command = positionals.join(' ');
  switch (command) {
    case 'account create': {
      const credits = positiveInteger('credits', values.credits);
      const shard = values.shard === undefined ? shardForNewAccount(target) : declaredShard(values.shard);
      const id = await createAccount(target, { email: values.email ?? null, credits, shard });
      return report({ accountId: id, credits, shard }, [
        `account ${id} created with ${credits} credits, in shard ${shard}`,
      ]);
    }
    case 'credits grant': {
      const account = required('account', values.account);
      const accountId = isApiKey(account) ? await accountOfApiKey(target, account) : account;
      if (!accountId) fail('no live API key is that one');
      const balance = grantCredits(target, { accountId, amount: positiveInteger('amount', values.amount) });
      return report({ accountId, balance }, [`account ${accountId}: balance is now ${balance}`]);
    }
    case 'key create': {
      const key = await createApiKey(target, {
        accountId: required('account', values.account),
        name: values.name ?? 'operator key',
        mode: values.test ? 'test' : 'live',
      });
      return report({ keyId: key.id, apiKey: key.secret, prefix: key.prefix }, [
        `API key ${key.prefix}… (id ${key.id}). Shown once, store it now:`,
        key.secret,
      ]);
    }
    case 'key revoke': {
      const keyHashes = revokeApiKeyRows(target, required('key', values.key));
      if (keyHashes.length === 0) fail('no such live key');
      const told = await tellEdgeToForget(keyHashes);
      return report({ revoked: keyHashes.length, edgeTold: told === null }, [
        told === null
          ? 'key revoked; the edge was told: it fails on its next request'
          : `key revoked in D1, but the edge could not be told (${told}): it fails within ${KEY_RECORD_TTL_MINUTES} minutes, when the edge reads its record again`,
      ]);
    }
    case 'prober-token create': {
      const region = values.region ?? 'default';
      const accountId = values.account ?? null;
      if (accountId !== null && !accountExists(target, accountId)) fail(`no account ${accountId}`);
      const token = await createProberToken(target, { region, name: values.name ?? 'prober', accountId });
      const whose = accountId === null ? '' : `, serving account ${accountId} only`;
      return report({ tokenId: token.id, token: token.secret, prefix: token.prefix, accountId }, [
        `prober token ${token.prefix}… for region ${region}${whose} (id ${token.id}). Shown once, store it now:`,
        token.secret,
      ]);
    }
    case 'shared-fleet on':
    case 'shared-fleet off': {
      const accountId = required('account', values.account);
      const allowed = command === 'shared-fleet on';
      // The edge keeps the setting in each key's record: told, it reads them again.
      const keyHashes = setSharedFleetFallback(target, accountId, allowed);
      const told = keyHashes.length === 0 ? null : await tellEdgeToForget(keyHashes);
      return report({ accountId, sharedFleetFallback: allowed, edgeTold: told === null }, [
        `account ${accountId}: the shared fleet ${allowed ? 'takes over' : 'never takes over'} when its own probers cannot probe` +
          (told === null
            ? ''
            : ` (within ${KEY_RECORD_TTL_MINUTES} minutes: the edge could not be told, ${told})`),
      ]);
    }
    case 'prober-token revoke': {
      const count = revokeCredential(target, 'prober_tokens', required('token', values.token));
      if (count === 0) fail('no such live token');
      return report({ revoked: count }, ['token revoked']);
    }
    case 'operator-token create': {
      const token = await createOperatorToken(target, { name: values.name ?? 'operator' });
      return report({ tokenId: token.id, token: token.secret, prefix: token.prefix }, [
        `operator token ${token.prefix}… (id ${token.id}). Shown once, store it now (RCPT_OPERATOR_TOKEN):`,
        token.secret,
      ]);
    }
    case 'operator-token revoke': {
      const count = revokeCredential(target, 'operator_tokens', required('token', values.token));
      if (count === 0) fail('no such live token');
      return report({ revoked: count }, ['token revoked']);
    }
    case 'fleet': {
      const token = process.env.RCPT_OPERATOR_TOKEN?.trim();
      if (!token)
        fail('RCPT_OPERATOR_TOKEN is required (create one with `npm run admin -- operator-token create`)');
      const url = new URL('/internal/fleet', values.edge ?? 'http://127.0.0.1:8787');
      if (values.region) url.searchParams.set('region', values.region);
      const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const body = (await response.json()) as Record<string, unknown>;
      if (!response.ok) fail(`the edge answered ${response.status}: ${String(body.message ?? '')}`);
      return report(body, fleetLines(body as unknown as Parameters<typeof fleetLines>[0]));
    }
    case 'check': {
      // Loaded here only: wrangler's configuration reader takes about two seconds to load, which
      // every other command would pay for nothing.
      const { deploymentSettings } = await import('./stack/deployment.ts');
      const findings = checkProductionSettings(
        deploymentSettings({
          remote: values.remote,
          ...(values.config ? { configPath: values.config } : {}),
          ...(values.env ? { env: values.env } : {}),
        }),
        {
          proberRegions:
            values.region
              ?.split(',')
              .map((region) => region.trim())
              .filter(Boolean) ?? [],
        },
      );
      const missing = findings.filter((finding) => finding.state === 'missing');
      const label = { ok: 'ok', missing: 'MISSING', unchecked: 'unchecked' } as const;
      report({ ok: missing.length === 0, findings }, [
        ...findings.map(
          (finding) => `${label[finding.state].padEnd(10)}${finding.setting}: ${finding.message}`,
        ),
        missing.length === 0
          ? 'the production set-up of docs/operations.md is complete'
          : `${missing.length} missing from the production set-up of docs/operations.md`,
      ]);
      if (missing.length > 0) process.exitCode = 1;
      return;
    }
    default:
      fail(command ? `unknown command "${command}"` : 'a command is required');
  }
}

main().catch((error: unknown) => {
  if (error instanceof RefusedError) fail(error.message);
  console.error(`rcpt admin: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
