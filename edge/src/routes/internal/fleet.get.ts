// GET /internal/fleet: the operator's view of the prober fleet (services/fleet-view.ts) and of
// the store's daily write budget (docs/capacity.md, "The daily write budget"). Read with an
// operator token (`npm run admin -- operator-token create`), never an API key.
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { fleetView, operatorOf } from '../../services/fleet-view.ts';
import { DAY_MS, globalDailyStorageBytesOf, utcDayStart } from '../../services/quotas.ts';
import { storageUsedByAll } from '../../storage/storage-budget.ts';
import { bearerSecretOf } from './bearer-secret.ts';

export const FLEET_PATH = '/internal/fleet';

export function registerFleet(app: Hono<AppEnv>): void {
  app.get(FLEET_PATH, async (c) => {
    const token = bearerSecretOf(c.req.header('authorization'), 'operatorToken');
    if (!token) {
      throw new ApiError('UNAUTHORIZED', {
        message: 'An operator token is required (Authorization: Bearer rko_…).',
      });
    }
    const db = c.get('db');
    const operator = await operatorOf(
      { db, inBackground: (work) => c.executionCtx.waitUntil(work) },
      token,
      Date.now(),
    );
    if (!operator)
      throw new ApiError('UNAUTHORIZED', { message: 'The operator token is invalid or revoked.' });
    const day = utcDayStart(Date.now());
    const [regions, usedBytes] = await Promise.all([
      fleetView({ db, hubs: c.env.PROBER_HUB }, c.req.query('region') || undefined),
      storageUsedByAll(db, day),
    ]);
    // Today's writes of every account against the budget past which new lists are refused.
    const storage = {
      day: new Date(day).toISOString(),
      usedBytes,
      budgetBytes: globalDailyStorageBytesOf(c.get('config')),
      resetAt: new Date(day + DAY_MS).toISOString(),
    };
    return c.json({ regions, storage });
  });
}
