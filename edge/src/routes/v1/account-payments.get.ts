// GET /api/v1/account/payments: the account's receipts (docs/money.md, "Buying credits"), as the
// dashboard's Credits page lists them. Payments are real money: a test key sees none.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { PaymentsResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { purchasesEnabled } from '../../services/money/stripe-client.ts';
import { listReceipts, type Purchase } from '../../storage/purchases.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/account/payments',
  tags: ['Account'],
  summary: "The account's payments: credit packs bought, automatic top-ups, refunds",
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['read'])] as const,
  responses: {
    200: jsonReply('The payments, newest first.', PaymentsResponse),
    ...errorResponses(AUTHENTICATED_ERRORS),
  },
});

function paymentOf(purchase: Purchase) {
  return {
    id: purchase.id,
    kind: purchase.kind,
    // listReceipts returns only these states.
    status: purchase.status as 'paid' | 'refunded' | 'partially_refunded' | 'failed',
    credits: purchase.credits,
    amount: purchase.amount,
    currency: purchase.currency,
    amountRefunded: purchase.amountRefunded,
    creditsTakenBack: purchase.creditsTakenBack,
    createdAt: new Date(purchase.createdAt).toISOString(),
    paidAt: purchase.paidAt === null ? null : new Date(purchase.paidAt).toISOString(),
    failureReason: purchase.failureReason,
  };
}

export function registerAccountPayments(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const caller = c.get('caller');
    const receipts = caller.mode === 'live' ? await listReceipts(c.get('db'), caller.accountId) : [];
    return c.json(
      {
        success: true as const,
        purchasesEnabled: purchasesEnabled(c.get('config')),
        payments: receipts.map(paymentOf),
      },
      200,
    );
  });
}
