/** @jsxImportSource hono/jsx */
// "Forgot password?" (`/forgot-password`) asks for a reset link by email and answers the same
// whether or not the address has an account; the link (`/reset-password?token=…`) opens a
// form for the new password, good for an hour and once (services/accounts/password-reset.ts). The
// form carries the token in a hidden field; the page's Referrer-Policy (same-origin) keeps it
// from other sites, and logs hold paths only.
import type { Hono } from 'hono';
import type { DashboardEnv } from '../../middleware/session.ts';
import {
  checkResetLink,
  requestPasswordReset,
  resetPassword,
} from '../../services/accounts/password-reset.ts';
import { MIN_PASSWORD_LENGTH } from '../../services/accounts/passwords.ts';
import { clientIp, tooManyAttempts } from './auth.tsx';
import { AccountEmailField, CsrfField, formText, Notice, SubmitButton, TextField } from './forms.tsx';
import { signedOutPage } from './guards.ts';
import { Layout, renderPage } from './layout.tsx';

const LINK_SENT =
  'If an account uses this email address, it has a link to choose a new password: we sent one now, or in the last half hour (that one still works). A link works once, for one hour.';
const LINK_UNUSABLE: Record<'invalid' | 'expired', string> = {
  invalid: 'This link is not valid, or it was used already. Ask for a new one below.',
  expired: 'This link has expired: it works for one hour. Ask for a new one below.',
};

function ForgotPasswordPage(props: { csrfToken: string; email?: string; notice?: string; error?: string }) {
  return (
    <Layout title="Forgot password" signedIn={false} csrfToken={props.csrfToken}>
      <section class="auth-card" aria-labelledby="forgot-heading">
        <h1 id="forgot-heading">Choose a new password</h1>
        {props.notice ? <Notice kind="success">{props.notice}</Notice> : null}
        {props.error ? <Notice kind="error">{props.error}</Notice> : null}
        <p>Enter the email address of your account: we send it a link to choose a new password.</p>
        <form method="post" action="/forgot-password" class="stack">
          <CsrfField token={props.csrfToken} />
          <AccountEmailField id="forgot-email" value={props.email} />
          <SubmitButton>Send the link</SubmitButton>
        </form>
        <p>
          Remembered it? <a href="/login">Sign in</a>.
        </p>
      </section>
    </Layout>
  );
}

function ResetPasswordPage(props: { csrfToken: string; token: string; error?: string }) {
  return (
    <Layout title="New password" signedIn={false} csrfToken={props.csrfToken}>
      <section class="auth-card" aria-labelledby="reset-heading">
        <h1 id="reset-heading">Choose a new password</h1>
        {props.error ? <Notice kind="error">{props.error}</Notice> : null}
        <form method="post" action="/reset-password" class="stack">
          <CsrfField token={props.csrfToken} />
          <input type="hidden" name="token" value={props.token} />
          <TextField
            id="reset-password"
            name="password"
            label="New password"
            type="password"
            autocomplete="new-password"
            required
            minlength={MIN_PASSWORD_LENGTH}
            hint={`At least ${MIN_PASSWORD_LENGTH} characters. Every session of the account is signed out.`}
          />
          <SubmitButton>Set the new password</SubmitButton>
        </form>
      </section>
    </Layout>
  );
}

export function registerPasswordResetPages(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/forgot-password', ...signedOutPage, (c) =>
    renderPage(c, <ForgotPasswordPage csrfToken={c.get('csrfToken')} />),
  );

  dashboard.post('/forgot-password', ...signedOutPage, async (c) => {
    const email = (await formText(c, 'email')).trim();
    const outcome = await requestPasswordReset(
      { ...c.get('services').accountMail, shards: c.get('shards') },
      { email, clientIp: clientIp(c), origin: new URL(c.req.url).origin, now: Date.now() },
      (work) => c.executionCtx.waitUntil(work),
    );
    if (outcome.kind === 'limited') {
      c.header('Retry-After', String(outcome.retryAfterSeconds));
      return renderPage(
        c,
        <ForgotPasswordPage
          csrfToken={c.get('csrfToken')}
          email={email}
          error={tooManyAttempts(outcome.retryAfterSeconds)}
        />,
        429,
      );
    }
    return renderPage(c, <ForgotPasswordPage csrfToken={c.get('csrfToken')} notice={LINK_SENT} />);
  });

  dashboard.get('/reset-password', ...signedOutPage, async (c) => {
    const token = c.req.query('token') ?? '';
    const config = c.get('config');
    const link = await checkResetLink(
      { shards: c.get('shards'), secretsKey: config.SECRETS_KEY },
      token,
      Date.now(),
    );
    if (link.kind !== 'valid') {
      return renderPage(
        c,
        <ForgotPasswordPage csrfToken={c.get('csrfToken')} error={LINK_UNUSABLE[link.kind]} />,
        400,
      );
    }
    return renderPage(c, <ResetPasswordPage csrfToken={c.get('csrfToken')} token={token} />);
  });

  dashboard.post('/reset-password', ...signedOutPage, async (c) => {
    const token = await formText(c, 'token');
    const outcome = await resetPassword(
      { shards: c.get('shards'), secretsKey: c.get('config').SECRETS_KEY },
      { token, newPassword: await formText(c, 'password'), now: Date.now() },
    );
    if (outcome.kind === 'reset') return c.redirect('/login?password-reset=1', 303);
    if (outcome.kind === 'problem') {
      return renderPage(
        c,
        <ResetPasswordPage csrfToken={c.get('csrfToken')} token={token} error={outcome.message} />,
        400,
      );
    }
    return renderPage(
      c,
      <ForgotPasswordPage csrfToken={c.get('csrfToken')} error={LINK_UNUSABLE[outcome.kind]} />,
      400,
    );
  });
}
