// What this isolate has learnt of the API keys it admitted: for each key hash, the account, the
// key's id, its mode and its limits. None of these ever changes for a key (a key is created with
// them and can only be revoked), so they are kept without expiry; whether the key is still valid
// is never read from here: every request still asks the key's object (apiKeyAuth).
//
// A single call of a known key starts its account's desk beside that admission instead of after
// it (middleware/early-desk.ts): one round trip to a Durable Object instead of two.
import type { Caller, KeyLimits } from './api-keys.ts';

export interface KnownKey {
  caller: Pick<Caller, 'accountId' | 'apiKeyId' | 'mode'>;
  limits: Pick<KeyLimits, 'kind' | 'scopes' | 'allowedCidrs'>;
}

/** Keys kept at most: the oldest learnt is dropped first (a Map keeps insertion order). */
const MAX_KNOWN_KEYS = 10_000;

const known = new Map<string, KnownKey>();

export function knownKey(keyHash: string): KnownKey | undefined {
  return known.get(keyHash);
}

/** Kept after the key's object admitted it. */
export function learnKey(keyHash: string, key: KnownKey): void {
  if (known.has(keyHash)) return;
  if (known.size >= MAX_KNOWN_KEYS) known.delete(known.keys().next().value as string);
  known.set(keyHash, key);
}

/** Dropped when the key's object refused it (revoked): its next requests wait for the admission. */
export function unlearnKey(keyHash: string): void {
  known.delete(keyHash);
}
