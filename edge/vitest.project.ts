import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineProject } from 'vitest/config';
import { freePort } from '../scripts/stack/local-stack.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const edge = fileURLToPath(new URL('.', import.meta.url));

/**
 * The edge's test files, relative to edge/, in two groups. Most share a workerd per worker, file
 * after file (starting one per file cost seconds a file), each on an emptied database
 * (test/apply-migrations.ts). Those that link fake probers to the hub or use the fleet's objects
 * get a workerd of their own each: the hub's Durable Objects remember egress blocks, warm-up
 * and links from one file to the next, which an emptied database does not forget.
 */
export function edgeTestFiles(): { shared: string[]; ownWorkerd: string[] } {
  const files = ['src', 'test']
    .flatMap((folder) =>
      readdirSync(join(edge, folder), { recursive: true, encoding: 'utf8' }).map(
        (file) => `${folder}/${file}`,
      ),
    )
    .filter((file) => file.endsWith('.test.ts'))
    .sort();
  const usesFleet = (file: string) =>
    /fake-prober\.ts|PROBER_HUB|FAIR_SHARES/.test(readFileSync(join(edge, file), 'utf8'));
  return { shared: files.filter((file) => !usesFleet(file)), ownWorkerd: files.filter(usesFleet) };
}

// Edge tests run inside workerd with the real bindings of wrangler.toml and the D1
// migrations applied (test/apply-migrations.ts). DNS goes to the fake mail world's DoH stub,
// which test/world-setup.ts runs in the runner's process on the ports chosen here; SMTP
// answers come from fake probers that the tests connect to the hub themselves.
export function edgeProject(options: { name: string; include: string[]; isolate: boolean }) {
  return defineProject(async () => {
    const world = {
      smtpPort: await freePort(),
      dohPort: await freePort(),
      // The fake Stripe (test/world/fake-stripe.ts) and the keys it accepts and signs with.
      stripe: {
        port: await freePort(),
        secretKey: `sk_test_${randomBytes(24).toString('base64url')}`,
        webhookSecret: `whsec_${randomBytes(24).toString('base64url')}`,
      },
    };
    // test/world-setup.ts starts this project's world on these ports.
    process.env[`RCPT_EDGE_TEST_WORLD_${options.name}`] = JSON.stringify(world);
    return {
      plugins: [
        // The stripe package ships source maps that point at sources it does not ship: loaded
        // without them, instead of one warning per module on every run.
        {
          name: 'stripe-without-source-maps',
          load(id: string) {
            if (!id.includes('/node_modules/stripe/') || !id.endsWith('.js')) return null;
            return readFileSync(id.split('?')[0] as string, 'utf8').replace(
              /^\/\/# sourceMappingURL=.*$/m,
              '',
            );
          },
        },
        cloudflareTest({
          wrangler: { configPath: `${root}wrangler.toml` },
          miniflare: {
            bindings: {
              TEST_MIGRATIONS: await readD1Migrations(`${root}migrations`),
              TEST_SMTP_PORT: String(world.smtpPort),
              DOH_URL: `http://127.0.0.1:${world.dohPort}/dns-query`,
              ALLOW_PRIVATE_TARGETS: 'true',
              VERIFY_TIMEOUT_MS: '3000',
              // A fixed test key: 32 zero bytes.
              SECRETS_KEY: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
              // Confirmation links go to the console, where test/cookie-client.ts reads them.
              EMAIL_SENDER: 'console',
              STRIPE_API_URL: `http://127.0.0.1:${world.stripe.port}`,
              STRIPE_SECRET_KEY: world.stripe.secretKey,
              STRIPE_WEBHOOK_SECRET: world.stripe.webhookSecret,
            },
          },
        }),
      ],
      test: {
        name: options.name,
        include: options.include,
        // As the root config's other projects: two files at a time. A project file does not
        // inherit the root's setting.
        maxWorkers: 2,
        isolate: options.isolate,
        // A hang guard, not a speed target: a test sending 130 requests through workerd takes
        // a fraction of a second alone and over 20 s on a loaded two-core runner.
        testTimeout: 60_000,
        hookTimeout: 60_000,
        setupFiles: ['./test/apply-migrations.ts'],
        globalSetup: ['./test/world-setup.ts'],
      },
    };
  });
}
