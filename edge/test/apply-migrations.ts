import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

// Each test file gets a database with the real migrations applied.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
