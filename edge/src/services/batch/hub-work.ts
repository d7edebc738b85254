// The hub step of the batch lifecycle: a task as the ProberHub takes it, handed to the first
// region that takes it (docs/operations.md, "Regions"); what a hub answers goes to its sink
// (services/batch-lifecycle.ts).
import type { ProberRegion } from '@rcpt/shared/prober-regions';
import type { Config } from '../../config.ts';
import type { HubWork } from '../../objects/prober-hub.ts';
import { regionHub } from '../fleet/prober-gateway.ts';
import type { BatchTask } from './types.ts';

/**
 * A task as the hub takes it: one probe of the domain's addresses, for the job's account; with
 * `ownOnly`, on the account's own probers only (it turned the shared fleet's fallback off).
 */
export function batchHubWork(task: BatchTask, config: Config, ownOnly = false): HubWork<BatchTask> {
  if (task.dns.kind !== 'mx') throw new Error(`${task.domain} has no MX to probe`);
  return {
    accountId: task.accountId,
    ...(ownOnly ? { ownOnly } : {}),
    deadlineAt: task.deadlineAt,
    request: {
      emails: task.addresses.map((address) => address.email),
      domain: task.domain,
      mx: task.dns.mx,
      mailFrom: config.MAIL_FROM,
      helo: config.HELO_NAME,
      timeoutMs: config.BATCH_PROBE_TIMEOUT_MS,
      transcript: false,
      ...(task.evidence ? { evidence: true } : {}),
    },
    ticket: task,
  };
}

/**
 * Hands batch work to the first region that takes each piece (every region but the last passes
 * on what its egresses are all blocked for); answers what no region took. That is asked again on
 * its schedule, not ended `antispam_blocked`: a later region's egresses were not refused, it
 * only had no prober linked yet.
 */
export async function dispatchToRegions(
  hubs: Env['PROBER_HUB'],
  regions: readonly ProberRegion[],
  work: HubWork<BatchTask>[],
): Promise<HubWork<BatchTask>[]> {
  let left = work;
  for (const [index, region] of regions.entries()) {
    if (left.length === 0) break;
    const refused = await regionHub(hubs, region).dispatch(left, index < regions.length - 1);
    left = refused.map((at) => left[at] as HubWork<BatchTask>);
  }
  return left;
}
