// Where each egress is refused: a mail server (or a whole provider) that refused the client
// itself — a block-list listing, "Client host rejected", a banned IP (the reply table's
// `refusesClient`) — is not asked from that egress again until its cool-down ends. The
// cool-down grows while the block persists (docs/operations.md, "Egress addresses"):
// 10 minutes, then doubled each time the block is met again within a day of the last one,
// up to 6 hours. A listing on Spamhaus's or Barracuda's lists lasts hours to days, so asking
// every few minutes would only collect refusals; a block that is gone shows at the next try.
import type { SmtpReply } from '@rcpt/shared/contract/prober';
import type { BlockScope } from '@rcpt/shared/verify/egress-refusal';
import { withoutAddresses } from '@rcpt/shared/verify/smtp-reply';

export const DEFAULT_BLOCK_BASE_MS = 10 * 60_000;
export const DEFAULT_BLOCK_CAP_MS = 6 * 60 * 60_000;
// A block met again this soon after the last one ended is the same listing: the cool-down grows.
const REPEAT_WINDOW_MS = 24 * 60 * 60_000;
// Ended blocks are remembered (for the next cool-down's length) up to this many.
const MAX_REMEMBERED = 10_000;

export interface EgressBlock {
  egress: string;
  scope: BlockScope;
  /** Epoch milliseconds. */
  since: number;
  until: number;
  /** The refusal, email addresses masked: the operator's evidence. */
  reply: SmtpReply;
  /** Blocks met in a row at this scope: the cool-down was base × 2^(level-1). */
  level: number;
}

export interface EgressBlockEvents {
  /** A new block began (not the same one reported again by a session opened before it). */
  blocked(block: EgressBlock): void;
  /** A block ended: its cool-down passed, or the egress was answered there again. */
  ended(block: EgressBlock, why: 'expired' | 'answered'): void;
}

export interface EgressBlocksOptions {
  baseMs?: number;
  capMs?: number;
  now?: () => number;
  events?: Partial<EgressBlockEvents>;
}

interface BlockState {
  block: EgressBlock;
  /** Set while the block is in force; cleared when it has ended (the level is remembered). */
  active: boolean;
  timer: NodeJS.Timeout | null;
}

export function scopeKey(scope: BlockScope): string {
  return `${scope.kind}:${scope.name}`;
}

export class EgressBlocks {
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #now: () => number;
  readonly #events: Partial<EgressBlockEvents>;
  readonly #states = new Map<string, BlockState>();

  constructor(options: EgressBlocksOptions = {}) {
    this.#baseMs = options.baseMs ?? DEFAULT_BLOCK_BASE_MS;
    this.#capMs = options.capMs ?? DEFAULT_BLOCK_CAP_MS;
    this.#now = options.now ?? Date.now;
    this.#events = options.events ?? {};
  }

  /** Marks `egress` refused at `scope` because of `reply`; returns the block in force. */
  block(egress: string, scope: BlockScope, reply: SmtpReply): EgressBlock {
    const now = this.#now();
    const key = `${egress}\n${scopeKey(scope)}`;
    const previous = this.#states.get(key);
    if (previous?.active && previous.block.until > now) return previous.block;
    const repeated = previous !== undefined && now - previous.block.until <= REPEAT_WINDOW_MS;
    const level = repeated ? previous.block.level + 1 : 1;
    const coolDown = Math.min(this.#capMs, this.#baseMs * 2 ** Math.min(level - 1, 30));
    const block: EgressBlock = {
      egress,
      scope,
      since: now,
      until: now + coolDown,
      reply: { ...reply, text: withoutAddresses(reply.text).slice(0, 500) },
      level,
    };
    if (previous?.timer) clearTimeout(previous.timer);
    const state: BlockState = { block, active: true, timer: null };
    // The end is an event an operator alerts on, so it fires when it happens, not when next asked.
    state.timer = setTimeout(() => this.#end(key, state, 'expired'), coolDown);
    state.timer.unref();
    this.#states.delete(key);
    this.#states.set(key, state);
    if (this.#states.size > MAX_REMEMBERED) this.#forgetEnded(now);
    this.#events.blocked?.(block);
    return block;
  }

  /**
   * Takes back a block the region's hub remembered (the prober restarted, or its hub did): in
   * force until its own end, which fires as any other; no `blocked` event, as it is not new. A
   * block already known here that ends later stays.
   */
  restore(block: EgressBlock): void {
    const now = this.#now();
    if (block.until <= now) return;
    const key = `${block.egress}\n${scopeKey(block.scope)}`;
    const known = this.#states.get(key);
    if (known?.active && known.block.until >= block.until) return;
    if (known?.timer) clearTimeout(known.timer);
    const state: BlockState = { block, active: true, timer: null };
    state.timer = setTimeout(() => this.#end(key, state, 'expired'), block.until - now);
    state.timer.unref();
    this.#states.set(key, state);
  }

  /** The block in force for `egress` at `scope`, or null. */
  blockOf(egress: string, scope: BlockScope): EgressBlock | null {
    const state = this.#states.get(`${egress}\n${scopeKey(scope)}`);
    if (!state?.active || state.block.until <= this.#now()) return null;
    return state.block;
  }

  /**
   * `egress` was answered at `scope` (any reply that does not refuse the client): a block there
   * has ended, and the next one starts from the base cool-down again.
   */
  answered(egress: string, scope: BlockScope): void {
    const key = `${egress}\n${scopeKey(scope)}`;
    const state = this.#states.get(key);
    if (!state) return;
    if (state.active) this.#end(key, state, 'answered');
    this.#states.delete(key);
  }

  /** Every block in force now, oldest first. */
  active(): EgressBlock[] {
    const now = this.#now();
    return [...this.#states.values()]
      .filter((state) => state.active && state.block.until > now)
      .map((state) => state.block)
      .sort((a, b) => a.since - b.since);
  }

  /** Stops the end-of-block timers (the process is stopping). */
  close(): void {
    for (const state of this.#states.values()) if (state.timer) clearTimeout(state.timer);
  }

  /** Drops ended blocks too old to lengthen the next cool-down, then the oldest ended ones. */
  #forgetEnded(now: number): void {
    for (const [key, state] of this.#states) {
      if (this.#states.size <= MAX_REMEMBERED) return;
      if (!state.active && now - state.block.until > REPEAT_WINDOW_MS) this.#states.delete(key);
    }
    for (const [key, state] of this.#states) {
      if (this.#states.size <= MAX_REMEMBERED) return;
      if (!state.active) this.#states.delete(key);
    }
  }

  #end(key: string, state: BlockState, why: 'expired' | 'answered'): void {
    if (!state.active || this.#states.get(key) !== state) return;
    state.active = false;
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    this.#events.ended?.(state.block, why);
  }
}
