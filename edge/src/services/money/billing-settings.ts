// The account's billing settings as the Credits page changes them (docs/money.md, "Buying
// credits"): its balance alerts and automatic top-up, and forgetting the saved card. A balance
// already below a new threshold is acted on at once by the caller's balance watch (balance-watch.ts),
// not at the next spend.
import type { Db } from '../../storage/db.ts';
import { type BalanceAlerts, forgetPaymentMethod, saveBalanceAlerts } from '../../storage/purchases.ts';

/** Saves the account's low-balance threshold and automatic top-up (null: off). */
export async function changeBalanceAlerts(
  db: Db,
  accountId: string,
  alerts: BalanceAlerts,
  now: number,
): Promise<void> {
  await saveBalanceAlerts(db, accountId, alerts, now);
}

/** Forgets the account's saved card, and with it the automatic top-up that would charge it. */
export async function forgetCard(db: Db, accountId: string, now: number): Promise<void> {
  await forgetPaymentMethod(db, accountId, now);
}
