// A new prober token's secret and the row that stores it, made once for the dashboard's Probers
// page (prober-tokens.ts) and the operator's scripts (`npm run admin -- prober-token create`).
// Like storage/inserts.ts, this file uses no Workers types, so Node scripts can import it.
import { issueSecret } from '@rcpt/shared/secret-tokens';
import type { NewProberToken } from '../../storage/inserts.ts';

export interface IssuedProberToken {
  id: string;
  /** Shown once, never stored. */
  secret: string;
  prefix: string;
}

/** A new prober token: the row to store, and the token with its secret. */
export async function issueProberToken(input: {
  region: string;
  name: string;
  /** The account whose probers link with it; null or absent: the shared fleet. */
  accountId?: string | null;
  now: number;
}): Promise<{ row: NewProberToken; token: IssuedProberToken }> {
  const issued = await issueSecret('proberToken');
  const id = crypto.randomUUID();
  return {
    row: {
      id,
      name: input.name,
      region: input.region,
      tokenHash: issued.hash,
      prefix: issued.prefix,
      createdAt: input.now,
      accountId: input.accountId ?? null,
    },
    token: { id, secret: issued.secret, prefix: issued.prefix },
  };
}
