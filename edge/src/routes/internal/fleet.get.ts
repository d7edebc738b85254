// The operator's view of the prober fleet (docs/operations.md, "The operator's view"): for each
// region, each linked prober's state, sessions, egresses, their blocks (where, since, until, the
// reply that caused it with addresses masked) and their hourly use against the budget. Read
// with an operator token (`npm run admin -- operator-token create`), never an API key: it shows
// no account's data, only the fleet's.
import { ApiError } from '@rcpt/shared/errors';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { withoutAddresses } from '@rcpt/shared/verify/smtp-reply';
import type { Hono } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { findLiveOperatorToken, proberRegions, touchOperatorToken } from '../../storage/operator-tokens.ts';
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
    const row = await findLiveOperatorToken(c.get('db'), await hashSecret(token));
    if (!row) throw new ApiError('UNAUTHORIZED', { message: 'The operator token is invalid or revoked.' });
    c.executionCtx.waitUntil(touchOperatorToken(c.get('db'), row.id, Date.now()));
    const requested = c.req.query('region');
    const regions = requested ? [requested] : await proberRegions(c.get('db'));
    const fleet = await Promise.all(
      regions.map(async (region) => {
        const hub = c.env.PROBER_HUB.get(c.env.PROBER_HUB.idFromName(region));
        const [probers, backlog] = await Promise.all([hub.status(), hub.backlog()]);
        return {
          region,
          backlog,
          probers: probers.map((prober) => ({
            proberId: prober.proberId,
            state: prober.draining ? 'draining' : prober.ready ? 'linked' : 'connecting',
            connectedAt: new Date(prober.connectedAt).toISOString(),
            capacity: prober.capacity,
            inFlight: prober.inFlight,
            sessions: prober.egress.sessions,
            reportedAt:
              prober.egress.reportedAt === null ? null : new Date(prober.egress.reportedAt).toISOString(),
            egresses: prober.egress.egresses.map((egress) => ({
              ...egress,
              blocks: prober.egress.blocks
                .filter((block) => block.egress === egress.id)
                .map((block) => ({
                  scope: block.scope,
                  since: new Date(block.since).toISOString(),
                  until: new Date(block.until).toISOString(),
                  level: block.level,
                  // The prober masks them already; a reply never shows an address here either way.
                  reply: { ...block.reply, text: withoutAddresses(block.reply.text) },
                })),
              hourlyUse: prober.egress.uses
                .filter((use) => use.egress === egress.id)
                .map(({ provider, used, budget }) => ({ provider, used, budget })),
            })),
          })),
        };
      }),
    );
    return c.json({ regions: fleet });
  });
}
