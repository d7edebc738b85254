// Prober tokens (docs/operations.md, "Customer-run probers"): random secrets shown once, stored
// as SHA-256 hashes with a visible prefix. The operator makes them for the shared fleet or for
// an account (`npm run admin -- prober-token create`); an account makes its own on the
// dashboard's Probers page, up to its quota, and revokes them there.
import type { Db } from '../../storage/db.ts';
import { insertProberTokenWithin, revokeAccountProberToken } from '../../storage/prober-tokens.ts';
import { assertStoredWithin } from '../money/quotas.ts';
import { type IssuedProberToken, issueProberToken } from './prober-token-secret.ts';

/**
 * A token for the account's own probers in `region`, unless the account already has
 * `maxActive` live ones (429 QUOTA_EXCEEDED, nothing stored).
 */
export async function createAccountProberToken(
  db: Db,
  input: { accountId: string; region: string; name: string; maxActive: number; now: number },
): Promise<IssuedProberToken> {
  const { row, token } = await issueProberToken(input);
  const stored = await insertProberTokenWithin(db, { ...row, accountId: input.accountId }, input.maxActive);
  assertStoredWithin(stored, { quota: 'prober_tokens', limit: input.maxActive, now: input.now });
  return token;
}

/**
 * Revokes the account's live token `tokenId`: its probers' links close within a minute (the
 * hub checks its probers' tokens again every TOKEN_RECHECK_MS). False: no such live token.
 */
export function revokeProberToken(db: Db, accountId: string, tokenId: string, now: number): Promise<boolean> {
  return revokeAccountProberToken(db, accountId, tokenId, now);
}
