import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';

/** Every response carries X-Request-Id; it is also the ledger reference of a single verification. */
export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  c.set('receivedAt', Date.now());
  const id = `req_${crypto.randomUUID().replaceAll('-', '')}`;
  c.set('requestId', id);
  c.header('X-Request-Id', id);
  await next();
});
