/** @jsxImportSource hono/jsx */
// Credits (`/credits`): the balance, the packs on sale (Stripe Checkout), the receipts, and the
// low-balance email and automatic top-up settings (docs/money.md, "Buying credits"). Without
// Stripe keys the page says purchases are off and everything else still works.
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { dashboardCsp } from '../../middleware/security-headers.ts';
import { type DashboardEnv, sessionOf, setPageBalance } from '../../middleware/session.ts';
import {
  autoTopUpOf,
  DEFAULT_TOP_UPS_PER_DAY,
  MAX_TOP_UPS_PER_DAY,
} from '../../services/money/balance-watch.ts';
import { changeBalanceAlerts, forgetCard } from '../../services/money/billing-settings.ts';
import { formatPrice, packOf, startCheckout } from '../../services/money/purchases.ts';
import { checkoutOrigin, purchasesEnabled, stripeClientOf } from '../../services/money/stripe-client.ts';
import { findAccount } from '../../storage/accounts.ts';
import { creditDebtOf, type Dispute, openDisputesOf } from '../../storage/disputes.ts';
import { type BillingSettings, findBilling, listReceipts, type Purchase } from '../../storage/purchases.ts';
import { DataTable } from './data-table.tsx';
import { CsrfField, formText, Notice, SubmitButton, Timestamp } from './forms.tsx';
import { changingPage, signedInPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';

const NOTICES: Record<string, { kind: 'success' | 'info'; text: string }> = {
  paid: {
    kind: 'success',
    text: 'Thank you: your payment went through. The credits are added as soon as Stripe confirms it, usually within seconds; reload to see them.',
  },
  cancelled: { kind: 'info', text: 'Checkout was cancelled: nothing was charged.' },
  saved: { kind: 'success', text: 'Settings saved.' },
  forgotten: { kind: 'success', text: 'The saved card is forgotten and automatic top-up is off.' },
};

async function renderCredits(
  c: Context<DashboardEnv>,
  state: { notice?: string | undefined; error?: string | null },
  status: ContentfulStatusCode = 200,
) {
  const db = c.get('db');
  const config = c.get('config');
  const accountId = sessionOf(c).accountId;
  const [account, billing, receipts, disputes, debt] = await Promise.all([
    findAccount(db, accountId),
    findBilling(db, accountId),
    listReceipts(db, accountId),
    openDisputesOf(db, accountId),
    creditDebtOf(db, accountId),
  ]);
  const enabled = purchasesEnabled(config);
  const notice = state.notice ? NOTICES[state.notice] : undefined;
  const balance = account?.creditBalance ?? 0;
  setPageBalance(c, balance);
  const csrfToken = c.get('csrfToken');
  if (enabled) c.header('Content-Security-Policy', dashboardCsp({ forms: [checkoutOrigin(config)] }));
  return renderPage(
    c,
    <Layout title="Credits" section="credits" {...layoutContext(c)}>
      <h1>Credits</h1>
      {notice ? <Notice kind={notice.kind}>{notice.text}</Notice> : null}
      {state.error ? <Notice kind="error">{state.error}</Notice> : null}
      <DisputeNotices disputes={disputes} debt={debt} receipts={receipts} />
      <Card id="buy-heading" title="Buy credits">
        <p>
          You have <strong data-testid="credits-balance">{balance.toLocaleString('en-US')}</strong> credits.
          One credit verifies one address; credits do not expire.
        </p>
        {enabled ? (
          <form method="post" action="/credits/checkout" class="stack">
            <CsrfField token={csrfToken} />
            <fieldset>
              <legend>Pack</legend>
              <ul class="pack-list">
                {config.CREDIT_PACKS.map((pack, index) => (
                  <li>
                    <label class="checkbox">
                      <input
                        type="radio"
                        name="credits"
                        value={String(pack.credits)}
                        checked={index === 0}
                        required
                      />{' '}
                      <strong>{pack.credits.toLocaleString('en-US')} credits</strong> for{' '}
                      {formatPrice(pack.price, config.CREDIT_CURRENCY)}
                    </label>
                    <p class="hint">
                      {formatPrice(Math.round((pack.price * 1000) / pack.credits), config.CREDIT_CURRENCY)}{' '}
                      per 1,000
                    </p>
                  </li>
                ))}
              </ul>
            </fieldset>
            <label class="checkbox">
              <input type="checkbox" name="saveCard" value="true" /> Save my card for automatic top-ups
            </label>
            <SubmitButton>Continue to payment</SubmitButton>
            <p class="hint">You pay on Stripe's secure page; rcpt never sees your card number.</p>
          </form>
        ) : (
          <Notice kind="info">
            Purchases are off on this deployment (no Stripe keys are configured). Credits can still be granted
            by an operator.
          </Notice>
        )}
      </Card>
      <BalanceAlerts billing={billing} enabled={enabled} csrfToken={csrfToken} c={c} />
      <Card id="receipts-heading" title="Payments">
        {receipts.length === 0 ? (
          <p class="muted">No payments yet.</p>
        ) : (
          <DataTable columns={['Date', 'Credits', 'Amount', 'Status']} data-testid="receipts">
            {receipts.map((purchase) => (
              <ReceiptRow purchase={purchase} />
            ))}
          </DataTable>
        )}
      </Card>
    </Layout>,
    status,
  );
}

/** What disputes of the account's payments do to it now (docs/money.md, "Disputes"). */
function DisputeNotices(props: { disputes: Dispute[]; debt: number; receipts: Purchase[] }) {
  const count = (credits: number) => `${credits.toLocaleString('en-US')} credit${credits === 1 ? '' : 's'}`;
  return (
    <>
      {props.disputes.map((dispute) => {
        const purchase = props.receipts.find((receipt) => receipt.id === dispute.purchaseId);
        return (
          <Notice kind="error">
            <span data-testid="dispute-notice">
              The payment{purchase ? ` of ${formatPrice(purchase.amount, purchase.currency)}` : ''} is
              disputed with your card's bank. {count(dispute.creditsHeld)} it bought are held, and live
              verifications, uploads and purchases are paused until the dispute closes; test keys still work.
              If the bank decides for rcpt, the held credits come back.
            </span>
          </Notice>
        );
      })}
      {props.debt > 0 ? (
        <Notice kind="info">
          <span data-testid="debt-notice">
            A lost dispute left {count(props.debt)} owed (credits of the disputed payment that had already
            been spent). Your next purchase settles them first; the rest of its credits go to your balance.
          </span>
        </Notice>
      ) : null}
    </>
  );
}

function ReceiptRow(props: { purchase: Purchase }) {
  const purchase = props.purchase;
  return (
    <tr>
      <td data-label="Date">
        <Timestamp at={purchase.paidAt ?? purchase.createdAt} />
      </td>
      <td data-label="Credits">
        {purchase.credits.toLocaleString('en-US')}
        {purchase.kind === 'auto_topup' ? <span class="muted"> (automatic top-up)</span> : null}
      </td>
      <td data-label="Amount">{formatPrice(purchase.amount, purchase.currency)}</td>
      <td data-label="Status">{receiptStatus(purchase)}</td>
    </tr>
  );
}

function receiptStatus(purchase: Purchase): string {
  const takenBack = `${purchase.creditsTakenBack.toLocaleString('en-US')} credits taken back`;
  switch (purchase.status) {
    case 'paid':
      return 'Paid';
    case 'refunded':
      return `Refunded (${takenBack})`;
    case 'partially_refunded':
      return `${formatPrice(purchase.amountRefunded, purchase.currency)} refunded (${takenBack})`;
    case 'failed':
      return `Declined${purchase.failureReason ? `: ${purchase.failureReason}` : ''}`;
    default:
      return purchase.status;
  }
}

function BalanceAlerts(props: {
  billing: BillingSettings | null;
  enabled: boolean;
  csrfToken: string;
  c: Context<DashboardEnv>;
}) {
  const { billing, enabled } = props;
  const config = props.c.get('config');
  const card = enabled ? billing?.paymentMethodLabel : null;
  return (
    <Card id="alerts-heading" title="Low balance">
      {billing?.topUpFailure ? (
        <Notice kind="error">
          The last automatic top-up was declined ({billing.topUpFailure}). Automatic top-ups are paused until
          you buy a pack with "Save my card" ticked.
        </Notice>
      ) : null}
      <form method="post" action="/credits/settings" class="stack">
        <CsrfField token={props.csrfToken} />
        <div class="field">
          <label for="low-balance">Email me when my balance falls below</label>
          <input
            id="low-balance"
            name="lowBalanceThreshold"
            type="number"
            min="1"
            max="10000000"
            inputmode="numeric"
            value={
              billing?.lowBalanceThreshold === null || !billing ? '' : String(billing.lowBalanceThreshold)
            }
            aria-describedby="low-balance-hint"
          />
          <p class="hint" id="low-balance-hint">
            Credits; leave empty for no email. One email each time the balance goes below it.
          </p>
        </div>
        {card ? (
          <fieldset>
            <legend>Automatic top-up with {card}</legend>
            <label class="checkbox">
              <input
                type="checkbox"
                name="autoTopUp"
                value="true"
                checked={billing?.autoTopUpThreshold !== null}
              />{' '}
              Buy a pack automatically when the balance falls below the threshold
            </label>
            <div class="field">
              <label for="top-up-threshold">Threshold (credits)</label>
              <input
                id="top-up-threshold"
                name="autoTopUpThreshold"
                type="number"
                min="1"
                max="10000000"
                inputmode="numeric"
                value={String(billing?.autoTopUpThreshold ?? 100)}
                aria-describedby="top-up-threshold-hint"
              />
              <p class="hint" id="top-up-threshold-hint">
                At most the pack's credits, so that one top-up lifts the balance back above it.
              </p>
            </div>
            <div class="field">
              <label for="top-up-per-day">Top-ups a day, at most</label>
              <input
                id="top-up-per-day"
                name="autoTopUpDailyLimit"
                type="number"
                min="1"
                max={String(MAX_TOP_UPS_PER_DAY)}
                inputmode="numeric"
                value={String(billing?.autoTopUpDailyLimit ?? DEFAULT_TOP_UPS_PER_DAY)}
                aria-describedby="top-up-per-day-hint"
              />
              <p class="hint" id="top-up-per-day-hint">
                Past it, rcpt emails you and tops up again the next day (UTC).
              </p>
            </div>
            <div class="field">
              <label for="top-up-pack">Pack</label>
              <select id="top-up-pack" name="autoTopUpCredits">
                {config.CREDIT_PACKS.map((pack) => (
                  <option value={String(pack.credits)} selected={billing?.autoTopUpCredits === pack.credits}>
                    {`${pack.credits.toLocaleString('en-US')} credits for ${formatPrice(pack.price, config.CREDIT_CURRENCY)}`}
                  </option>
                ))}
              </select>
            </div>
          </fieldset>
        ) : enabled ? (
          <p class="muted">
            To top up automatically so that a job never stops, buy a pack with "Save my card" ticked.
          </p>
        ) : null}
        <SubmitButton kind="secondary">Save</SubmitButton>
      </form>
      {card ? (
        <form method="post" action="/credits/card/forget">
          <CsrfField token={props.csrfToken} />
          <SubmitButton kind="link">Forget {card}</SubmitButton>
        </form>
      ) : null}
    </Card>
  );
}

/** A whole number of credits from a form field; '' is off (null). */
function threshold(value: string, field: string): number | null {
  if (value.trim() === '') return null;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > 10_000_000) {
    throw new ApiError('VALIDATION_ERROR', {
      message: `${field} is a whole number of credits from 1 to 10,000,000.`,
    });
  }
  return number;
}

export function registerCreditsPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/credits', ...signedInPage, (c) => {
    const checkout = c.req.query('checkout');
    const saved = c.req.query('saved');
    return renderCredits(c, { notice: checkout ?? saved });
  });

  dashboard.post('/credits/checkout', ...changingPage, async (c) => {
    const config = c.get('config');
    const stripe = stripeClientOf(config);
    if (!stripe) return renderCredits(c, { error: 'Purchases are off on this deployment.' }, 503);
    const session = sessionOf(c);
    const db = c.get('db');
    try {
      const credits = Number(await formText(c, 'credits'));
      packOf(config, credits);
      const url = await startCheckout(
        { db, config, stripe, now: Date.now() },
        {
          accountId: session.accountId,
          email: (await findAccount(db, session.accountId))?.email ?? null,
          credits,
          saveCard: (await formText(c, 'saveCard')) === 'true',
          origin: new URL(c.req.url).origin,
        },
      );
      return c.redirect(url, 303);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VALIDATION_ERROR')
        return renderCredits(c, { error: error.message }, 400);
      throw error;
    }
  });

  dashboard.post('/credits/settings', ...changingPage, async (c) => {
    const accountId = sessionOf(c).accountId;
    const config = c.get('config');
    const form = await c.req.formData();
    const text = (name: string) => {
      const value = form.get(name);
      return typeof value === 'string' ? value : '';
    };
    try {
      const autoTopUp = text('autoTopUp') === 'true';
      const perDayText = text('autoTopUpDailyLimit').trim();
      const topUpThreshold = autoTopUp ? threshold(text('autoTopUpThreshold'), 'The top-up threshold') : null;
      if (autoTopUp && topUpThreshold === null) {
        throw new ApiError('VALIDATION_ERROR', { message: 'Automatic top-up needs a threshold.' });
      }
      const topUp =
        topUpThreshold === null
          ? null
          : autoTopUpOf(config, {
              threshold: topUpThreshold,
              credits: Number(text('autoTopUpCredits')),
              perDay: perDayText === '' ? DEFAULT_TOP_UPS_PER_DAY : Number(perDayText),
            });
      await changeBalanceAlerts(
        c.get('db'),
        accountId,
        {
          lowBalanceThreshold: threshold(text('lowBalanceThreshold'), 'The low-balance threshold'),
          autoTopUpThreshold: topUp?.autoTopUpThreshold ?? null,
          autoTopUpCredits: topUp?.autoTopUpCredits ?? null,
          autoTopUpDailyLimit: topUp?.autoTopUpDailyLimit ?? DEFAULT_TOP_UPS_PER_DAY,
        },
        Date.now(),
      );
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VALIDATION_ERROR')
        return renderCredits(c, { error: error.message }, 400);
      throw error;
    }
    // A balance already below the new thresholds is acted on now, not at the next spend.
    c.get('services').watchBalance(accountId);
    return c.redirect('/credits?saved=saved', 303);
  });

  dashboard.post('/credits/card/forget', ...changingPage, async (c) => {
    await forgetCard(c.get('db'), sessionOf(c).accountId, Date.now());
    return c.redirect('/credits?saved=forgotten', 303);
  });
}
