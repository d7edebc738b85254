// What a deployment of the edge declares, for the deploy check (`npm run admin -- check`): the
// vars, D1 and send_email bindings of its wrangler configuration, and, with `remote`, the names of
// the secrets Cloudflare holds for the Worker (`wrangler secret list`; never their values).
import { join } from 'node:path';
import { unstable_readConfig } from 'wrangler';
import type { DeploymentSettings } from '../../edge/src/production-check.ts';
import { REPO_ROOT, runWrangler } from './wrangler-cli.ts';

export interface DeploymentSource {
  /** The wrangler configuration; default the repository's wrangler.toml. */
  configPath?: string;
  /** A wrangler environment (`[env.NAME]`) of that configuration. */
  env?: string;
  /** Ask Cloudflare for the deployed Worker's secret names. */
  remote?: boolean;
}

export function deploymentSettings(source: DeploymentSource): DeploymentSettings {
  const configPath = source.configPath ?? join(REPO_ROOT, 'wrangler.toml');
  const config = unstable_readConfig(
    { config: configPath, ...(source.env ? { env: source.env } : {}) },
    { hideWarnings: true },
  );
  return {
    vars: config.vars,
    secretNames: source.remote ? secretNames(configPath, source.env) : null,
    sendEmailBindings: config.send_email.map((binding: { name: string }) => binding.name),
    d1Databases: config.d1_databases.map((database: { binding: string; database_id?: string }) => ({
      binding: database.binding,
      databaseId: database.database_id,
    })),
  };
}

function secretNames(configPath: string, env: string | undefined): string[] {
  const output = runWrangler([
    'secret',
    'list',
    '--format',
    'json',
    '--config',
    configPath,
    ...(env ? ['--env', env] : []),
  ]);
  return (JSON.parse(output) as { name: string }[]).map((secret) => secret.name);
}
