// Sealed secrets moved to the current sealing format (services/accounts/secret-box.ts) in place: each
// statement replaces the stored value only while it is still the one that was opened, so a
// secret rotated meanwhile is never overwritten with the older one.
import type { Db } from './db.ts';

/** Where a sealed secret is stored: bound to the value as associated data. */
export type SealedPlace =
  | { table: 'accounts'; column: 'webhook_secret'; rowId: string }
  | { table: 'api_keys'; column: 'turnstile_secret'; rowId: string }
  | { table: 'outcome_endpoints'; column: 'credential'; rowId: string };

const REPLACE: Record<SealedPlace['table'], string> = {
  accounts: 'UPDATE accounts SET webhook_secret = ?3 WHERE id = ?1 AND webhook_secret = ?2',
  api_keys: 'UPDATE api_keys SET turnstile_secret = ?3 WHERE id = ?1 AND turnstile_secret = ?2',
  outcome_endpoints: 'UPDATE outcome_endpoints SET credential = ?3 WHERE id = ?1 AND credential = ?2',
};

export async function replaceSealedSecret(
  db: Db,
  place: SealedPlace,
  from: string,
  to: string,
): Promise<void> {
  await db.$client.prepare(REPLACE[place.table]).bind(place.rowId, from, to).run();
}
