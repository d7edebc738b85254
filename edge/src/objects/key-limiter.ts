// KeyLimiter: one Durable Object per API key (or per login subject). A sliding-window log of
// the last `limit` request times: exact, because a Durable Object handles one call at a time.
// The same object counts a publishable key's day (`takePublishableDay`), exact for the same
// reason: a burst of calls is admitted one by one, so no more than the cap, and no more bytes
// than the key's storage budget, ever pass in a day.
//
// The object named `api-key:<key hash>` also keeps that key's record after its first read from
// D1 (docs/architecture.md, "A single call"), so authenticating a request reads no D1: a
// revocation writes D1 first and then has the object `forget` the record, so the next request
// with the key reads D1 again and fails. A record is read again after KEY_RECORD_TTL_MS anyway,
// which bounds how long a change made without `forget` (an account's shared-fleet setting, a
// revocation whose `forget` could not be sent) goes unseen. The same object counts a secret key's
// requests against RATE_LIMIT in the same call (`admit`), so a request makes one call to it.
import { DurableObject } from 'cloudflare:workers';
import { type MeterVars, meter, meterFrom } from '../meter.ts';
import { addressAdmitted, keyLimitsOf } from '../services/keys/key-limits.ts';
import { type ApiKeyRecord, findApiKeyByHash, LAST_USED_RESOLUTION_MS } from '../storage/api-keys.ts';
import { shardsOf } from '../storage/shards.ts';

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
const KEY_RECORD = 'key-record';

/** How long a key's record is used before D1 is read again. */
export const KEY_RECORD_TTL_MS = 5 * 60_000;

/** The key's record, and whether its "last used" is due a write (once a minute per key). */
export interface KeyRecordAnswer {
  record: ApiKeyRecord | null;
  touch: boolean;
}

/** The key's record and, when the request counted against the key's request rate, the decision. */
export interface KeyAdmission extends KeyRecordAnswer {
  /** Null: not counted (an unknown or revoked key, one refused from this address, a publishable key). */
  rate: LimitDecision | null;
}

interface StoredKeyRecord {
  keyHash: string;
  record: ApiKeyRecord;
  readAt: number;
}

/** A publishable key's day so far: calls and bytes admitted, and the calls of each client network. */
export interface PublishableDay {
  /** The UTC day's start, ms since the epoch. */
  day: number;
  used: number;
  bytes: number;
  /** Calls admitted per client network; past MAX_TRACKED_NETWORKS, new networks count under OTHER_NETWORKS. */
  networks: Record<string, number>;
}

export interface PublishableDayDecision {
  /** Null: admitted. `cap`: the day's calls are used up; `storage`: the day's bytes are. */
  refused: 'cap' | 'storage' | null;
  /** The day as it stands after this call. */
  use: PublishableDay;
}

/** Client networks a key's day names one by one (the dashboard shows the busiest). */
export const MAX_TRACKED_NETWORKS = 200;
/** The networks past MAX_TRACKED_NETWORKS, together. */
export const OTHER_NETWORKS = 'other networks';

export class KeyLimiter extends DurableObject<Env> {
  #hits: number[] | null = null;
  /** Moved by `forget`: a D1 read begun before it is not kept. */
  #generation = 0;

  /**
   * The key's record (kept, or read from D1) and the request counted against RATE_LIMIT, in one
   * call: only a request the key's record lets through from `clientAddress` is counted, so an
   * unknown or revoked key, or one used from outside its address blocks, uses none of the key's
   * requests. A publishable key's calls are counted per client network first
   * (middleware/rate-limit.ts): never here.
   */
  async admit(
    keyHash: string,
    now: number,
    request: { clientAddress: string | null },
  ): Promise<KeyAdmission> {
    meterFrom(this.env as MeterVars);
    meter({ doRequests: 1 });
    const answer = await this.#keyRecord(keyHash, now);
    const { record } = answer;
    const counted =
      record !== null &&
      record.revokedAt === null &&
      record.kind === 'secret' &&
      addressAdmitted(keyLimitsOf(record), request.clientAddress);
    return { ...answer, rate: counted ? this.#hit(RATE_LIMIT, RATE_WINDOW_MS) : null };
  }

  /**
   * The record of the key whose hash is `keyHash`, kept from an earlier read while it is fresh,
   * else read from D1 and kept (an unknown key is not kept). `touch` is true once a minute per
   * key: the caller records the key's use in D1 then.
   */
  async #keyRecord(keyHash: string, now: number): Promise<KeyRecordAnswer> {
    let stored = this.ctx.storage.kv.get<StoredKeyRecord>(KEY_RECORD);
    let changed = false;
    if (!stored || stored.keyHash !== keyHash || now - stored.readAt >= KEY_RECORD_TTL_MS) {
      changed = true;
      const generation = this.#generation;
      const record = await findApiKeyByHash(shardsOf(this.env), keyHash);
      if (!record) return { record: null, touch: false };
      stored = { keyHash, record, readAt: now };
      // A revocation's `forget` that arrived during the read: its record is not kept.
      if (generation !== this.#generation) return { record, touch: false };
    }
    const { lastUsedAt } = stored.record;
    const touch = lastUsedAt === null || now - lastUsedAt > LAST_USED_RESOLUTION_MS;
    if (touch) stored = { ...stored, record: { ...stored.record, lastUsedAt: now } };
    if (touch || changed) this.ctx.storage.kv.put(KEY_RECORD, stored);
    return { record: stored.record, touch };
  }

  /** Drops the key's record: the next request reads D1 (after a revocation, say). */
  forget(): void {
    meterFrom(this.env as MeterVars);
    meter({ doRequests: 1 });
    this.#generation++;
    this.ctx.storage.kv.delete(KEY_RECORD);
  }

  /** Counts one request if the window has room; a refused request is not counted. */
  hit(limit: number, windowMs: number): LimitDecision {
    meterFrom(this.env as MeterVars);
    meter({ doRequests: 1 });
    return this.#hit(limit, windowMs);
  }

  #hit(limit: number, windowMs: number): LimitDecision {
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
   * Counts one call of a publishable key for the day starting at `day` (ms, the caller's UTC
   * day) from `network`: admitted while fewer than `cap` calls and at most `storageLimit` bytes
   * (this call's `bytes` included) were admitted that day. A refused call is not counted, and a
   * new day starts from zero.
   */
  takePublishableDay(call: {
    day: number;
    cap: number;
    network: string;
    bytes: number;
    storageLimit: number;
  }): PublishableDayDecision {
    meterFrom(this.env as MeterVars);
    meter({ doRequests: 1 });
    const current = this.#publishableDay(call.day);
    let refused: PublishableDayDecision['refused'] = null;
    if (current.used >= call.cap) refused = 'cap';
    else if (current.bytes + call.bytes > call.storageLimit) refused = 'storage';
    if (refused) return { refused, use: current };
    const { networks } = current;
    const tallied =
      call.network in networks || Object.keys(networks).length < MAX_TRACKED_NETWORKS
        ? call.network
        : OTHER_NETWORKS;
    const use: PublishableDay = {
      day: current.day,
      used: current.used + 1,
      bytes: current.bytes + call.bytes,
      networks: { ...networks, [tallied]: (networks[tallied] ?? 0) + 1 },
    };
    this.ctx.storage.kv.put(DAY_KEY, use);
    return { refused: null, use };
  }

  /** The publishable key's day starting at `day`, as counted so far. */
  publishableDayOf(day: number): PublishableDay {
    return this.#publishableDay(day);
  }

  #publishableDay(day: number): PublishableDay {
    const stored = this.ctx.storage.kv.get<Partial<PublishableDay> & { day: number; used: number }>(DAY_KEY);
    // A caller whose clock is a little behind at midnight still counts against the newer day.
    if (!stored || stored.day < day) return { day, used: 0, bytes: 0, networks: {} };
    return { day: stored.day, used: stored.used, bytes: stored.bytes ?? 0, networks: stored.networks ?? {} };
  }

  #load(): number[] {
    this.#hits ??= this.ctx.storage.kv.get<number[]>(HITS_KEY) ?? [];
    return this.#hits;
  }
}
