// The account's settings: defaults that apply when a request does not say otherwise.
import type { AccountSettings } from '@rcpt/shared/contract/api';
import type { KeyLimiter } from '../../objects/key-limiter.ts';
import { updateAccountSettings } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { forgetKeyRecords } from '../keys/api-keys.ts';

/**
 * Changes the settings given (others stay) and returns them all. The account's keys' records,
 * which carry its settings, are forgotten once D1 holds the change: the next request of any of
 * its keys reads them again (docs/operations.md, "Customer-run probers").
 */
export async function changeAccountSettings(
  deps: { db: Db; limiters: DurableObjectNamespace<KeyLimiter> },
  accountId: string,
  changes: Partial<AccountSettings>,
): Promise<AccountSettings> {
  const changed = await updateAccountSettings(deps.db, accountId, changes);
  if (!changed) throw new Error(`authenticated account ${accountId} does not exist`);
  await forgetKeyRecords(deps.limiters, changed.keyHashes);
  return changed.settings;
}
