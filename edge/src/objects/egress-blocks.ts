// What the hub knows of each linked prober's egresses (docs/operations.md, "Egress addresses"):
// the list from its hello, and the blocks and hourly use it reports whenever a block begins or
// ends. Kept in memory beside the link: a prober says it all again when it links anew. The
// hub uses it to send a probe that every egress of one prober was refused for to another
// prober, to pass one that every egress of its region is blocked for to the next region, and
// the operator's view reads it.
import type {
  EgressBlockInfo,
  EgressInfo,
  EgressStateMessage,
  ProbeReport,
  SmtpReply,
} from '@rcpt/shared/contract/prober';
import type { BlockScope } from '@rcpt/shared/verify/egress-refusal';

/** One prober's egresses as the operator's view shows them. */
export interface ProberEgresses {
  egresses: EgressInfo[];
  blocks: EgressBlockInfo[];
  uses: EgressStateMessage['uses'];
  /** SMTP sessions open at its last report; null before its first. */
  sessions: number | null;
  /** When its last report arrived (ms since the epoch); null before its first. */
  reportedAt: number | null;
}

export class FleetEgresses {
  readonly #byProber = new Map<string, ProberEgresses>();

  /** A prober linked and named its egresses (none from a prober that predates them). */
  linked(proberId: string, egresses: readonly EgressInfo[] | undefined): void {
    this.#byProber.set(proberId, {
      egresses: [...(egresses ?? [])],
      blocks: [],
      uses: [],
      sessions: null,
      reportedAt: null,
    });
  }

  /** A prober's report of how its egresses stand now. */
  reported(proberId: string, state: EgressStateMessage, now: number): void {
    const known = this.#byProber.get(proberId);
    this.#byProber.set(proberId, {
      egresses: known?.egresses ?? [],
      blocks: state.blocks,
      uses: state.uses,
      sessions: state.sessions,
      reportedAt: now,
    });
  }

  forget(proberId: string): void {
    this.#byProber.delete(proberId);
  }

  /**
   * The refusal behind `proberId`'s blocks at `scope` when every egress it named is blocked there
   * now, else null (an egress is open, or the prober named none).
   */
  refusalAt(proberId: string, scope: BlockScope, now: number): SmtpReply | null {
    const known = this.#byProber.get(proberId);
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
    const known = this.#byProber.get(proberId);
    if (!known) return { egresses: [], blocks: [], uses: [], sessions: null, reportedAt: null };
    return { ...known, blocks: known.blocks.filter((block) => block.until > now) };
  }
}

/**
 * Whether a probe's report says every egress of its prober was refused at the MX (a
 * block-list listing), so that another prober, sending from other addresses, should be asked.
 */
export function refusedAtEveryEgress(report: ProbeReport): boolean {
  return report.egressesRefused === true;
}
