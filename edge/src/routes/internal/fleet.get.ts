import type { Hono } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { alertsView } from '../../services/fleet/alerts.ts';
import { fleetView, storeWritesOf } from '../../services/fleet/operator-view.ts';
import { requireOperator } from './bearer-secret.ts';

export const FLEET_PATH = '/internal/fleet';

export function registerFleet(app: Hono<AppEnv>): void {
  app.get(FLEET_PATH, async (c) => {
    await requireOperator(c);
    const services = c.get('services');
    const [regions, storage, alerts] = await Promise.all([
      fleetView(services, c.req.query('region') || undefined),
      storeWritesOf({ shards: c.get('shards'), config: services.config }, Date.now()),
      alertsView(services),
    ]);
    return c.json({ regions, storage, alerts });
  });
}
