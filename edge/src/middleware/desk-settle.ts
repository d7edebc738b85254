// Every authenticated request but the single call reads or charges the account in D1: the
// account's desk writes what it answered first, so D1's history, ledger and balance are whole
// (docs/money.md, "Where the balance lives"). A request that may charge in D1 (a POST, PUT or
// DELETE: an upload, say) also has the desk give its unspent credits back, so the whole balance
// is there to charge. The single call itself goes to the desk and needs none of this.
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { settleDesk } from '../services/money/account-desk.ts';

const SINGLE_CALL_PATHS = new Set(['/api/v1/verify', '/v1/verify']);

export const settleAccountDesk = createMiddleware<AppEnv>(async (c, next) => {
  const caller = c.get('caller');
  if (caller && !SINGLE_CALL_PATHS.has(new URL(c.req.url).pathname)) {
    await settleDesk(c.get('services').desks, caller.accountId, { release: c.req.method !== 'GET' });
  }
  await next();
});
