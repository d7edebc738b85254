// Puts the request's config, database and services (services/request-services.ts) on the
// context, once, before anything else reads them.
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { configOf } from '../config.ts';
import { requestServicesOf } from '../services/request-services.ts';
import { createRequestDb } from '../storage/db.ts';

export const requestServices = createMiddleware<AppEnv>(async (c, next) => {
  const config = configOf(c.env);
  const db = createRequestDb(c.env.DB);
  c.set('config', config);
  c.set('db', db);
  c.set(
    'services',
    requestServicesOf({
      env: c.env,
      config,
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
  await next();
});
