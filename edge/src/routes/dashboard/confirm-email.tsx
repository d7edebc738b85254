/** @jsxImportSource hono/jsx */
// Email confirmation: the link a sign-up receives, and "send the link again" from the banner
// every page shows an unconfirmed account (layout.tsx). Following a good link confirms the
// account and grants its free credits once, then redirects, so the secret-bearing URL leaves
// the address bar; a bad or expired link is an error page with its code.
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import { securityHeaders } from '../../middleware/security-headers.ts';
import { type DashboardEnv, loadSession, sessionOf } from '../../middleware/session.ts';
import {
  CONFIRMATION_LINK_TTL_MS,
  CONFIRMATION_PATH,
  confirmationMailLimited,
  confirmEmail,
  resendConfirmation,
} from '../../services/accounts/email-confirmation.ts';
import { Notice } from './forms.tsx';
import { signedInPage } from './guards.ts';
import { Layout, layoutContext, renderPage } from './layout.tsx';

export function registerConfirmEmailPages(dashboard: Hono<DashboardEnv>): void {
  dashboard.get(CONFIRMATION_PATH, securityHeaders, loadSession, async (c) => {
    const config = c.get('config');
    const outcome = await confirmEmail(
      { shards: c.get('shards'), secretsKey: config.SECRETS_KEY },
      c.req.query('token') ?? '',
      Date.now(),
    );
    if (outcome.kind === 'invalid') throw new ApiError('CONFIRMATION_LINK_INVALID');
    if (outcome.kind === 'expired') throw new ApiError('CONFIRMATION_LINK_EXPIRED');
    const landing = c.get('session') ? '/' : '/login';
    const result = outcome.kind === 'already-confirmed' ? 'already' : outcome.granted ? 'new' : 'no-credits';
    return c.redirect(`${landing}?email-confirmed=${result}`, 303);
  });

  dashboard.post(`${CONFIRMATION_PATH}/resend`, ...signedInPage, async (c) => {
    const outcome = await resendConfirmation(c.get('services').accountMail, {
      accountId: sessionOf(c).accountId,
      origin: new URL(c.req.url).origin,
      now: Date.now(),
    });
    if (outcome.kind === 'already-confirmed') return c.redirect('/?email-confirmed=already', 303);
    if (outcome.kind === 'limited') c.header('Retry-After', String(outcome.retryAfterSeconds));
    return renderPage(
      c,
      <Layout title="Confirm your email address" {...layoutContext(c)}>
        <h1>Confirm your email address</h1>
        {outcome.kind === 'sent' ? (
          <Notice kind="success">
            We sent a new link to {outcome.to}. It works for {CONFIRMATION_LINK_TTL_MS / 3_600_000} hours; an
            earlier link works too while it lasts.
          </Notice>
        ) : (
          <Notice kind="error">{confirmationMailLimited(outcome.retryAfterSeconds)}</Notice>
        )}
        <p>
          <a href="/">Back to the overview</a>
        </p>
      </Layout>,
      outcome.kind === 'sent' ? 200 : 429,
    );
  });
}
