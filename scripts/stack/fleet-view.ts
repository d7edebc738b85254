// `npm run admin -- fleet` as text: the store's writes today against its daily budget, then one
// block per prober, one line per egress, its health check, its blocks and its hour against the
// budget beneath it, then the newest alerts. The JSON (`--json`) is the edge's /internal/fleet.

interface FleetBody {
  /** Absent from an edge older than the daily write budget. */
  storage?: { day: string; usedBytes: number; budgetBytes: number; resetAt: string };
  /** The newest alerts, newest first; absent from an edge older than alerts. */
  alerts?: { type: string; region: string; at: string; delivery: string; subject: string | null }[];
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

const megabytes = (bytes: number) => `${(bytes / 1_000_000).toFixed(1)} MB`;

export function fleetLines(body: FleetBody): string[] {
  const lines: string[] = [];
  const { storage } = body;
  if (storage) {
    const share = storage.budgetBytes > 0 ? Math.round((100 * storage.usedBytes) / storage.budgetBytes) : 100;
    lines.push(
      `storage today: ${megabytes(storage.usedBytes)} of ${megabytes(storage.budgetBytes)} written (${share} %); ` +
        `new lists are refused past it, until ${storage.resetAt}`,
    );
  }
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
  if (body.regions.length === 0) lines.push('no region has a live prober token');
  for (const alert of body.alerts ?? []) {
    lines.push(
      `alert ${alert.at} ${alert.type} in ${alert.region}${alert.subject ? `: ${alert.subject}` : ''} (${alert.delivery})`,
    );
  }
  return lines;
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
