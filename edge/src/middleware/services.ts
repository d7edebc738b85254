// Puts the request's config, databases and services (services/request-services.ts) on the
// context, once, before anything else reads them; once the caller is known, `enterAccountShard`
// points them at the shard holding the caller's account (storage/shards.ts).
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { configOf } from '../config.ts';
import { requestServicesOf } from '../services/request-services.ts';
import type { Db } from '../storage/db.ts';
import { shardNumberOf, shardsOf } from '../storage/shards.ts';

export const requestServices = createMiddleware<AppEnv>(async (c, next) => {
  const config = configOf(c.env);
  const shards = shardsOf(c.env, { request: true });
  c.set('config', config);
  c.set('shards', shards);
  useDb(c, shards.directory);
  await next();
});

/** The request's account lives in `shard`: its reads and writes go to that shard's database. */
export function enterAccountShard<E extends AppEnv>(context: Context<E>, shard: number): void {
  const c = context as unknown as Context<AppEnv>;
  if (shardNumberOf(c.get('db')) !== shard) useDb(c, c.get('shards').db(shard));
}

function useDb(c: Context<AppEnv>, db: Db): void {
  c.set('db', db);
  c.set(
    'services',
    requestServicesOf({
      env: c.env,
      config: c.get('config'),
      db,
      inBackground: (work) => {
        try {
          c.executionCtx.waitUntil(work);
        } catch {
          // No execution context (an app driven without one): the work runs on its own.
        }
      },
    }),
  );
}
