import type { ProbeGateway } from '@rcpt/shared/verify/verify-address';

/** Probes through the ProberHub Durable Object of a region. */
export function hubGateway(hubs: Env['PROBER_HUB'], region: string): ProbeGateway {
  return {
    probe: (request, deadlineMs) => hubs.get(hubs.idFromName(region)).probe(request, deadlineMs),
  };
}
