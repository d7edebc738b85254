/** @jsxImportSource hono/jsx */
// Verify (`/verify`): one address, charged like the API (1 credit whatever the answer), the
// result rendered in full. The dashboard is the caller: the account, no API key.
import { type VerificationResult, VerifyRequest } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import { type DashboardEnv, setPageBalance } from '../../middleware/session.ts';
import { quotasOf } from '../../services/quotas.ts';
import { verifyForCaller } from '../../services/single-verification.ts';
import { domainFactsOf, verifyDepsOf } from '../../services/verify-deps.ts';
import { readBalance } from '../../storage/accounts.ts';
import { CsrfField, formText, Notice, TextField } from './forms.tsx';
import { signedInPage, spendingPage } from './guards.ts';
import { Layout, layoutContext, renderPage } from './layout.tsx';
import { VerificationResultView } from './verification-result.tsx';

function VerifyForm(props: {
  csrfToken: string;
  email?: string;
  error?: string | null;
  creditsRemaining: number;
  evidence?: boolean;
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
        <label class="checkbox">
          <input type="checkbox" name="evidence" value="true" checked={props.evidence} /> Keep the SMTP
          evidence (the session behind the answer)
        </label>
        <button type="submit" class="button">
          Verify
        </button>
      </form>
    </section>
  );
}

export function registerVerifyPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/verify', ...signedInPage, async (c) => {
    const creditsRemaining = (await readBalance(c.get('db'), c.get('caller').accountId)) ?? 0;
    return renderPage(
      c,
      <Layout title="Verify" section="verify" {...layoutContext(c)}>
        <VerifyForm csrfToken={c.get('csrfToken')} creditsRemaining={creditsRemaining} />
      </Layout>,
    );
  });

  dashboard.post('/verify', ...spendingPage, async (c) => {
    const db = c.get('db');
    const caller = c.get('caller');
    const raw = await formText(c, 'email');
    const evidence = (await formText(c, 'evidence')) === 'true';
    const parsed = VerifyRequest.safeParse({ email: raw });
    let result: VerificationResult | null = null;
    let error: string | null = null;
    let status: 200 | 400 | 402 = 200;
    let creditsRemaining: number;
    if (!parsed.success) {
      error =
        raw.trim() === ''
          ? 'Enter an address to verify.'
          : 'That address is too long or holds control characters.';
      status = 400;
      creditsRemaining = (await readBalance(db, caller.accountId)) ?? 0;
    } else {
      try {
        const facts = domainFactsOf(db, c.get('config'));
        const verification = await verifyForCaller({
          db,
          deps: { ...verifyDepsOf(c.env, c.get('config'), facts, caller.accountId), evidence },
          facts,
          caller,
          email: parsed.data.email,
          evidence,
          requestId: c.get('requestId'),
          quotas: quotasOf(c.get('config')),
          now: Date.now(),
        });
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
