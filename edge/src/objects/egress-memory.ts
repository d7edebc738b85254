// What a region's hub remembers of each egress address across restarts (docs/operations.md,
// "Egress addresses"): its blocks, when it began warming up, and its hours at each provider, as
// its prober last reported them. Kept by prober token and egress id (an egress id such as
// `system` or a private source address means one address only behind one prober's token) in the
// hub's Durable Object storage,
// which outlives a deploy or an eviction of the hub and a restart of the prober; a prober gets
// it back right after its hello (EgressMemoryMessage), so a restarted prober does not ask again
// from a listed address, nor start a warmed egress from zero.
import type {
  EgressBlockInfo,
  EgressHealthInfo,
  EgressMemoryMessage,
  EgressStateMessage,
  EgressWarmUpInfo,
} from '@rcpt/shared/contract/prober';
import type { EgressStore } from './egress-blocks.ts';

const STORE_PREFIX = 'egress-memory:';
const HOUR_MS = 60 * 60_000;
/**
 * An egress not reported for this long is forgotten, warm-up included: a sending address
 * unused for a month has no recent reputation left to keep (the warm-up advice is for an
 * address new to, or long absent from, a provider's traffic).
 */
export const EGRESS_MEMORY_MS = 30 * 24 * HOUR_MS;

interface Remembered {
  blocks: EgressBlockInfo[];
  /** When it began warming up; null before the prober said. */
  warmUp: number | null;
  uses: EgressMemoryMessage['uses'];
  /** Its newest health check, for the alerts of what changed since (absent before one). */
  health?: EgressHealthInfo;
  /** When it was last reported. */
  at: number;
}

export class EgressMemory {
  readonly #store: EgressStore;

  constructor(store: EgressStore) {
    this.#store = store;
  }

  /** Keeps what `state` says of `egressIds` (the egresses the reporting prober named). */
  remember(tokenId: string, egressIds: readonly string[], state: EgressStateMessage, now: number): void {
    for (const egress of egressIds) {
      const key = keyOf(tokenId, egress);
      const known = this.#store.get<Remembered>(key);
      const reported = state.warmUps?.find((warmUp) => warmUp.egress === egress)?.since ?? null;
      const health = state.health?.find((check) => check.egress === egress) ?? known?.health;
      this.#store.put(key, {
        blocks: state.blocks.filter((block) => block.egress === egress),
        warmUp: earliest(known?.warmUp ?? null, reported),
        uses: state.uses.filter((use) => use.egress === egress).map((use) => ({ ...use, at: now })),
        ...(health ? { health } : {}),
        at: now,
      } satisfies Remembered);
    }
  }

  /** The newest health check kept of each of `egressIds` that has one: what an alert compares with. */
  healthOf(tokenId: string, egressIds: readonly string[]): EgressHealthInfo[] {
    return egressIds.flatMap((egress) => this.#store.get<Remembered>(keyOf(tokenId, egress))?.health ?? []);
  }

  /**
   * What a prober that names `egressIds` should start from: the blocks in force at `now`, each
   * egress's warm-up, and the hours not yet over. Egresses silent past EGRESS_MEMORY_MS are
   * forgotten here.
   */
  recall(
    tokenId: string,
    egressIds: readonly string[],
    now: number,
  ): Omit<EgressMemoryMessage, 'type' | 'id'> {
    const blocks: EgressBlockInfo[] = [];
    const warmUps: EgressWarmUpInfo[] = [];
    const uses: EgressMemoryMessage['uses'] = [];
    for (const egress of egressIds) {
      const key = keyOf(tokenId, egress);
      const known = this.#store.get<Remembered>(key);
      if (!known) continue;
      if (now - known.at > EGRESS_MEMORY_MS) {
        this.#store.delete(key);
        continue;
      }
      blocks.push(...known.blocks.filter((block) => block.until > now));
      if (known.warmUp !== null) warmUps.push({ egress, since: known.warmUp });
      uses.push(...known.uses.filter((use) => now - use.at < HOUR_MS));
    }
    return { blocks, warmUps, uses };
  }
}

function keyOf(tokenId: string, egress: string): string {
  return `${STORE_PREFIX}${tokenId}:${egress}`;
}

function earliest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}
