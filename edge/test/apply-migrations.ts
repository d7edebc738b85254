import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

// Each test file gets a database with the real migrations applied and no rows. Files share a
// workerd per worker (edge/vitest.project.ts), so what an earlier file wrote is
// deleted here: tests of deployment-wide sweeps (recovery, retention, webhook retries, watch
// rounds) see only their own rows, and their sweeps never touch another file's.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

const { results: tables } = await env.DB.prepare(
  `SELECT name FROM sqlite_master WHERE type = 'table'
     AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name <> 'd1_migrations'`,
).all<{ name: string }>();
// Foreign keys are checked at the end of the batch's transaction, when every table is empty.
await env.DB.batch([
  env.DB.prepare('PRAGMA defer_foreign_keys = on'),
  ...tables.map(({ name }) => env.DB.prepare(`DELETE FROM "${name}"`)),
]);
