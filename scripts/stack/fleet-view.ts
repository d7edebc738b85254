// `npm run admin -- fleet` as text: one block per prober, one line per egress, its health
// check, its blocks and its hour against the budget beneath it. The JSON (`--json`) is the edge's /internal/fleet.

interface FleetBody {
  regions: {
    region: string;
    backlog: { single: number; batch: number; running: number };
    probers: {
      proberId: string;
      state: string;
      inFlight: number;
      capacity: number;
      sessions: number | null;
      egresses: {
        id: string;
        kind: string;
        helo: string | null;
        /** What customers see of it in evidence; absent from probers that predate labels. */
        label?: string;
        blocks: {
          scope: { kind: string; name: string };
          since: string;
          until: string;
          level: number;
          reply: { code: number; enhanced: string | null; text: string };
        }[];
        hourlyUse: { provider: string; used: number; budget: number }[];
        /** When it began warming up; absent from edges and probers that predate it. */
        warmingUpSince?: string | null;
        /** Its newest health check; null before the first, absent from edges that predate it. */
        health?: {
          address: string | null;
          ptr: string | null;
          fcrdns: string;
          heloMatches: boolean | null;
          listings: { zone: string; codes: string[]; meaning: string }[];
          unchecked: { zone: string; why: string }[];
          port25: string;
          checkedAt: string;
        } | null;
      }[];
    }[];
  }[];
}

export function fleetLines(body: FleetBody): string[] {
  const lines: string[] = [];
  for (const region of body.regions) {
    const { single, batch, running } = region.backlog;
    lines.push(
      `region ${region.region}: ${region.probers.length} prober(s); waiting ${single} single, ${batch} batch; running ${running}`,
    );
    for (const prober of region.probers) {
      lines.push(
        `  prober ${prober.proberId} ${prober.state}, ${prober.inFlight}/${prober.capacity} probes, ${prober.sessions ?? '?'} SMTP sessions`,
      );
      for (const egress of prober.egresses) {
        const use = egress.hourlyUse.map((hour) => `${hour.provider} ${hour.used}/${hour.budget}`).join(', ');
        lines.push(
          `    egress ${egress.id}${egress.label ? ` = ${egress.label}` : ''} (${egress.kind}${egress.helo ? `, HELO ${egress.helo}` : ''})${egress.blocks.length === 0 ? ' unblocked' : ''}${use ? `; this hour: ${use}` : ''}${egress.warmingUpSince ? `; in use since ${egress.warmingUpSince}` : ''}`,
        );
        if (egress.health) lines.push(...healthLines(egress.health));
        for (const block of egress.blocks) {
          const reply = `${block.reply.code}${block.reply.enhanced ? ` ${block.reply.enhanced}` : ''} ${block.reply.text}`;
          lines.push(
            `      BLOCKED at ${block.scope.kind} ${block.scope.name} since ${block.since} until ${block.until} (cool-down ${block.level}): ${reply}`,
          );
        }
      }
    }
  }
  return lines.length > 0 ? lines : ['no region has a live prober token'];
}

type EgressHealthView = NonNullable<
  FleetBody['regions'][number]['probers'][number]['egresses'][number]['health']
>;

/** An egress's health check: one line, then one per listing and per list that could not be read. */
function healthLines(health: EgressHealthView): string[] {
  if (health.address === null)
    return [`      health: public address unknown, not checked; port 25 ${health.port25}`];
  const helo = health.heloMatches === null ? '' : health.heloMatches ? ', HELO = PTR' : ', HELO ≠ PTR';
  return [
    `      health at ${health.checkedAt}: ${health.address} PTR ${health.ptr ?? 'none'}, FCrDNS ${health.fcrdns}${helo}, port 25 ${health.port25}${health.listings.length === 0 ? ', not listed' : ''}`,
    ...health.listings.map(
      (listing) => `      LISTED on ${listing.zone} (${listing.codes.join(', ')}): ${listing.meaning}`,
    ),
    ...health.unchecked.map((entry) => `      not checked on ${entry.zone}: ${entry.why}`),
  ];
}
