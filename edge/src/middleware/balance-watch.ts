// After a request that may have spent credits (a live POST that succeeded), the account's
// balance watch runs once the answer is sent: the low-balance email and the automatic top-up
// (docs/money.md, "Buying credits"), so a running account is topped up before its next upload
// meets 402. The cron's sweep catches what this misses (credits a queue consumer spent).
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';

export const balanceWatch = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const caller = c.get('caller');
  if (c.req.method !== 'POST' || !caller || caller.mode !== 'live' || c.res.status >= 300) return;
  // A single call charged from its desk's block moved nothing in D1; the call that takes the next
  // block runs the watch (docs/money.md, "Where the balance lives").
  if (c.get('balanceUnmoved')) return;
  c.get('services').watchBalance(caller.accountId);
});
