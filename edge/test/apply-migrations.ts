import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { shardBindings } from '../src/storage/shards.ts';

// Each test file gets databases (the directory's and each shard's, storage/shards.ts) with the real
// migrations applied and no rows. Files share a workerd per worker (edge/vitest.project.ts), so
// what an earlier file wrote is deleted here: tests of deployment-wide sweeps (recovery, retention,
// webhook retries, watch rounds) see only their own rows, and their sweeps never touch another file's.
for (const database of shardBindings(env)) {
  await applyD1Migrations(database, env.TEST_MIGRATIONS);
  const { results: tables } = await database
    .prepare(
      `SELECT name FROM sqlite_master WHERE type = 'table'
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name <> 'd1_migrations'`,
    )
    .all<{ name: string }>();
  // Foreign keys are checked at the end of the batch's transaction, when every table is empty.
  await database.batch([
    database.prepare('PRAGMA defer_foreign_keys = on'),
    ...tables.map(({ name }) => database.prepare(`DELETE FROM "${name}"`)),
  ]);
}
