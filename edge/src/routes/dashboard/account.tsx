/** @jsxImportSource hono/jsx */
// Account (`/account`): who is signed in, the account's defaults (greylist follow-up), the
// password change (which ends every other session and gives this one a new token), and sign-out.
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { type DashboardEnv, sessionOf, setSessionCookie } from '../../middleware/session.ts';
import { MIN_PASSWORD_LENGTH } from '../../services/accounts/passwords.ts';
import { endSession, startSession } from '../../services/accounts/sessions.ts';
import { changeAccountSettings } from '../../services/accounts/settings.ts';
import { changePassword } from '../../services/accounts/sign-in.ts';
import { findAccount } from '../../storage/accounts.ts';
import { admit, tooManyAttempts } from './auth.tsx';
import { CsrfField, formText, Notice, SettingForm, SubmitButton, TextField, Timestamp } from './forms.tsx';
import { changingPage, signedInPage, spendingPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';

async function renderAccount(
  c: Context<DashboardEnv>,
  state: { notice?: string | null; error?: string | null },
  status: ContentfulStatusCode = 200,
) {
  const account = await findAccount(c.get('db'), c.get('caller').accountId);
  const csrfToken = c.get('csrfToken');
  return renderPage(
    c,
    <Layout title="Account" section="account" {...layoutContext(c)}>
      <h1>Account</h1>
      {state.notice ? <Notice kind="success">{state.notice}</Notice> : null}
      <Card id="account-heading" title="Your account">
        <dl class="details">
          <dt>Email</dt>
          <dd>{account?.email ?? '—'}</dd>
          <dt>Member since</dt>
          <dd>
            <Timestamp at={account?.createdAt ?? null} />
          </dd>
          <dt>Credits</dt>
          <dd>{account?.creditBalance ?? 0}</dd>
        </dl>
      </Card>
      <Card id="recheck-heading" title="Greylist follow-up">
        <p>
          Lists whose upload does not say otherwise ask addresses that ended greylisted or temporarily refused
          again over the next hours, free of charge; a changed verdict updates the job and sends{' '}
          <code>job.updated</code>.
        </p>
        <SettingForm
          action="/account/settings"
          csrfToken={csrfToken}
          name="recheck"
          checked={account?.recheckDefault === 1}
          label="Recheck temporary answers of my lists"
        />
      </Card>
      <Card id="password-heading" title="Change password">
        {state.error ? <Notice kind="error">{state.error}</Notice> : null}
        <form method="post" action="/account/password" class="stack">
          <CsrfField token={csrfToken} />
          {/* Lets password managers tie the new password to the account. */}
          <input
            type="text"
            name="username"
            value={account?.email ?? ''}
            autocomplete="username"
            hidden
            readonly
          />
          <TextField
            id="current-password"
            name="currentPassword"
            label="Current password"
            type="password"
            autocomplete="current-password"
            required
          />
          <TextField
            id="new-password"
            name="newPassword"
            label="New password"
            type="password"
            autocomplete="new-password"
            required
            minlength={MIN_PASSWORD_LENGTH}
            hint={`At least ${MIN_PASSWORD_LENGTH} characters. Other devices are signed out.`}
          />
          <SubmitButton>Change password</SubmitButton>
        </form>
      </Card>
      <Card id="logout-heading" title="Sign out">
        <form method="post" action="/logout">
          <CsrfField token={csrfToken} />
          <SubmitButton kind="secondary">Log out</SubmitButton>
        </form>
      </Card>
    </Layout>,
    status,
  );
}

export function registerAccountPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/account', ...signedInPage, (c) =>
    renderAccount(c, {
      notice:
        c.req.query('password-changed') === '1'
          ? 'Password changed. Other sessions are signed out.'
          : c.req.query('settings-saved') === '1'
            ? 'Settings saved.'
            : null,
    }),
  );

  dashboard.post('/account/settings', ...changingPage, async (c) => {
    // An unchecked box is absent from the form (HTML, "Constructing the entry list").
    const recheck = (await formText(c, 'recheck')) === 'true';
    await changeAccountSettings(
      { db: c.get('db'), limiters: c.get('services').limiters },
      sessionOf(c).accountId,
      { recheck },
    );
    return c.redirect('/account?settings-saved=1', 303);
  });

  dashboard.post('/account/password', ...spendingPage, async (c) => {
    const db = c.get('db');
    const session = sessionOf(c);
    // The current password is a guess like a sign-in's: the same throttle, per IP and email.
    const email = (await findAccount(db, session.accountId))?.email ?? session.accountId;
    const wait = await admit(c, 'password', email);
    if (wait !== null) return renderAccount(c, { error: tooManyAttempts(wait) }, 429);
    try {
      await changePassword(db, {
        accountId: session.accountId,
        currentPassword: await formText(c, 'currentPassword'),
        newPassword: await formText(c, 'newPassword'),
        keepSessionHash: session.tokenHash,
      });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VALIDATION_ERROR')
        return renderAccount(c, { error: error.message }, 400);
      throw error;
    }
    // A new token for this browser too: whoever might hold the old one is out.
    const rotated = await startSession(db, session.accountId, Date.now());
    await endSession(db, session);
    setSessionCookie(c, rotated);
    return c.redirect('/account?password-changed=1', 303);
  });
}
