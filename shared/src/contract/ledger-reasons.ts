// Every way a credit balance moves, as data: the reason written on each credit_ledger row, which
// way it moves, what its reference names and what causes it. docs/money.md prints this table
// (`ledgerMarkdown()`, compared by a test), and the edge's ledger writes only these reasons.

export interface LedgerReasonRow {
  /** `+`: credits added; `−`: credits taken. */
  direction: '+' | '−';
  /** What causes the movement. */
  when: string;
  /** What the row's reference names. */
  reference: string;
  /** A (reference, reason) pair moves once: the ledger's unique index holds it. */
  once: boolean;
}

export const LEDGER_REASONS = {
  signup_grant: {
    direction: '+',
    when: 'the owner confirms the email address of a dashboard sign-up (once per mailbox)',
    reference: 'the account',
    once: true,
  },
  grant: {
    direction: '+',
    when: 'an operator grants credits',
    reference: "the operator's note",
    once: false,
  },
  verify: {
    direction: '−',
    when: 'a single verification with a live or publishable key',
    reference: 'the request id',
    once: true,
  },
  verify_refund: {
    direction: '+',
    when: "a charged single verification failed on rcpt's side before its answer",
    reference: 'the request id',
    once: true,
  },
  bulk_charge: {
    direction: '−',
    when: 'a list is uploaded: its unique valid addresses',
    reference: 'the job id',
    once: true,
  },
  bulk_refund: {
    direction: '+',
    when: 'a job finishes: its addresses whose final answer is refundable',
    reference: 'the job id',
    once: true,
  },
  recheck_charge: {
    direction: '−',
    when: 'a follow-up round answers a refunded address with a known verdict',
    reference: '`<jobId>:round-<n>`',
    once: false,
  },
  purchase: {
    direction: '+',
    when: 'Stripe says a credit pack or an automatic top-up was paid',
    reference: 'the Checkout Session or PaymentIntent id',
    once: true,
  },
  purchase_refund: {
    direction: '−',
    when: 'Stripe says a payment was refunded: its credits in proportion, as far as the balance holds them',
    reference: '`<charge>:<refunded total>`',
    once: true,
  },
  dispute_hold: {
    direction: '−',
    when: "a payment is disputed (`charge.dispute.created`): the disputed amount's credits, as far as the balance holds them",
    reference: 'the Stripe dispute id',
    once: true,
  },
  dispute_return: {
    direction: '+',
    when: 'the dispute closes won (or an inquiry closes): the held credits come back',
    reference: 'the Stripe dispute id',
    once: true,
  },
  debt_settlement: {
    direction: '−',
    when: "a purchase is paid while a lost dispute left credits owed: the debt, out of the purchase's credits first",
    reference: 'the Checkout Session or PaymentIntent id of the purchase',
    once: true,
  },
  guarantee_refund: {
    direction: '+',
    when: "a `deliverable` verdict the account was charged for hard-bounced on a mailbox reason within 30 days, as a sending service's signed webhook reported it; within the month's cap (1 per 100 charged verifications)",
    reference: 'the verdict: the request id, or `<jobId>:<address>`',
    once: true,
  },
} as const satisfies Record<string, LedgerReasonRow>;

export type LedgerReason = keyof typeof LEDGER_REASONS;

/** The reasons whose (reference, reason) pair the ledger's unique index keeps once, in table order. */
export const ONCE_LEDGER_REASONS = (Object.entries(LEDGER_REASONS) as [LedgerReason, LedgerReasonRow][])
  .filter(([, row]) => row.once)
  .map(([reason]) => reason);

/** Every ledger reason as Markdown: docs/money.md prints it (a test compares the two). */
export function ledgerMarkdown(): string {
  const lines = [
    '| reason | moves | when | reference | once per reference |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const [reason, row] of Object.entries(LEDGER_REASONS) as [LedgerReason, LedgerReasonRow][]) {
    lines.push(
      `| \`${reason}\` | ${row.direction} | ${row.when} | ${row.reference} | ${row.once ? 'yes' : 'no'} |`,
    );
  }
  return lines.join('\n');
}
