// Disputes of purchases (docs/money.md, "Disputes"). Each change composes ledger.ts statements
// with the dispute's own state change in one batch, guarded by that state, so a webhook
// delivered twice, or twice at once, moves nothing the second time.
import { type Db, prepare } from './db.ts';
import { closeDispute, holdDisputedCredits } from './ledger.ts';

export interface Dispute {
  id: string;
  accountId: string;
  purchaseId: string;
  amount: number;
  status: 'opening' | 'open' | 'won' | 'lost';
  creditsOwed: number;
  creditsHeld: number;
  createdAt: number;
  closedAt: number | null;
}

const DISPUTE_COLUMNS = `id, account_id AS accountId, purchase_id AS purchaseId, amount, status,
  credits_owed AS creditsOwed, credits_held AS creditsHeld, created_at AS createdAt, closed_at AS closedAt`;

/**
 * Opens a dispute of a paid purchase, once: writes it, takes the credits the disputed amount
 * bought back from the balance as far as it holds them (the purchase's credits in proportion to
 * `amount`, rounded down, less what refunds of it took back already), and counts it open on the
 * account, which suspends its paid work. Returns the account when this call opened it, null when
 * it was open (or closed) already or the purchase is not one of ours.
 */
export async function openDispute(
  db: Db,
  dispute: { id: string; purchaseId: string; amount: number; now: number },
): Promise<string | null> {
  const d1 = db.$client;
  const hold = holdDisputedCredits(dispute.id, dispute.now);
  const [, , , opened] = await d1.batch<{ accountId: string }>([
    d1
      .prepare(
        `INSERT INTO disputes (id, account_id, purchase_id, amount, status, credits_owed, credits_held, created_at)
         SELECT ?1, p.account_id, p.id, ?3, 'opening',
           MAX(MIN(p.credits * MIN(CAST(?3 AS INTEGER), p.amount) / p.amount, p.credits - p.credits_taken_back), 0),
           0, ?4
         FROM purchases p
         WHERE p.id = ?2 AND p.amount > 0 AND p.status IN ('paid', 'partially_refunded', 'refunded')
         ON CONFLICT (id) DO NOTHING`,
      )
      .bind(dispute.id, dispute.purchaseId, dispute.amount, dispute.now),
    prepare(d1, hold.entry),
    prepare(d1, hold.balance),
    prepare(d1, hold.record),
  ]);
  return opened?.results[0]?.accountId ?? null;
}

/** Closes an open dispute, won or lost (ledger.ts `closeDispute`). The account, or null if it was not open. */
export async function settleDispute(
  db: Db,
  closing: { id: string; outcome: 'won' | 'lost'; now: number },
): Promise<string | null> {
  const d1 = db.$client;
  const close = closeDispute(closing.id, closing.outcome, closing.now);
  const [, , closed] = await d1.batch<{ accountId: string }>([
    prepare(d1, close.entry),
    prepare(d1, close.balance),
    prepare(d1, close.record),
  ]);
  return closed?.results[0]?.accountId ?? null;
}

/** The account's disputes still open, oldest first, for its Credits page. */
export async function openDisputesOf(db: Db, accountId: string): Promise<Dispute[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT ${DISPUTE_COLUMNS} FROM disputes WHERE account_id = ?1 AND status = 'open' ORDER BY created_at, id`,
    )
    .bind(accountId)
    .all<Dispute>();
  return results;
}

/** What a lost dispute left the account owing, in credits (0: nothing). */
export async function creditDebtOf(db: Db, accountId: string): Promise<number> {
  const row = await db.$client
    .prepare('SELECT credit_debt AS debt FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ debt: number }>();
  return row?.debt ?? 0;
}

/** Whether a dispute of one of the account's payments is open: its paid work is suspended. */
export async function hasOpenDispute(db: Db, accountId: string): Promise<boolean> {
  const row = await db.$client
    .prepare('SELECT open_disputes AS open FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ open: number }>();
  return (row?.open ?? 0) > 0;
}
