// The Hono environment of the edge app: bindings and per-request variables.
import type { Config } from './config.ts';
import type { LimitDecision } from './objects/key-limiter.ts';
import type { Caller, KeyLimits } from './services/keys/api-keys.ts';
import type { RequestServices } from './services/request-services.ts';
import type { EarlyDeskCall } from './services/verify/desk-call.ts';
import type { Db } from './storage/db.ts';
import type { Shards } from './storage/shards.ts';

export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** When the request arrived (Date.now), for budgets counted from then. */
    receivedAt: number;
    config: Config;
    /** The deployment's databases, each read through this request's own D1 session. */
    shards: Shards;
    /** The database of the caller's account once it is known (the directory's until then). */
    db: Db;
    /** The request's services, assembled once (middleware/services.ts). */
    services: RequestServices;
    caller: Caller;
    /** How the API key of the request is limited (set by apiKeyAuth; absent for the dashboard). */
    keyLimits: KeyLimits;
    /**
     * A secret key's request as counted against its request rate, with its record in one call to
     * the key's object (set by apiKeyAuth; enforced by apiKeyRateLimit).
     */
    keyRate: LimitDecision;
    /** SHA-256 of a JSON body read by `jsonBody`, when the request carries an Idempotency-Key. */
    bodyDigest: string;
    /** The one read of the request's JSON body (middleware/json-body.ts, `readJsonBody`). */
    jsonBodyRead: Promise<void>;
    /** SHA-256 of the request's API key, hashed once (middleware/auth.ts, `presentedKeyHash`). */
    keyHash: Promise<string>;
    /**
     * A single call's desk lookup begun beside its key's admission (middleware/early-desk.ts):
     * the call takes it over, or it is given back when the request ends without it.
     */
    earlyDesk: EarlyDeskCall;
    /**
     * Set by a single call its account's desk answered without D1: the balance D1 holds did not
     * move, so the balance watch has nothing new to look at (middleware/balance-watch.ts).
     */
    balanceUnmoved: boolean;
  };
}
