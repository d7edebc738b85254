// Which prober probes an MX host: rendezvous (highest random weight) hashing over the ready
// probers, so that every probe of one host goes to one prober and a disconnect moves only that
// prober's hosts (probe-scheduler.ts keeps per-host politeness with it); and how many of one
// host's probes that prober is sent at once.
import type { ReadyProber } from './prober-links.ts';

/**
 * Probes of one MX host out beyond its sessions at once, as a share of them: they wait at the
 * prober, whose throttle still holds the sessions to the host's limit, and each starts its
 * session the moment one ends, instead of after the finished probe's answer has reached the hub
 * and a new probe has gone out. A probe far from its mail server spends round trips on its last
 * replies and its close after its slot is free (probe.ts): those are what this covers.
 */
const MX_PROBES_AHEAD_SHARE = 1;

/** The probes of one MX host out at once to a prober that opens `perMxConcurrency` sessions to it. */
export function probesOutPerMx(perMxConcurrency: number): number {
  return Math.ceil(perMxConcurrency * (1 + MX_PROBES_AHEAD_SHARE));
}

/**
 * Rendezvous (highest random weight) hashing: each host goes to the prober with the highest
 * hash of (host, prober); when a prober leaves, only its hosts move.
 */
export function affineProber(
  probers: readonly ReadyProber[],
  mxKey: string,
  passedOver: ReadonlySet<string>,
): ReadyProber | null {
  let best: ReadyProber | null = null;
  let bestScore = -1;
  for (const prober of probers) {
    if (passedOver.has(prober.attachment.proberId)) continue;
    const score = fnv1a(`${mxKey}\n${prober.attachment.proberId}`);
    if (score > bestScore) {
      best = prober;
      bestScore = score;
    }
  }
  return best;
}

/** FNV-1a, 32 bits: fast and well spread for short strings. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
