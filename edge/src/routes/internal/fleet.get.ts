// GET /internal/fleet: the operator's view of the prober fleet and of the store's daily write
// budget (services/fleet/operator-view.ts; docs/capacity.md, "The daily write budget"). Read with
// an operator token (`npm run admin -- operator-token create`), never an API key.
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { alertsView } from '../../services/fleet/alerts.ts';
import { fleetView, operatorOf, storeWritesOf } from '../../services/fleet/operator-view.ts';
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
    const services = c.get('services');
    const operator = await operatorOf(services, token, Date.now());
    if (!operator)
      throw new ApiError('UNAUTHORIZED', { message: 'The operator token is invalid or revoked.' });
    const [regions, storage, alerts] = await Promise.all([
      fleetView(services, c.req.query('region') || undefined),
      storeWritesOf(services, Date.now()),
      alertsView(services),
    ]);
    return c.json({ regions, storage, alerts });
  });
}
