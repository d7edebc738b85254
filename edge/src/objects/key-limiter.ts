// KeyLimiter: one Durable Object per API key (or per login subject). A sliding-window log of
// the last `limit` request times: exact, because a Durable Object handles one call at a time.
// The same object counts a publishable key's daily cap (`takeDaily`), exact for the same reason:
// a burst of calls is admitted one by one, so no more than the cap ever pass in a day.
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
const DAY_KEY = 'day';

export interface DailyDecision {
  allowed: boolean;
  cap: number;
  /** Admitted so far on the day, this call included when it was admitted. */
  used: number;
}

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

  /**
   * Counts one call against `cap` for the day starting at `day` (ms, the caller's UTC day); a
   * refused call is not counted, and a new day starts from zero.
   */
  takeDaily(cap: number, day: number): DailyDecision {
    meterFrom(this.env as { RCPT_METER?: string });
    meter({ doRequests: 1 });
    const stored = this.ctx.storage.kv.get<{ day: number; used: number }>(DAY_KEY);
    // A caller whose clock is a little behind at midnight still counts against the newer day.
    const current = stored && stored.day >= day ? stored : { day, used: 0 };
    const used = current.used;
    const allowed = used < cap;
    if (allowed) this.ctx.storage.kv.put(DAY_KEY, { day: current.day, used: used + 1 });
    return { allowed, cap, used: allowed ? used + 1 : used };
  }

  #load(): number[] {
    this.#hits ??= this.ctx.storage.kv.get<number[]>(HITS_KEY) ?? [];
    return this.#hits;
  }
}
