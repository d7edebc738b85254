import { fileURLToPath } from 'node:url';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineProject } from 'vitest/config';

const root = fileURLToPath(new URL('..', import.meta.url));

// Edge tests run inside workerd with the real bindings of wrangler.toml, and the D1
// migrations applied by test/apply-migrations.ts before each file.
export default defineProject(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: `${root}wrangler.toml` },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations(`${root}migrations`),
          DOH_URL: 'http://127.0.0.1:1/dns-query',
          ALLOW_PRIVATE_TARGETS: 'true',
        },
      },
    }),
  ],
  test: {
    name: 'edge',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
}));
