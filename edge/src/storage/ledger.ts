// The one writer of credit movements (docs/money.md). Every change of a balance is a pair of
// statements run in the same D1 batch (one transaction): a credit_ledger row and the balance
// update, both carrying the same condition, so either both apply or neither does. The
// builders return plain SQL with numbered parameters, so a caller composes them with its own
// statements into its batch, and the operator scripts run the very same SQL through wrangler.
// A balance is never read, changed in code and written back.

import type { LedgerReason } from '@rcpt/shared/contract/ledger-reasons';
import { normaliseMailbox } from '@rcpt/shared/verify/mailbox';

export type { LedgerReason };

export type SqlValue = string | number | null;

/** One SQL statement with `?N` parameters. */
export interface SqlStatement {
  sql: string;
  params: SqlValue[];
}

export interface CreditMovement {
  accountId: string;
  /** Credits moved, ≥ 0. A movement of 0 writes no ledger row. */
  amount: number;
  reason: LedgerReason;
  /** Request id of a single verification, job id of a batch, account id of a sign-up grant. */
  reference: string;
  now: number;
}

/**
 * A movement as its two statements. Run `entry` before `balance` in one batch: statements
 * placed between them still see the balance before the movement. `balance` returns the new
 * `credit_balance` when the movement applied, and no row when it did not.
 */
export interface LedgerPair {
  entry: SqlStatement;
  balance: SqlStatement;
}

const LEDGER_COLUMNS = 'credit_ledger (account_id, delta, balance_after, reason, reference, created_at)';

/**
 * SQL for the credits of the accounts row `row` (a table alias, or '' for the row itself) that a
 * charge may take: its balance less what its desk holds for the single calls it charges
 * (`credits_reserved`, docs/money.md "Where the balance lives"). Every debit, and every reader of
 * what an account can still spend, compares with this one expression, so no credit held by the
 * desk is spent twice and the balance never goes below zero when the desk books what it spent.
 */
export function freeCreditsSql(row = ''): string {
  const column = (name: string) => (row ? `${row}.${name}` : name);
  return `(${column('credit_balance')} - ${column('credits_reserved')})`;
}

/**
 * SQL for the credits the account `accountParam` (an SQL parameter such as `?2`) may spend on new
 * work: its balance, or none while a dispute of one of its payments is open (docs/money.md,
 * "Disputes"). Every admission of paid work compares its charge with this, in the statement that
 * writes the work, so a dispute that opens stops the very next charge. A charge of 0 (a sandbox
 * job) is still admitted.
 */
export function spendableCreditsSql(accountParam: string): string {
  return `(SELECT CASE WHEN open_disputes > 0 THEN 0 ELSE ${freeCreditsSql()} END FROM accounts WHERE id = ${accountParam})`;
}

function movementParams(movement: CreditMovement): SqlValue[] {
  if (!Number.isInteger(movement.amount) || movement.amount < 0) {
    throw new Error(`a credit movement is a non-negative integer, not ${movement.amount}`);
  }
  return [movement.accountId, movement.amount, movement.reason, movement.reference, movement.now];
}

/**
 * Takes `amount` credits only if the free credits cover them (`freeCreditsSql() >= amount`) and
 * `onlyIf` holds: an SQL condition of the caller's that may use `?1` (the account id) and
 * `?4` (the reference), e.g. that the job it pays for was written earlier in the same batch.
 */
export function debit(movement: CreditMovement, onlyIf?: string): LedgerPair {
  const params = movementParams(movement);
  const guard = onlyIf ? `AND (${onlyIf})` : '';
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT id, -?2, credit_balance - ?2, ?3, ?4, ?5 FROM accounts
            WHERE id = ?1 AND ${freeCreditsSql()} >= ?2 AND ?2 > 0 ${guard}`,
      params,
    },
    balance: {
      sql: `UPDATE accounts SET credit_balance = credit_balance - ?2
            WHERE id = ?1 AND ${freeCreditsSql()} >= ?2 ${guard} RETURNING credit_balance`,
      // SQLite numbers parameters up to the highest one used: the guard may use ?4.
      params: onlyIf ? params.slice(0, 4) : params.slice(0, 2),
    },
  };
}

/** Adds `amount` credits (a grant or a refund). Applies whenever the account exists. */
export function credit(movement: CreditMovement): LedgerPair {
  const params = movementParams(movement);
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT id, ?2, credit_balance + ?2, ?3, ?4, ?5 FROM accounts WHERE id = ?1 AND ?2 > 0`,
      params,
    },
    balance: {
      sql: 'UPDATE accounts SET credit_balance = credit_balance + ?2 WHERE id = ?1 RETURNING credit_balance',
      params: params.slice(0, 2),
    },
  };
}

/**
 * For an account made with its opening credits (by an operator, or a test): the statement that
 * records its email's mailbox as having had its free credits, unless another account holds it
 * already (the operator's grant applies either way), so that a later sign-up of the same
 * mailbox gets none. None without an email or credits. Run after the account's insert, in the
 * same batch.
 */
export function claimSignupMailbox(claim: {
  accountId: string;
  email: string | null;
  amount: number;
  now: number;
}): SqlStatement[] {
  if (!claim.email || claim.amount <= 0) return [];
  return [
    {
      sql: `INSERT INTO signup_grant_mailboxes (mailbox, account_id, granted_at) VALUES (?1, ?2, ?3)
            ON CONFLICT (mailbox) DO NOTHING`,
      params: [normaliseMailbox(claim.email), claim.accountId, claim.now],
    },
  ];
}

/** The statements of a sign-up grant: `claim` runs first, then the ledger pair, in one batch. */
export interface SignupGrant extends LedgerPair {
  claim: SqlStatement;
}

/**
 * The free credits of a dashboard sign-up, granted when its owner confirms the email address,
 * once per mailbox across all accounts (docs/money.md, "Free credits"). Applies only while the
 * account with this id and this email is unconfirmed:
 * - `claim` records `mailbox` (shared `normaliseMailbox` of the email) for this account, unless
 *   another account holds it already (its primary key decides, in the same transaction);
 * - `entry` writes one `signup_grant` row referencing the account, only if this account holds
 *   the mailbox;
 * - `balance` stamps `email_confirmed_at` and adds the credits only if this account holds the
 *   mailbox. Unlike other pairs it returns a row whenever it confirmed the account:
 *   `credit_balance` and `granted` (1: the credits were added, 0: the mailbox had had its grant).
 * A second confirmation (another click, a replay, a concurrent request) finds the account
 * confirmed and moves nothing; the ledger's unique (reference, reason) index stops a second
 * grant row in any case.
 */
export function signupGrantOnConfirmation(grant: {
  accountId: string;
  email: string;
  mailbox: string;
  amount: number;
  now: number;
}): SignupGrant {
  const [accountId, amount, , , now] = movementParams({ ...grant, reason: 'signup_grant', reference: '' });
  const params = [accountId, amount, grant.email, now, grant.mailbox] as SqlValue[];
  const unconfirmed = 'id = ?1 AND email = ?3 AND email_confirmed_at IS NULL';
  const holds = 'EXISTS (SELECT 1 FROM signup_grant_mailboxes WHERE mailbox = ?5 AND account_id = ?1)';
  return {
    claim: {
      sql: `INSERT INTO signup_grant_mailboxes (mailbox, account_id, granted_at)
            SELECT ?5, id, ?4 FROM accounts WHERE ${unconfirmed} AND ?2 > 0
            ON CONFLICT (mailbox) DO NOTHING`,
      params,
    },
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT id, ?2, credit_balance + ?2, 'signup_grant', id, ?4 FROM accounts
            WHERE ${unconfirmed} AND ?2 > 0 AND ${holds}`,
      params,
    },
    balance: {
      sql: `UPDATE accounts SET credit_balance = credit_balance + (CASE WHEN ${holds} THEN ?2 ELSE 0 END),
              email_confirmed_at = ?4
            WHERE ${unconfirmed} RETURNING credit_balance, ${holds} AS granted`,
      params,
    },
  };
}

/**
 * The refund of a batch job that has just finished (completed or failed) and is not yet
 * finalized: its `credits_refunded`, as one `bulk_refund` row referencing the job. Run it
 * before the statement that sets `finalized`, in the same batch; a replay finds the job
 * finalized and moves nothing (and the ledger's unique (reference, reason) index stops a
 * second row in any case).
 */
export function refundFinishedJob(jobId: string, now: number): LedgerPair {
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT j.account_id, j.credits_refunded, a.credit_balance + j.credits_refunded, 'bulk_refund', j.id, ?2
            FROM jobs j JOIN accounts a ON a.id = j.account_id
            WHERE j.id = ?1 AND j.status IN ('completed', 'failed') AND j.finalized = 0 AND j.credits_refunded > 0`,
      params: [jobId, now],
    },
    balance: {
      sql: `UPDATE accounts SET credit_balance = credit_balance + (SELECT credits_refunded FROM jobs WHERE id = ?1)
            WHERE id = (SELECT account_id FROM jobs
              WHERE id = ?1 AND status IN ('completed', 'failed') AND finalized = 0 AND credits_refunded > 0)
            RETURNING credit_balance`,
      params: [jobId],
    },
  };
}

/**
 * The refund of a single verification that was charged and never answered: what its
 * `verify` row took, as one `verify_refund` row referencing the request. Applies only while
 * the verification is still open (its history row has no result); run it before the
 * statement that closes it, in the same batch, so a second refund finds nothing to do.
 */
export function refundUnansweredVerification(verificationId: string, now: number): LedgerPair {
  const charged = `SELECT l.account_id, -l.delta AS amount FROM credit_ledger l
    JOIN verifications v ON v.id = l.reference AND v.kind = 'single' AND v.status IS NULL
    WHERE l.reference = ?1 AND l.reason = 'verify' AND l.delta < 0`;
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT a.id, c.amount, a.credit_balance + c.amount, 'verify_refund', ?1, ?2
            FROM (${charged}) c JOIN accounts a ON a.id = c.account_id`,
      params: [verificationId, now],
    },
    balance: {
      sql: `UPDATE accounts SET credit_balance = credit_balance + (SELECT amount FROM (${charged}))
            WHERE id = (SELECT account_id FROM (${charged})) RETURNING credit_balance`,
      params: [verificationId],
    },
  };
}

/**
 * The charge of a follow-up round's answers (docs/money.md, "Batch"): one credit for each of the
 * `candidates` (addresses refunded at completion, now answered with a known verdict), lowest
 * index first, as many as the balance covers, as one `recheck_charge` row whose reference names
 * the job and its running round (`<jobId>:round-<n>`). Each charged address is kept in
 * `job_recheck_charges` (once in a job's life: it is paid for from then on), written in the
 * transaction that moves its credit: a candidate found there is not charged again. The last
 * statement returns the candidates that are paid for — charged now or before — which the job's
 * lists then record as paid; and the running round's number. Run them in order, in one batch.
 */
export function chargeRecheckedAddresses(
  jobId: string,
  candidates: readonly number[],
  now: number,
): SqlStatement[] {
  const fresh = '(SELECT COUNT(*) FROM job_recheck_charges WHERE job_id = ?1 AND applied = 0)';
  const account = '(SELECT account_id FROM jobs WHERE id = ?1)';
  return [
    {
      sql: `INSERT INTO job_recheck_charges (job_id, idx, round)
            SELECT ?1, c.value, (SELECT recheck_round FROM jobs WHERE id = ?1) FROM json_each(?2) c
            WHERE c.value NOT IN (SELECT idx FROM job_recheck_charges WHERE job_id = ?1)
            ORDER BY c.value
            LIMIT (SELECT MAX(0, ${freeCreditsSql()}) FROM accounts WHERE id = ${account})`,
      params: [jobId, JSON.stringify(candidates)],
    },
    {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT a.id, -${fresh}, a.credit_balance - ${fresh}, 'recheck_charge', j.id || ':round-' || j.recheck_round, ?2
            FROM jobs j JOIN accounts a ON a.id = j.account_id
            WHERE j.id = ?1 AND ${fresh} > 0`,
      params: [jobId, now],
    },
    {
      sql: `UPDATE jobs SET credits_charged = credits_charged + ${fresh} WHERE id = ?1 AND ${fresh} > 0`,
      params: [jobId],
    },
    {
      sql: `UPDATE accounts SET credit_balance = credit_balance - ${fresh} WHERE id = ${account} AND ${fresh} > 0`,
      params: [jobId],
    },
    {
      sql: 'UPDATE job_recheck_charges SET applied = 1 WHERE job_id = ?1 AND applied = 0',
      params: [jobId],
    },
    {
      sql: `SELECT (SELECT recheck_round FROM jobs WHERE id = ?1) AS round,
              (SELECT json_group_array(idx) FROM (SELECT idx FROM job_recheck_charges
                WHERE job_id = ?1 AND idx IN (SELECT value FROM json_each(?2)) ORDER BY idx)) AS paid`,
      params: [jobId, JSON.stringify(candidates)],
    },
  ];
}

/** A purchase's grant: its ledger pair, then `settle`, the pair that pays the account's debt from it. */
export interface PurchaseGrant extends LedgerPair {
  settle: LedgerPair;
}

/**
 * The credits of a purchase Stripe says was paid (docs/money.md, "Buying credits"): its
 * `credits`, as one `purchase` row whose reference is the Stripe payment (the Checkout Session
 * id, or the PaymentIntent id of an automatic top-up). Applies only while the purchase is
 * pending; run it before the statement that marks it paid, in the same batch, so a replayed or
 * concurrent delivery of the webhook finds it paid and grants nothing (the ledger's unique
 * (reference, reason) index stops a second row in any case).
 *
 * `settle` then pays what a lost dispute left owed (docs/money.md, "Disputes") out of these
 * credits first: one `debt_settlement` row with the same reference, taking the smaller of the
 * debt and the purchase's credits from the balance and the debt alike. Run `entry`, `balance`,
 * `settle.entry`, `settle.balance`, then the statement that marks the purchase paid.
 */
export function grantPurchase(purchaseId: string, reference: string, now: number): PurchaseGrant {
  const pending = "SELECT account_id, credits FROM purchases WHERE id = ?1 AND status = 'pending'";
  const settled = "SELECT -delta FROM credit_ledger WHERE reference = ?2 AND reason = 'debt_settlement'";
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT a.id, p.credits, a.credit_balance + p.credits, 'purchase', ?2, ?3
            FROM (${pending}) p JOIN accounts a ON a.id = p.account_id WHERE p.credits > 0`,
      params: [purchaseId, reference, now],
    },
    balance: {
      sql: `UPDATE accounts SET credit_balance = credit_balance + (SELECT credits FROM (${pending}))
            WHERE id = (SELECT account_id FROM (${pending})) RETURNING credit_balance`,
      params: [purchaseId],
    },
    settle: {
      entry: {
        sql: `INSERT INTO ${LEDGER_COLUMNS}
              SELECT a.id, -MIN(a.credit_debt, p.credits, ${freeCreditsSql('a')}), a.credit_balance - MIN(a.credit_debt, p.credits, ${freeCreditsSql('a')}),
                'debt_settlement', ?2, ?3
              FROM (${pending}) p JOIN accounts a ON a.id = p.account_id
              WHERE a.credit_debt > 0 AND p.credits > 0`,
        params: [purchaseId, reference, now],
      },
      balance: {
        // Exactly what the row above took, while the purchase is still pending.
        sql: `UPDATE accounts SET credit_balance = credit_balance - (${settled}),
                credit_debt = credit_debt - (${settled})
              WHERE id = (SELECT account_id FROM (${pending})) AND EXISTS (${settled})
              RETURNING credit_balance`,
        params: [purchaseId, reference],
      },
    },
  };
}

/** A take-back of refunded credits: the ledger pair, then `record`, which moves the purchase on. */
export interface RefundTakeBack extends LedgerPair {
  record: SqlStatement;
}

/**
 * What a refund of a paid purchase takes back (docs/money.md, "Refunds"): `amountRefunded` is
 * the payment's refunded total so far (Stripe's `charge.amount_refunded`, in minor units). The
 * purchase's credits are owed back in proportion, rounded down, less what earlier refunds of it
 * owed; the balance gives up as many of those as it still holds and never goes below zero (credits
 * already spent stay spent). One `purchase_refund` row with `reference` (the payment and the
 * refunded total, so each refunded amount moves once); `record` stores the refunded total and the
 * credits taken back, and marks the purchase refunded or partially refunded. Applies only while
 * the stored refunded total is below `amountRefunded`, so a replay moves nothing.
 */
export function takeBackRefundedCredits(
  purchaseId: string,
  amountRefunded: number,
  reference: string,
  now: number,
): RefundTakeBack {
  if (!Number.isInteger(amountRefunded) || amountRefunded < 0) {
    throw new Error(`a refunded amount is a non-negative integer, not ${amountRefunded}`);
  }
  const refunded = 'MIN(CAST(?2 AS INTEGER), p.amount)';
  const owed = `(p.credits * ${refunded} / p.amount - p.credits * p.amount_refunded / p.amount)`;
  const open = `p.id = ?1 AND p.status IN ('paid', 'partially_refunded') AND p.amount_refunded < ${refunded}`;
  const takenBack = "SELECT -delta FROM credit_ledger WHERE reference = ?3 AND reason = 'purchase_refund'";
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT a.id, -MIN(${owed}, ${freeCreditsSql('a')}), a.credit_balance - MIN(${owed}, ${freeCreditsSql('a')}),
              'purchase_refund', ?3, ?4
            FROM purchases p JOIN accounts a ON a.id = p.account_id
            WHERE ${open} AND MIN(${owed}, ${freeCreditsSql('a')}) > 0`,
      params: [purchaseId, amountRefunded, reference, now],
    },
    balance: {
      // Exactly what the row above took, while the purchase still shows the older refunded total.
      sql: `UPDATE accounts SET credit_balance = credit_balance - (${takenBack})
            WHERE id = (SELECT p.account_id FROM purchases p WHERE ${open}) AND EXISTS (${takenBack})
            RETURNING credit_balance`,
      params: [purchaseId, amountRefunded, reference],
    },
    record: {
      sql: `UPDATE purchases AS p SET
              credits_taken_back = credits_taken_back + COALESCE((${takenBack}), 0),
              status = CASE WHEN ${refunded} >= p.amount THEN 'refunded' ELSE 'partially_refunded' END,
              amount_refunded = ${refunded}
            WHERE ${open} RETURNING account_id AS accountId`,
      params: [purchaseId, amountRefunded, reference],
    },
  };
}

/** A dispute's statements: its ledger pair, then `record`, which moves the dispute on. */
export interface DisputeMovement extends LedgerPair {
  record: SqlStatement;
}

/**
 * A dispute that has just been written `opening` (docs/money.md, "Disputes"): the balance gives
 * up the credits the dispute owes as far as it holds them (never below zero), as one
 * `dispute_hold` row referencing the dispute; `balance` also counts the dispute open, which stops
 * the account's paid work; `record` stores what was held and marks the dispute `open`. A replay
 * finds it open and moves nothing.
 */
export function holdDisputedCredits(disputeId: string, now: number): DisputeMovement {
  const held = "SELECT -delta FROM credit_ledger WHERE reference = ?1 AND reason = 'dispute_hold'";
  const opening = "SELECT account_id FROM disputes WHERE id = ?1 AND status = 'opening'";
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT a.id, -MIN(d.credits_owed, ${freeCreditsSql('a')}), a.credit_balance - MIN(d.credits_owed, ${freeCreditsSql('a')}),
              'dispute_hold', d.id, ?2
            FROM disputes d JOIN accounts a ON a.id = d.account_id
            WHERE d.id = ?1 AND d.status = 'opening' AND MIN(d.credits_owed, ${freeCreditsSql('a')}) > 0`,
      params: [disputeId, now],
    },
    balance: {
      sql: `UPDATE accounts SET credit_balance = credit_balance - COALESCE((${held}), 0),
              open_disputes = open_disputes + 1
            WHERE id = (${opening}) RETURNING credit_balance`,
      params: [disputeId],
    },
    record: {
      sql: `UPDATE disputes SET status = 'open', credits_held = COALESCE((${held}), 0)
            WHERE id = ?1 AND status = 'opening' RETURNING account_id AS accountId`,
      params: [disputeId],
    },
  };
}

/**
 * A dispute that closed (docs/money.md, "Disputes"), only while it is open. `won` (or an inquiry
 * that closed, or one Stripe prevented): the held credits come back, one `dispute_return` row
 * referencing the dispute. `lost`: nothing comes back and what the balance could not give up
 * (`credits_owed - credits_held`, credits already spent) becomes the account's debt, which the
 * next purchases settle. Either way the account counts one open dispute fewer.
 */
export function closeDispute(disputeId: string, outcome: 'won' | 'lost', now: number): DisputeMovement {
  const open = `SELECT account_id, credits_owed, credits_held FROM disputes WHERE id = ?1 AND status = 'open'`;
  // What comes back to the balance, and what becomes debt, as columns of the open dispute.
  const returned = outcome === 'won' ? 'credits_held' : '0';
  const owedOn = outcome === 'lost' ? 'credits_owed - credits_held' : '0';
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT a.id, d.credits_held, a.credit_balance + d.credits_held, 'dispute_return', ?1, ?2
            FROM (${open}) d JOIN accounts a ON a.id = d.account_id WHERE ?3 = 'won' AND d.credits_held > 0`,
      params: [disputeId, now, outcome],
    },
    balance: {
      sql: `UPDATE accounts SET
              credit_balance = credit_balance + (SELECT ${returned} FROM (${open})),
              credit_debt = credit_debt + (SELECT ${owedOn} FROM (${open})),
              open_disputes = MAX(open_disputes - 1, 0)
            WHERE id = (SELECT account_id FROM (${open})) RETURNING credit_balance`,
      params: [disputeId],
    },
    record: {
      sql: `UPDATE disputes SET status = ?2, closed_at = ?3 WHERE id = ?1 AND status = 'open'
            RETURNING account_id AS accountId`,
      params: [disputeId, outcome, now],
    },
  };
}

/** A claim on the guarantee (docs/money.md, "The guarantee"): one bounced `deliverable` verdict. */
export interface GuaranteeClaim {
  accountId: string;
  /** The verdict: a single call's request id, or `<jobId>:<address>` for a job's address. */
  reference: string;
  /** The charge that paid for the verdict: `verify` of the request, or `bulk_charge` of the job. */
  charge: { reason: 'verify' | 'bulk_charge'; reference: string };
  /** Start of the UTC month the cap counts in. */
  monthStart: number;
  /** Charged verifications of the month per refund the month allows. */
  verificationsPerRefund: number;
  now: number;
}

/**
 * One credit back for a claim, as a `guarantee_refund` row, only when: the verdict's charge is in
 * the ledger (taken, and for a single call not refunded); no refund of that verdict was made
 * before; and the account's refunds of the month stay under its charged verifications of the
 * month (charges less refunds) ÷ `verificationsPerRefund`, rounded down. `balance` applies only when `entry`
 * inserted its row (SQLite's changes() of the statement just before it): run them one after the
 * other in the same batch.
 */
export function refundGuaranteedVerdict(claim: GuaranteeClaim): LedgerPair {
  const charged = `EXISTS (SELECT 1 FROM credit_ledger WHERE account_id = ?1 AND reason = ?3 AND reference = ?4 AND delta < 0)
    AND NOT EXISTS (SELECT 1 FROM credit_ledger WHERE account_id = ?1 AND reason = 'verify_refund' AND reference = ?4)`;
  const refundedBefore =
    "EXISTS (SELECT 1 FROM credit_ledger WHERE reference = ?2 AND reason = 'guarantee_refund')";
  const monthRefunds = `(SELECT COUNT(*) FROM credit_ledger
    WHERE account_id = ?1 AND reason = 'guarantee_refund' AND created_at >= ?6)`;
  const monthCharged = `(SELECT COALESCE(-SUM(delta), 0) FROM credit_ledger WHERE account_id = ?1 AND created_at >= ?6
    AND reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'recheck_charge'))`;
  return {
    entry: {
      sql: `INSERT INTO ${LEDGER_COLUMNS}
            SELECT id, 1, credit_balance + 1, 'guarantee_refund', ?2, ?5 FROM accounts
            WHERE id = ?1 AND ${charged} AND NOT ${refundedBefore}
              AND (${monthRefunds} + 1) * ?7 <= ${monthCharged}`,
      params: [
        claim.accountId,
        claim.reference,
        claim.charge.reason,
        claim.charge.reference,
        claim.now,
        claim.monthStart,
        claim.verificationsPerRefund,
      ],
    },
    balance: {
      sql: 'UPDATE accounts SET credit_balance = credit_balance + 1 WHERE id = ?1 AND changes() > 0 RETURNING credit_balance',
      params: [claim.accountId],
    },
  };
}
