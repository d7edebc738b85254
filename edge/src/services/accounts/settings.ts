// The account's settings: defaults that apply when a request does not say otherwise.
import type { AccountSettings } from '@rcpt/shared/contract/api';
import { updateAccountSettings } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';

/** Changes the settings given (others stay) and returns them all. */
export async function changeAccountSettings(
  db: Db,
  accountId: string,
  changes: Partial<AccountSettings>,
): Promise<AccountSettings> {
  const settings = await updateAccountSettings(db, accountId, changes);
  if (!settings) throw new Error(`authenticated account ${accountId} does not exist`);
  return settings;
}
