import type { ProbeGateway } from '@rcpt/shared/verify/verify-address';

/** Probes through the ProberHub Durable Object of a region, as `accountId`'s call (its fair share). */
export function hubGateway(hubs: Env['PROBER_HUB'], region: string, accountId: string): ProbeGateway {
  return {
    probe: (request, deadlineMs) => hubs.get(hubs.idFromName(region)).probe(request, deadlineMs, accountId),
  };
}
