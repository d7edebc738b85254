// Probers dial out to this endpoint (so they need no inbound port) with their token; the
// Worker authenticates the token and hands the WebSocket to the region's ProberHub.
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { proberRegionsOf } from '../../config.ts';
import { linkToRegionHub, proberOf } from '../../services/fleet/prober-gateway.ts';
import { bearerSecretOf } from './bearer-secret.ts';

export const PROBERS_CONNECT_PATH = '/internal/probers/connect';

export function registerProbersConnect(app: Hono<AppEnv>): void {
  app.get(PROBERS_CONNECT_PATH, async (c) => {
    const token = bearerSecretOf(c.req.header('authorization'), 'proberToken');
    if (!token) {
      throw new ApiError('UNAUTHORIZED', {
        message: 'A prober token is required (Authorization: Bearer rkp_…).',
      });
    }
    const services = c.get('services');
    const row = await proberOf(services, token, Date.now());
    if (!row) throw new ApiError('UNAUTHORIZED', { message: 'The prober token is invalid or revoked.' });
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
      throw new ApiError('VALIDATION_ERROR', { message: 'Expected a WebSocket upgrade.' });
    }
    // A token is issued for one region: it cannot take work (and addresses) of another.
    const requested = c.req.query('region');
    if (requested && requested !== row.region) {
      throw new ApiError('FORBIDDEN', {
        message: `This prober token is for region "${row.region}", not "${requested}".`,
      });
    }
    // A region the edge never sends work to would hold a prober that looks linked and does
    // nothing, while every call answers smtp_unavailable: refused, with a message the prober logs.
    const regions = proberRegionsOf(services.config);
    if (!regions.some(({ name }) => name === row.region)) {
      const listed = regions.map(({ name }) => name).join(',');
      throw new ApiError('PROBER_REGION_UNUSED', {
        message:
          `Region "${row.region}" is not in this edge's PROBER_REGIONS ("${listed}"), so it would never be sent ` +
          `work: add it to PROBER_REGIONS (docs/operations.md, "Regions"), or give this prober a token of a listed region.`,
        details: { region: row.region, proberRegions: regions.map(({ name }) => name) },
      });
    }
    return linkToRegionHub(
      services.hubs,
      regions,
      { tokenId: row.id, region: row.region, accountId: row.accountId },
      c.req.raw,
    );
  });
}
