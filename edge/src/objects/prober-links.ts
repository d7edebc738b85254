// The hub's link registry: the probers linked to one region's hub over WebSocket (hibernation
// API, so idle links cost nothing), what each said in its hello (capacity, sessions per MX host,
// region, token), which are ready for work, and what their egresses reported of blocks
// (egress-blocks.ts). It decides whether this region can take a probe at all; which prober takes
// it, and when, is the scheduler's (probe-scheduler.ts).
import type { ProbeReport, ProbeRequest, SmtpReply } from '@rcpt/shared/contract/prober';
import { blockedReport, blockScopeOf } from '@rcpt/shared/verify/egress-refusal';
import { FleetEgresses, type ProberEgresses } from './egress-blocks.ts';
import { EgressMemory } from './egress-memory.ts';
import { type ProbeOwner, ProbersByOwner } from './prober-owners.ts';

/**
 * Most probes the hub keeps in flight on one prober, whatever its hello claims: a prober with
 * a leaked token cannot take a region's whole queue and hold it until the deadlines.
 */
export const MAX_PROBER_CAPACITY = 500;

/** Probes of one MX host out at once when a prober's hello does not say (the prober's default). */
export const DEFAULT_PER_MX_CONCURRENCY = 5;

export interface ProberAttachment {
  proberId: string;
  tokenId: string;
  /**
   * The account this customer-run prober serves, only it (its token's); null: the shared fleet,
   * which serves every account (docs/operations.md, "Customer-run probers").
   */
  accountId: string | null;
  region: string;
  capacity: number;
  /** Sessions the prober opens at once to one MX host (from its hello). */
  perMxConcurrency: number;
  ready: boolean; // said hello with a protocol version we speak
  draining: boolean;
  connectedAt: number;
}

export interface ReadyProber {
  ws: WebSocket;
  attachment: ProberAttachment;
}

/** This region cannot serve a probe: the next region in order is asked. */
export interface HubPass {
  kind: 'passed';
  why: string;
  /**
   * Every egress of this region was refused at the probe's MX (or is blocked there): the answer
   * (`antispam_blocked`) should no later region have an egress that is not.
   */
  refusal?: ProbeReport;
}

export function noProberHere(): HubPass {
  return { kind: 'passed', why: 'no prober linked in this region' };
}

export class ProberLinks {
  readonly #ctx: DurableObjectState;
  /** Probers whose link closed: their socket may still be listed while its close is handled. */
  #gone = new Set<string>();
  /**
   * Each link's attachment as last written: the scheduler reads every link's on each probe it
   * starts or ends, and deserialising it each time was a tenth of the hub's work. After a
   * hibernation the map is empty and each attachment is read back once.
   */
  #attachments = new WeakMap<WebSocket, ProberAttachment>();
  /** Kept in storage too: a hibernation empties this memory while the links stay open. */
  readonly egresses: FleetEgresses;
  /** What the region remembers of each egress address, beyond any one link (egress-memory.ts). */
  readonly memory: EgressMemory;

  constructor(ctx: DurableObjectState) {
    this.#ctx = ctx;
    // Each link is tagged with its prober's id (accept).
    this.memory = new EgressMemory(ctx.storage.kv);
    this.egresses = new FleetEgresses(
      ctx.storage.kv,
      ctx.getWebSockets().flatMap((ws) => ctx.getTags(ws)),
    );
  }

  /** Accepts a new link (not yet ready: it has said no hello). */
  accept(
    ws: WebSocket,
    link: { tokenId: string; region: string; accountId: string | null },
    now: number,
  ): ProberAttachment {
    const proberId = crypto.randomUUID();
    this.#ctx.acceptWebSocket(ws, [proberId]);
    const attachment: ProberAttachment = {
      proberId,
      tokenId: link.tokenId,
      // Links made before customer-run probers have none in their attachment: the shared fleet.
      accountId: link.accountId ?? null,
      region: link.region,
      capacity: 1,
      perMxConcurrency: DEFAULT_PER_MX_CONCURRENCY,
      ready: false,
      draining: false,
      connectedAt: now,
    };
    this.attach(ws, attachment);
    return attachment;
  }

  /** Every linked socket, ready or not. */
  sockets(): WebSocket[] {
    return this.#ctx.getWebSockets();
  }

  attachmentOf(ws: WebSocket): ProberAttachment {
    let attachment = this.#attachments.get(ws);
    if (!attachment) {
      attachment = ws.deserializeAttachment() as ProberAttachment;
      this.#attachments.set(ws, attachment);
    }
    return attachment;
  }

  /** Stores a link's attachment with the socket (it outlives a hibernation) and in memory. */
  attach(ws: WebSocket, attachment: ProberAttachment): void {
    ws.serializeAttachment(attachment);
    this.#attachments.set(ws, attachment);
  }

  /** Probers that said hello, are not draining, and whose link is open. */
  ready(): ReadyProber[] {
    const ready: ReadyProber[] = [];
    for (const ws of this.#ctx.getWebSockets()) {
      const attachment = this.attachmentOf(ws);
      if (attachment.ready && !attachment.draining && !this.#gone.has(attachment.proberId))
        ready.push({ ws, attachment });
    }
    return ready;
  }

  hasReady(): boolean {
    return this.ready().length > 0;
  }

  /** Whether `proberId`'s link was forgotten (its close is being handled, or was). */
  isGone(proberId: string): boolean {
    return this.#gone.has(proberId);
  }

  /** The link closed: the prober is gone, with its egresses' reports. Returns its id. */
  forget(ws: WebSocket): string {
    const { proberId } = this.attachmentOf(ws);
    this.#gone.add(proberId);
    this.egresses.forget(proberId);
    return proberId;
  }

  /**
   * Why this region passes a probe of `request` for `owner` on instead of taking it, or null when
   * it takes it: it has no linked prober that may serve the owner (prober-owners.ts); or, when another region can take it (`passable`), every egress
   * of every prober here is blocked at its MX, as the probers reported their blocks — with the
   * blocks' refusal as the answer should no later region have an egress that is not. A prober
   * that named no egresses, or whose blocks the hub scopes otherwise, is asked, and its refused
   * report passes the probe on just the same.
   */
  passOf(request: ProbeRequest, passable: boolean, owner: ProbeOwner): HubPass | null {
    const probers = new ProbersByOwner(this.ready()).allowed(owner);
    if (probers.length === 0) return noProberHere();
    if (!passable) return null;
    const scope = blockScopeOf(request);
    const now = Date.now();
    let refusal: SmtpReply | null = null;
    for (const { attachment } of probers) {
      const reply = this.egresses.refusalAt(attachment.proberId, scope, now);
      if (!reply) return null;
      refusal ??= reply;
    }
    return {
      kind: 'passed',
      why: `every egress in this region is blocked at ${scope.name}`,
      refusal: blockedReport(request.emails, refusal, scope.name),
    };
  }

  /** Whether every egress of `proberId` is blocked at the MX of `request`, as it reported. */
  blockedAt(proberId: string, request: ProbeRequest, now: number): boolean {
    return this.egresses.refusalAt(proberId, blockScopeOf(request), now) !== null;
  }

  /** Its egresses, their blocks and hourly use, as `proberId` last reported them. */
  egressesOf(proberId: string, now: number): ProberEgresses {
    return this.egresses.of(proberId, now);
  }
}
