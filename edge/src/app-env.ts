// The Hono environment of the edge app: bindings and per-request variables.
import type { Config } from './config.ts';
import type { KeyLimits } from './services/keys/api-keys.ts';
import type { Db } from './storage/db.ts';

export interface Caller {
  accountId: string;
  /** The API key used; null for the dashboard (a signed-in person). */
  apiKeyId: string | null;
  mode: 'live' | 'test';
  /** The balance when the request was authenticated (a snapshot: charges read their own). */
  creditBalance: number;
}

export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** When the request arrived (Date.now), for budgets counted from then. */
    receivedAt: number;
    config: Config;
    db: Db;
    caller: Caller;
    /** How the API key of the request is limited (set by apiKeyAuth; absent for the dashboard). */
    keyLimits: KeyLimits;
    /** SHA-256 of a JSON body read by `jsonBody`, when the request carries an Idempotency-Key. */
    bodyDigest: string;
  };
}
