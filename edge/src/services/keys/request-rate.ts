// 100 requests per minute per API key (README, "Using the API"), counted by a KeyLimiter object.
// A secret key's requests are counted with its record, in one call to the object named by its
// hash (`KeyLimiter.admit`, from apiKeyAuth); here are a publishable key's own count (after its
// client network's share) and, per account, a request without a key (the dashboard).
import {
  type KeyLimiter,
  type LimitDecision,
  RATE_LIMIT,
  RATE_WINDOW_MS,
} from '../../objects/key-limiter.ts';

/** Counts one API request of `caller` if its window has room (a refused one is not counted). */
export async function hitRequestRate(
  limiters: DurableObjectNamespace<KeyLimiter>,
  caller: { apiKeyId: string | null; accountId: string },
): Promise<LimitDecision> {
  const subject = caller.apiKeyId ? `key:${caller.apiKeyId}` : `account:${caller.accountId}`;
  return limiters.get(limiters.idFromName(subject)).hit(RATE_LIMIT, RATE_WINDOW_MS);
}
