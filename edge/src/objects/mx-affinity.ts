// Which prober probes an MX host: rendezvous (highest random weight) hashing over the ready
// probers, so that every probe of one host goes to one prober and a disconnect moves only that
// prober's hosts (probe-scheduler.ts keeps per-host politeness with it).
import type { ReadyProber } from './prober-links.ts';

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
