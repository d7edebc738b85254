// The operator's view of the prober fleet (docs/operations.md, "The operator's view"): for each
// region, each linked prober's state, sessions, egresses, their blocks (where, since, until, the
// reply that caused it with addresses masked), their hourly use against the budget and their
// health check (PTR, FCrDNS, blocklist listings, port 25), as its hub knows them; today's writes
// of the whole store against its daily budget; and the operator token that may read it. It shows
// no account's data, only the fleet's and the store's. An account sees its own probers (the
// dashboard's Probers page) shaped by the same code, and nothing else of the fleet.
import type { EgressHealthInfo } from '@rcpt/shared/contract/prober';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { withoutAddresses } from '@rcpt/shared/verify/smtp-reply';
import type { Config } from '../../config.ts';
import type { ProberStatus } from '../../objects/prober-hub.ts';
import type { Db } from '../../storage/db.ts';
import { findLiveOperatorToken, proberRegions, touchOperatorToken } from '../../storage/operator-tokens.ts';
import { accountProberRegions } from '../../storage/prober-tokens.ts';
import type { Shards } from '../../storage/shards.ts';
import { bytesWrittenByAll } from '../../storage/storage-budget.ts';
import { DAY_MS, globalDailyStorageBytesOf, utcDayStart } from '../money/quotas.ts';
import { regionHub } from './prober-gateway.ts';

/**
 * The live operator token whose secret is `secret`, its use recorded in the background; null
 * when it is unknown or revoked.
 */
export async function operatorOf(
  deps: { db: Db; inBackground: (work: Promise<unknown>) => void },
  secret: string,
  now: number,
): Promise<{ id: string } | null> {
  const row = await findLiveOperatorToken(deps.db, await hashSecret(secret));
  if (!row) return null;
  deps.inBackground(touchOperatorToken(deps.db, row.id, now));
  return { id: row.id };
}

/** `region`'s probers and backlog, or every region's that prober tokens are issued for. */
export async function fleetView(deps: { db: Db; hubs: Env['PROBER_HUB'] }, region?: string) {
  const regions = region ? [region] : await proberRegions(deps.db);
  return Promise.all(
    regions.map(async (name) => {
      const hub = regionHub(deps.hubs, { name });
      const [probers, backlog] = await Promise.all([hub.status(), hub.backlog()]);
      return {
        region: name,
        backlog,
        probers: probers.map(proberViewOf),
      };
    }),
  );
}

/**
 * The account's own probers (linked with its prober tokens) in the regions its live tokens are
 * for, each as the operator's view shows it: never another account's, nor the shared fleet's.
 */
export async function ownProbersView(deps: { db: Db; hubs: Env['PROBER_HUB'] }, accountId: string) {
  const regions = await accountProberRegions(deps.db, accountId);
  return Promise.all(
    regions.map(async (name) => {
      const probers = await regionHub(deps.hubs, { name }).status();
      return {
        region: name,
        probers: probers.filter((prober) => prober.accountId === accountId).map(proberViewOf),
      };
    }),
  );
}

export type ProberView = ReturnType<typeof proberViewOf>;

/** One linked prober: its state, sessions, and each egress's blocks, hourly use and health. */
function proberViewOf(prober: ProberStatus) {
  return {
    proberId: prober.proberId,
    state: prober.draining ? 'draining' : prober.ready ? 'linked' : 'connecting',
    connectedAt: new Date(prober.connectedAt).toISOString(),
    capacity: prober.capacity,
    inFlight: prober.inFlight,
    sessions: prober.egress.sessions,
    reportedAt: prober.egress.reportedAt === null ? null : new Date(prober.egress.reportedAt).toISOString(),
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
      warmingUpSince: isoOrNull(prober.egress.warmUps.find((warmUp) => warmUp.egress === egress.id)?.since),
      health: healthOf(prober.egress.health?.find((health) => health.egress === egress.id)),
    })),
  };
}

/** An egress's newest health check as the view shows it; null before the first (or from an older prober). */
function healthOf(health: EgressHealthInfo | undefined) {
  if (!health) return null;
  const { egress: _, checkedAt, ...rest } = health;
  return { ...rest, checkedAt: new Date(checkedAt).toISOString() };
}

function isoOrNull(at: number | undefined): string | null {
  return at === undefined ? null : new Date(at).toISOString();
}

/**
 * Today's (UTC) writes of every account to D1 against the budget past which new lists are refused
 * (docs/capacity.md, "The daily write budget"), and what they wrote anywhere, the jobs' objects
 * included (`allStoresBytes`). The budget is each database's (storage/shards.ts): `usedBytes` is the
 * fullest shard's, `shards` each one's.
 */
export async function storeWritesOf(deps: { shards: Shards; config: Config }, now: number) {
  const day = utcDayStart(now);
  const written = await Promise.all(
    Array.from({ length: deps.shards.count }, (_, shard) => bytesWrittenByAll(deps.shards.db(shard), day)),
  );
  return {
    day: new Date(day).toISOString(),
    usedBytes: Math.max(...written.map((each) => each.d1Bytes)),
    allStoresBytes: written.reduce((sum, each) => sum + each.allBytes, 0),
    budgetBytes: globalDailyStorageBytesOf(deps.config),
    resetAt: new Date(day + DAY_MS).toISOString(),
    shards: written.map((each, shard) => ({ shard, usedBytes: each.d1Bytes, allStoresBytes: each.allBytes })),
  };
}
