// The account's desk as the rest of the edge uses it (objects/account-desk.ts; docs/money.md,
// "Where the balance lives"): single calls are charged and recorded there, and whatever reads the
// account's history or balance from D1, or charges it there, settles the desk first.
import type { AccountDesk } from '../../objects/account-desk.ts';

export type AccountDesks = DurableObjectNamespace<AccountDesk>;
export type AccountDeskStub = DurableObjectStub<AccountDesk>;

/** The desk of `accountId`. */
export function deskOf(desks: AccountDesks, accountId: string): AccountDeskStub {
  return desks.getByName(accountId);
}

/**
 * Writes what the account's desk answered to D1, so D1's history, ledger and balance are whole;
 * with `release`, gives its unspent credits back too, so a charge made in D1 (an upload, a
 * follow-up round, a refund taken back) may spend all of the balance.
 */
export async function settleDesk(
  desks: AccountDesks,
  accountId: string,
  options: { release?: boolean } = {},
): Promise<void> {
  await deskOf(desks, accountId).settle(options);
}

/** Has the account's desk forget its verdicts of `addresses` (an outcome was reported for each). */
export async function forgetDeskVerdicts(
  desks: AccountDesks,
  accountId: string,
  mode: 'live' | 'test',
  addresses: readonly string[],
): Promise<void> {
  if (addresses.length > 0) await deskOf(desks, accountId).forget(mode, addresses);
}
