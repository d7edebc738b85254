import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineProject } from 'vitest/config';
import { freePort } from '../scripts/stack/local-stack.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

// Edge tests run inside workerd with the real bindings of wrangler.toml and the D1
// migrations applied (test/apply-migrations.ts). DNS goes to the fake mail world's DoH stub,
// which test/world-setup.ts runs in the runner's process on the ports chosen here; SMTP
// answers come from fake probers that the tests connect to the hub themselves.
export default defineProject(async () => {
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
  process.env.RCPT_EDGE_TEST_WORLD = JSON.stringify(world);
  return {
    plugins: [
      // The stripe package ships source maps that point at sources it does not ship: loaded
      // without them, instead of one warning per module on every run.
      {
        name: 'stripe-without-source-maps',
        load(id: string) {
          if (!id.includes('/node_modules/stripe/') || !id.endsWith('.js')) return null;
          return readFileSync(id.split('?')[0] as string, 'utf8').replace(/^\/\/# sourceMappingURL=.*$/m, '');
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
      name: 'edge',
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // As the root config's other projects: two files at a time, each in its own workerd with
      // its own storage. A project file does not inherit the root's setting.
      maxWorkers: 2,
      // A hang guard, not a speed target: a test sending 130 requests through workerd takes
      // a fraction of a second alone and over 20 s on a loaded two-core runner.
      testTimeout: 60_000,
      hookTimeout: 60_000,
      setupFiles: ['./test/apply-migrations.ts'],
      globalSetup: ['./test/world-setup.ts'],
    },
  };
});
