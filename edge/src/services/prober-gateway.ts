// The prober regions as the edge uses them (docs/operations.md, "Regions"): each region's hub,
// placed near its probers by its location hint; a single call or batch work goes to the first
// region, in PROBER_REGIONS order, that can serve it, and a region that cannot passes it on at
// once (the cost of one call to its hub).

import type { ProberRegion } from '@rcpt/shared/prober-regions';
import type { ProbeGateway } from '@rcpt/shared/verify/verify-address';
import type { HubWork } from '../objects/prober-hub.ts';
import type { BatchTask } from './batch-results.ts';

type Hubs = Env['PROBER_HUB'];

/** The ProberHub of `region`. Its location hint counts when the hub is first created. */
export function regionHub(hubs: Hubs, region: ProberRegion) {
  const id = hubs.idFromName(region.name);
  return region.locationHint ? hubs.get(id, { locationHint: region.locationHint }) : hubs.get(id);
}

/**
 * Probes through the first region with a prober for it, as `accountId`'s call (its fair share).
 * Every region but the last passes a call it cannot serve at once; the last keeps it within its
 * budget, for a prober that links in time.
 */
export function regionsGateway(
  hubs: Hubs,
  regions: readonly ProberRegion[],
  accountId: string,
): ProbeGateway {
  return {
    async probe(request, deadlineMs) {
      const deadlineAt = Date.now() + deadlineMs;
      for (const [index, region] of regions.entries()) {
        const last = index === regions.length - 1;
        const answer = await regionHub(hubs, region).probe(
          request,
          deadlineAt - Date.now(),
          accountId,
          !last,
        );
        if (answer.kind !== 'passed') return answer;
      }
      return { kind: 'unavailable', message: 'no region had a prober' };
    },
  };
}

/** Hands batch work to the first region that takes each piece; answers what no region took. */
export async function dispatchToRegions(
  hubs: Hubs,
  regions: readonly ProberRegion[],
  work: HubWork<BatchTask>[],
): Promise<HubWork<BatchTask>[]> {
  let left = work;
  for (const region of regions) {
    if (left.length === 0) break;
    const refused = await regionHub(hubs, region).dispatch(left);
    left = refused.map((index) => left[index] as HubWork<BatchTask>);
  }
  return left;
}
