// The prober regions as the edge uses them (docs/operations.md, "Regions"): each region's hub,
// placed near its probers by its location hint; a single call or batch work goes to the first
// region, in PROBER_REGIONS order, that can serve it, and a region that cannot passes it on at
// once (the cost of one call to its hub), as does one whose every egress is blocked at the
// probe's MX.

import type { ProberRegion } from '@rcpt/shared/prober-regions';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import type { ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { ProbeGateway } from '@rcpt/shared/verify/verify-address';
import { PROBER_ACCOUNT_ID_HEADER, PROBER_TOKEN_ID_HEADER } from '../../objects/prober-hub.ts';
import type { Db } from '../../storage/db.ts';
import { findLiveProberToken, touchProberToken } from '../../storage/prober-tokens.ts';

type Hubs = Env['PROBER_HUB'];

/** The ProberHub of `region`. Its location hint counts when the hub is first created. */
export function regionHub(hubs: Hubs, region: ProberRegion) {
  const id = hubs.idFromName(region.name);
  return region.locationHint ? hubs.get(id, { locationHint: region.locationHint }) : hubs.get(id);
}

/**
 * The live prober token whose secret is `secret` (its id, region, and the account it serves, null
 * for the shared fleet), its use recorded in the background; null when it is unknown or revoked.
 */
export async function proberOf(
  deps: { db: Db; inBackground: (work: Promise<unknown>) => void },
  secret: string,
  now: number,
): Promise<{ id: string; region: string; accountId: string | null } | null> {
  const row = await findLiveProberToken(deps.db, await hashSecret(secret));
  if (!row) return null;
  deps.inBackground(touchProberToken(deps.db, row.id, now));
  return { id: row.id, region: row.region, accountId: row.accountId };
}

/**
 * Hands an authenticated prober's WebSocket upgrade to the hub of its token's region. The hub of
 * a listed region is placed by its location hint, whoever reaches it first.
 */
export function linkToRegionHub(
  hubs: Hubs,
  regions: readonly ProberRegion[],
  link: { tokenId: string; region: string; accountId: string | null },
  upgrade: Request,
): Promise<Response> {
  const region = regions.find(({ name }) => name === link.region) ?? { name: link.region };
  const url = new URL(upgrade.url);
  url.searchParams.set('region', link.region);
  const forwarded = new Request(url, upgrade);
  forwarded.headers.set(PROBER_TOKEN_ID_HEADER, link.tokenId);
  if (link.accountId) forwarded.headers.set(PROBER_ACCOUNT_ID_HEADER, link.accountId);
  else forwarded.headers.delete(PROBER_ACCOUNT_ID_HEADER);
  return regionHub(hubs, region).fetch(forwarded);
}

/**
 * Probes through the first region with a prober for it, as `accountId`'s call (its fair share):
 * on the account's own probers first, and with `ownOnly` on them only (docs/operations.md,
 * "Customer-run probers").
 * Every region but the last passes a call it cannot serve at once; the last keeps it within its
 * budget, for a prober that links in time. A region whose every egress is refused at the MX
 * passes it on with its refusal: the answer (`antispam_blocked`) when no later region answers,
 * and then even the last region passes at once rather than wait for a prober.
 */
export function regionsGateway(
  hubs: Hubs,
  regions: readonly ProberRegion[],
  accountId: string,
  ownOnly = false,
): ProbeGateway {
  return {
    async probe(request, deadlineMs) {
      const deadlineAt = Date.now() + deadlineMs;
      let refusal: ProbeOutcome | null = null;
      for (const [index, region] of regions.entries()) {
        const last = index === regions.length - 1;
        const answer = await regionHub(hubs, region).probe(
          request,
          deadlineAt - Date.now(),
          accountId,
          !last || refusal !== null,
          ownOnly,
        );
        if (answer.kind === 'passed') {
          if (answer.refusal) refusal ??= { kind: 'report', report: answer.refusal };
          continue;
        }
        // rcpt's own failure after a refusal (the budget ran out): the refusal says more.
        return answer.kind === 'unavailable' && refusal ? refusal : answer;
      }
      return refusal ?? { kind: 'unavailable', message: 'no region had a prober' };
    },
  };
}
