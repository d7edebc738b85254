/** @jsxImportSource hono/jsx */
// Verify (`/verify`): one address, charged like the API (1 credit whatever the answer), the
// result rendered in full, with the API's `fresh`, `evidence` and time budget. The dashboard is
// the caller: the account, no API key.
import {
  MAX_VERIFY_TIMEOUT_MS,
  MIN_VERIFY_TIMEOUT_MS,
  type VerificationResult,
  VerifyRequest,
} from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import { type DashboardEnv, setPageBalance } from '../../middleware/session.ts';
import { readBalance } from '../../storage/accounts.ts';
import { verifyAsAsked } from '../single-call.ts';
import { CsrfField, formText, Notice, SelectField, SubmitButton, TextField } from './forms.tsx';
import { signedInPage, spendingPage } from './guards.ts';
import { Layout, layoutContext, renderPage } from './layout.tsx';
import { VerificationResultView } from './verification-result.tsx';

/** The time budgets offered: the API's bounds and the usual steps between them. */
const TIME_BUDGETS_MS = [MIN_VERIFY_TIMEOUT_MS, 5_000, 10_000, 30_000, MAX_VERIFY_TIMEOUT_MS];

function VerifyForm(props: {
  csrfToken: string;
  email?: string;
  error?: string | null;
  creditsRemaining: number;
  evidence?: boolean;
  fresh?: boolean;
  /** As posted: a budget outside the API's bounds is shown back with its error. */
  timeoutMs?: string | undefined;
  budgetError?: string | null;
  /** The deployment's own budget for a check (VERIFY_TIMEOUT_MS). */
  defaultTimeoutMs: number;
}) {
  return (
    <section class="card" aria-labelledby="verify-heading">
      <h1 id="verify-heading">Verify an address</h1>
      <p>
        One credit per check, whatever the answer: an address with invalid syntax is a check too (only in a
        list are invalid rows free). You have{' '}
        <strong data-testid="credits-remaining">{props.creditsRemaining}</strong> credits.
      </p>
      <form method="post" action="/verify" class="inline-form" data-busy-label="Checking…">
        <CsrfField token={props.csrfToken} />
        <TextField
          id="verify-email"
          name="email"
          label="Email address"
          type="text"
          autocomplete="off"
          required
          value={props.email}
          error={props.error}
          placeholder="someone@example.com"
        />
        <SelectField
          id="verify-timeout"
          name="timeoutMs"
          label="Answer within"
          options={[
            { value: '', label: `the server's own time (up to ${props.defaultTimeoutMs / 1000} s)` },
            ...TIME_BUDGETS_MS.map((ms) => ({ value: String(ms), label: `${ms / 1000} s` })),
          ]}
          value={props.timeoutMs}
          hint={
            <>
              A mail server slower than that is answered <code>timeout_exceeded</code> (a check like any
              other); the check goes on, and asking again later gives its verdict.
            </>
          }
          error={props.budgetError}
        />
        <label class="checkbox">
          <input type="checkbox" name="fresh" value="true" checked={props.fresh} /> Ask the mail server now,
          not the verdict of the last 24 hours
        </label>
        <label class="checkbox">
          <input type="checkbox" name="evidence" value="true" checked={props.evidence} /> Keep the SMTP
          evidence (the session behind the answer)
        </label>
        <SubmitButton>Verify</SubmitButton>
      </form>
    </section>
  );
}

export function registerVerifyPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/verify', ...signedInPage, async (c) => {
    // The balance the session middleware read (after settling the desk) for this request.
    const creditsRemaining = c.get('caller').creditBalance;
    return renderPage(
      c,
      <Layout title="Verify" section="verify" {...layoutContext(c)}>
        <VerifyForm
          csrfToken={c.get('csrfToken')}
          creditsRemaining={creditsRemaining}
          defaultTimeoutMs={c.get('config').VERIFY_TIMEOUT_MS}
        />
      </Layout>,
    );
  });

  dashboard.post('/verify', ...spendingPage, async (c) => {
    const db = c.get('db');
    const caller = c.get('caller');
    const raw = await formText(c, 'email');
    const evidence = (await formText(c, 'evidence')) === 'true';
    const fresh = (await formText(c, 'fresh')) === 'true';
    const budget = await formText(c, 'timeoutMs');
    const timeoutMs = budget === '' ? undefined : Number(budget);
    const parsed = VerifyRequest.safeParse({ email: raw, evidence, fresh, timeoutMs });
    let result: VerificationResult | null = null;
    let error: string | null = null;
    let budgetError: string | null = null;
    let status: 200 | 400 | 402 = 200;
    let creditsRemaining: number;
    if (!parsed.success) {
      const invalid = new Set(parsed.error.issues.map((issue) => issue.path[0]));
      if (invalid.has('timeoutMs'))
        budgetError = `Choose a time between ${MIN_VERIFY_TIMEOUT_MS / 1000} and ${MAX_VERIFY_TIMEOUT_MS / 1000} seconds.`;
      if (invalid.has('email'))
        error =
          raw.trim() === ''
            ? 'Enter an address to verify.'
            : 'That address is too long or holds control characters.';
      status = 400;
      creditsRemaining = (await readBalance(db, caller.accountId)) ?? 0;
    } else {
      try {
        const verification = await verifyAsAsked(c, parsed.data, Date.now());
        result = verification.result;
        creditsRemaining = verification.creditsRemaining;
      } catch (cause) {
        if (!(cause instanceof ApiError) || cause.code !== 'INSUFFICIENT_CREDITS') throw cause;
        status = 402;
        creditsRemaining = 0;
      }
    }
    setPageBalance(c, creditsRemaining);
    return renderPage(
      c,
      <Layout
        title={result ? `${result.email}: ${result.status}` : 'Verify'}
        section="verify"
        {...layoutContext(c)}
      >
        <VerifyForm
          csrfToken={c.get('csrfToken')}
          email={raw}
          error={error}
          creditsRemaining={creditsRemaining}
          evidence={evidence}
          fresh={fresh}
          timeoutMs={budget}
          budgetError={budgetError}
          defaultTimeoutMs={c.get('config').VERIFY_TIMEOUT_MS}
        />
        {status === 402 ? (
          <Notice kind="error">Not enough credits: each check uses one, and you have none left.</Notice>
        ) : null}
        {result ? <VerificationResultView result={result} csrfToken={c.get('csrfToken')} /> : null}
      </Layout>,
      status,
    );
  });
}
