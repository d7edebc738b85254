// KeyLimiter: one Durable Object per API key (or per login subject). A sliding-window log of
// the last `limit` request times: exact, because a Durable Object handles one call at a time.
import { DurableObject } from 'cloudflare:workers';
import { meter, meterFrom } from '../meter.ts';

export const RATE_LIMIT = 100;
export const RATE_WINDOW_MS = 60_000;

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a slot frees up (the oldest counted request leaves the window). */
  resetSeconds: number;
}

const HITS_KEY = 'hits';

export class KeyLimiter extends DurableObject<Env> {
  #hits: number[] | null = null;

  /** Counts one request if the window has room; a refused request is not counted. */
  hit(limit: number, windowMs: number): LimitDecision {
    meterFrom(this.env as { RCPT_METER?: string });
    meter({ doRequests: 1 });
    const now = Date.now();
    const hits = this.#load().filter((at) => at > now - windowMs);
    const allowed = hits.length < limit;
    if (allowed) hits.push(now);
    this.#hits = hits;
    this.ctx.storage.kv.put(HITS_KEY, hits);
    const oldest = hits[0] ?? now;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - hits.length),
      resetSeconds: Math.max(1, Math.ceil((oldest + windowMs - now) / 1000)),
    };
  }

  #load(): number[] {
    this.#hits ??= this.ctx.storage.kv.get<number[]>(HITS_KEY) ?? [];
    return this.#hits;
  }
}
