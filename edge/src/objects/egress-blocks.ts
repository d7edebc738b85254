// What the hub knows of each linked prober's egresses (docs/operations.md, "Egress addresses"):
// the list from its hello, and the blocks, hourly use and health checks it reports whenever
// one of them changes. Kept in memory and in the hub's storage: a hibernation empties the hub's memory while
// the links stay open, and a prober says it all again only when it links anew. The hub uses it to send a probe that every egress of one prober was refused for to another
// prober, to pass one that every egress of its region is blocked for to the next region, and
// the operator's view reads it.
import type {
  EgressBlockInfo,
  EgressHealthInfo,
  EgressInfo,
  EgressStateMessage,
  EgressWarmUpInfo,
  ProbeReport,
  SmtpReply,
} from '@rcpt/shared/contract/prober';
import type { BlockScope } from '@rcpt/shared/verify/egress-refusal';

/** One prober's egresses as the operator's view shows them. */
export interface ProberEgresses {
  egresses: EgressInfo[];
  blocks: EgressBlockInfo[];
  uses: EgressStateMessage['uses'];
  /** When each egress began warming up, as last reported. */
  warmUps: EgressWarmUpInfo[];
  /** Each egress's newest health check, as last reported (absent from entries kept before it existed). */
  health?: EgressHealthInfo[];
  /** SMTP sessions open at its last report; null before its first. */
  sessions: number | null;
  /** When its last report arrived (ms since the epoch); null before its first. */
  reportedAt: number | null;
}

/** The part of a Durable Object's synchronous key-value storage the hub keeps egresses in. */
export type EgressStore = Pick<SyncKvStorage, 'get' | 'put' | 'delete' | 'list'>;

const STORE_PREFIX = 'egresses:';

export class FleetEgresses {
  readonly #byProber = new Map<string, ProberEgresses>();
  readonly #store: EgressStore | null;

  /**
   * With a `store`, what the hub knew before a hibernation is read back from it; the entries of
   * probers not in `linkedProberIds` (links that ended while the hub was away) are dropped.
   */
  constructor(store: EgressStore | null = null, linkedProberIds: readonly string[] = []) {
    this.#store = store;
    if (!store) return;
    const linked = new Set(linkedProberIds);
    const stale = [...store.list({ prefix: STORE_PREFIX })]
      .map(([key]) => key)
      .filter((key) => !linked.has(key.slice(STORE_PREFIX.length)));
    for (const key of stale) store.delete(key);
  }

  /**
   * A prober linked and named its egresses (none from a prober that predates them); `blocks` are
   * those the hub remembers of them (egress-memory.ts), in force until the prober reports.
   */
  linked(
    proberId: string,
    egresses: readonly EgressInfo[] | undefined,
    blocks: EgressBlockInfo[] = [],
  ): void {
    this.#keep(proberId, {
      egresses: [...(egresses ?? [])],
      blocks,
      uses: [],
      warmUps: [],
      sessions: null,
      reportedAt: null,
    });
  }

  /** A prober's report of how its egresses stand now. */
  reported(proberId: string, state: EgressStateMessage, now: number): void {
    this.#keep(proberId, {
      egresses: this.#known(proberId)?.egresses ?? [],
      blocks: state.blocks,
      uses: state.uses,
      warmUps: state.warmUps ?? [],
      health: state.health ?? [],
      sessions: state.sessions,
      reportedAt: now,
    });
  }

  forget(proberId: string): void {
    this.#byProber.delete(proberId);
    this.#store?.delete(`${STORE_PREFIX}${proberId}`);
  }

  #keep(proberId: string, entry: ProberEgresses): void {
    this.#byProber.set(proberId, entry);
    this.#store?.put(`${STORE_PREFIX}${proberId}`, entry);
  }

  #known(proberId: string): ProberEgresses | undefined {
    let known = this.#byProber.get(proberId);
    if (!known && this.#store) {
      known = this.#store.get<ProberEgresses>(`${STORE_PREFIX}${proberId}`);
      if (known) this.#byProber.set(proberId, known);
    }
    return known;
  }

  /**
   * The refusal behind `proberId`'s blocks at `scope` when every egress it named is blocked there
   * now, else null (an egress is open, or the prober named none).
   */
  refusalAt(proberId: string, scope: BlockScope, now: number): SmtpReply | null {
    const known = this.#known(proberId);
    if (!known || known.egresses.length === 0) return null;
    let refusal: SmtpReply | null = null;
    for (const egress of known.egresses) {
      const block = known.blocks.find(
        (candidate) =>
          candidate.egress === egress.id &&
          candidate.until > now &&
          candidate.scope.kind === scope.kind &&
          candidate.scope.name === scope.name,
      );
      if (!block) return null;
      refusal ??= block.reply;
    }
    return refusal;
  }

  /** What the operator's view shows of `proberId`, the blocks that have ended left out. */
  of(proberId: string, now: number): ProberEgresses {
    const known = this.#known(proberId);
    if (!known)
      return {
        egresses: [],
        blocks: [],
        uses: [],
        warmUps: [],
        health: [],
        sessions: null,
        reportedAt: null,
      };
    return {
      ...known,
      blocks: known.blocks.filter((block) => block.until > now),
      health: known.health ?? [],
    };
  }
}

/**
 * Whether a probe's report says every egress of its prober was refused at the MX (a
 * block-list listing), so that another prober, sending from other addresses, should be asked.
 */
export function refusedAtEveryEgress(report: ProbeReport): boolean {
  return report.egressesRefused === true;
}
