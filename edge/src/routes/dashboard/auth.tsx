/** @jsxImportSource hono/jsx */
// Sign-up, sign-in and sign-out. A new session token at every sign-in (no fixation); one
// answer for an unknown email and a wrong password; attempts limited per IP and per email, and
// confirmation emails per mailbox (services/accounts/email-confirmation.ts). A sign-up signs the new
// account in (its credits wait for the confirmation link); an address that has an account
// already is told so, with the way to sign in or reset the password — like most services,
// sign-up says whether an address has an account, behind the sign-up limits and Turnstile.
import type { Context, Hono } from 'hono';
import { deleteCookie } from 'hono/cookie';
import { errorFields, log } from '../../logger.ts';
import { PRE_SESSION_CSRF_COOKIE } from '../../middleware/csrf.ts';
import { dashboardCsp } from '../../middleware/security-headers.ts';
import { enterAccountShard } from '../../middleware/services.ts';
import { clearSessionCookie, type DashboardEnv, setSessionCookie } from '../../middleware/session.ts';
import {
  admitAccountMail,
  confirmationMailLimited,
  sendConfirmation,
} from '../../services/accounts/email-confirmation.ts';
import { MIN_PASSWORD_LENGTH } from '../../services/accounts/passwords.ts';
import { endSession, startSession } from '../../services/accounts/sessions.ts';
import {
  INVALID_CREDENTIALS,
  SIGNUP_CREDITS,
  signIn,
  signUp,
  signUpProblem,
  signUpShard,
} from '../../services/accounts/sign-in.ts';
import { admitSignInAttempt, type SignInAction } from '../../services/accounts/sign-in-limits.ts';
import {
  SIGNUP_TURNSTILE_ACTION,
  TURNSTILE_FIELD,
  TURNSTILE_ORIGIN,
  TURNSTILE_SCRIPT,
  turnstilePasses,
  turnstileSiteKey,
} from '../../services/accounts/turnstile.ts';
import { AccountEmailField, CsrfField, formText, Notice, SubmitButton, TextField } from './forms.tsx';
import { signedInPage, signedOutPage } from './guards.ts';
import { Layout, renderPage } from './layout.tsx';

/** Stands in for the client address where no proxy supplies one (local development). */
const UNKNOWN_CLIENT_IP = 'local';

interface AuthFormState {
  email?: string;
  error?: string | null;
  next?: string;
}

function LoginPage(props: AuthFormState & { csrfToken: string; notice?: string | null }) {
  return (
    <Layout title="Sign in" signedIn={false} csrfToken={props.csrfToken}>
      <section class="auth-card" aria-labelledby="login-heading">
        <h1 id="login-heading">Sign in to rcpt</h1>
        {props.notice ? <Notice kind="success">{props.notice}</Notice> : null}
        {props.error ? <Notice kind="error">{props.error}</Notice> : null}
        <form method="post" action="/login" class="stack">
          <CsrfField token={props.csrfToken} />
          {props.next ? <input type="hidden" name="next" value={props.next} /> : null}
          <AccountEmailField id="login-email" value={props.email} />
          <TextField
            id="login-password"
            name="password"
            label="Password"
            type="password"
            autocomplete="current-password"
            required
          />
          <SubmitButton>Sign in</SubmitButton>
        </form>
        <p>
          <a href="/forgot-password">Forgot password?</a>
        </p>
        <p>
          New to rcpt? <a href="/signup">Create an account</a> with {SIGNUP_CREDITS} free credits.
        </p>
      </section>
    </Layout>
  );
}

function SignupPage(props: AuthFormState & { csrfToken: string; turnstileSiteKey: string | null }) {
  return (
    <Layout title="Create an account" signedIn={false} csrfToken={props.csrfToken}>
      <section class="auth-card" aria-labelledby="signup-heading">
        <h1 id="signup-heading">Create an account</h1>
        <p>
          Every account gets {SIGNUP_CREDITS} free credits once its email address is confirmed. No card
          needed; credits do not expire.
        </p>
        {props.error ? <Notice kind="error">{props.error}</Notice> : null}
        <form method="post" action="/signup" class="stack">
          <CsrfField token={props.csrfToken} />
          <AccountEmailField id="signup-email" value={props.email} />
          <TextField
            id="signup-password"
            name="password"
            label="Password"
            type="password"
            autocomplete="new-password"
            required
            minlength={MIN_PASSWORD_LENGTH}
            hint={`At least ${MIN_PASSWORD_LENGTH} characters.`}
          />
          {props.turnstileSiteKey ? (
            <>
              <div
                class="cf-turnstile"
                data-sitekey={props.turnstileSiteKey}
                data-action={SIGNUP_TURNSTILE_ACTION}
              />
              <script src={TURNSTILE_SCRIPT} async defer />
            </>
          ) : null}
          <SubmitButton>Create account</SubmitButton>
        </form>
        <p>
          Already have an account? <a href="/login">Sign in</a>.
        </p>
      </section>
    </Layout>
  );
}

/** Only a local path can be a destination after sign-in (no open redirect). */
/**
 * Where to go after signing in: a path of this site, else `/`. `next` is resolved the way a
 * browser resolves a Location (the URL standard drops tabs and line breaks, so `/\t/evil`
 * means `//evil`), and only a same-origin result whose path cannot be read as
 * protocol-relative is kept, re-serialised from the parsed URL.
 */
export function safeNext(raw: string | undefined): string {
  if (!raw?.startsWith('/')) return '/';
  const base = 'https://dashboard.invalid';
  let resolved: URL;
  try {
    resolved = new URL(raw, base);
  } catch {
    return '/';
  }
  if (resolved.origin !== base || !/^\/(?![/\\])/.test(resolved.pathname)) return '/';
  return `${resolved.pathname}${resolved.search}${resolved.hash}`;
}

const ACCOUNT_EXISTS =
  'An account already uses this email address. Sign in, or choose a new password if you forgot it.';

const TURNSTILE_FAILED =
  'We could not confirm that a person sent this form. Complete the check above the button and try again.';

/**
 * The Turnstile site key when the deployment turned the check on, after giving the page the CSP
 * its widget needs (its script and its frame come from Cloudflare's challenge origin).
 */
function signupTurnstile(c: Context<DashboardEnv>): string | null {
  const siteKey = turnstileSiteKey(c.get('config'));
  if (siteKey)
    c.header(
      'Content-Security-Policy',
      dashboardCsp({ scripts: [TURNSTILE_ORIGIN], frames: [TURNSTILE_ORIGIN] }),
    );
  return siteKey;
}

export function clientIp(c: Context<DashboardEnv>): string {
  return c.req.header('cf-connecting-ip') ?? UNKNOWN_CLIENT_IP;
}

/** Null when the attempt may go on, else the seconds to wait (Retry-After is set). */
export async function admit(
  c: Context<DashboardEnv>,
  action: SignInAction,
  email: string,
): Promise<number | null> {
  const admission = await admitSignInAttempt(c.get('services').limiters, {
    action,
    clientIp: clientIp(c),
    email,
  });
  if (admission.allowed) return null;
  c.header('Retry-After', String(admission.retryAfterSeconds));
  return admission.retryAfterSeconds;
}

/** The notice of the page a confirmation lands on (`?email-confirmed=` of / and /login). */
export function confirmedNotice(value: string | undefined): string | null {
  if (value === 'new')
    return `Your email address is confirmed: your ${SIGNUP_CREDITS} free credits are ready.`;
  if (value === 'no-credits')
    return (
      `Your email address is confirmed. It received no free credits: they go once per mailbox, and ` +
      `this mailbox already had them with another rcpt account (an address with a +tag, or dots in ` +
      `a Gmail address, reaches the same mailbox).`
    );
  if (value === 'already') return 'Your email address was already confirmed.';
  return null;
}

export function tooManyAttempts(seconds: number): string {
  return `Too many attempts. Wait ${seconds} second${seconds === 1 ? '' : 's'} and try again.`;
}

/** Signs the account in: a new session in its shard, where the rest of the request reads and writes. */
async function beginSession(
  c: Context<DashboardEnv>,
  account: { accountId: string; shard: number },
): Promise<void> {
  // A sign-in always gets a fresh token; whatever session the browser had ends here.
  const previous = c.get('session');
  if (previous) await endSession(c.get('db'), previous);
  enterAccountShard(c, account.shard);
  setSessionCookie(c, await startSession(c.get('db'), account.accountId, Date.now()));
  deleteCookie(c, PRE_SESSION_CSRF_COOKIE, { path: '/', secure: true });
}

export function registerAuthPages(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/login', ...signedOutPage, (c) => {
    if (c.get('session')) return c.redirect('/', 303);
    const exists = c.req.query('account-exists') === '1';
    const notice =
      c.req.query('signed-out') === '1'
        ? 'You are signed out.'
        : c.req.query('password-reset') === '1'
          ? 'Your password is changed and every session of the account is signed out. Sign in with the new password.'
          : confirmedNotice(c.req.query('email-confirmed'));
    return renderPage(
      c,
      <LoginPage
        csrfToken={c.get('csrfToken')}
        next={c.req.query('next')}
        notice={notice}
        error={exists ? ACCOUNT_EXISTS : null}
      />,
    );
  });

  dashboard.post('/login', ...signedOutPage, async (c) => {
    const email = (await formText(c, 'email')).trim();
    const password = await formText(c, 'password');
    const next = safeNext(await formText(c, 'next'));
    const page = (error: string) => (
      <LoginPage csrfToken={c.get('csrfToken')} email={email} next={next} error={error} />
    );
    const wait = await admit(c, 'login', email);
    if (wait !== null) return renderPage(c, page(tooManyAttempts(wait)), 429);
    const account = email && password ? await signIn(c.get('shards'), { email, password }) : null;
    if (!account) return renderPage(c, page(INVALID_CREDENTIALS), 401);
    await beginSession(c, account);
    return c.redirect(next, 303);
  });

  dashboard.get('/signup', ...signedOutPage, (c) => {
    if (c.get('session')) return c.redirect('/', 303);
    const siteKey = signupTurnstile(c);
    return renderPage(c, <SignupPage csrfToken={c.get('csrfToken')} turnstileSiteKey={siteKey} />);
  });

  dashboard.post('/signup', ...signedOutPage, async (c) => {
    const email = (await formText(c, 'email')).trim();
    const password = await formText(c, 'password');
    const siteKey = signupTurnstile(c);
    const page = (error: string) => (
      <SignupPage csrfToken={c.get('csrfToken')} email={email} error={error} turnstileSiteKey={siteKey} />
    );
    const wait = await admit(c, 'signup', email);
    if (wait !== null) return renderPage(c, page(tooManyAttempts(wait)), 429);
    const config = c.get('config');
    if (
      !(await turnstilePasses(
        config,
        await formText(c, TURNSTILE_FIELD),
        c.req.header('cf-connecting-ip') ?? null,
        { hostname: new URL(c.req.url).hostname, action: SIGNUP_TURNSTILE_ACTION },
      ))
    )
      return renderPage(c, page(TURNSTILE_FAILED), 400);
    const sender = c.get('services').accountMail.sender;
    const problem = signUpProblem({ email, password });
    if (problem) return renderPage(c, page(problem), 400);
    // Counted for a taken address too, so the answer tells nothing about which exist.
    const mail = await admitAccountMail(c.get('services').limiters, email);
    if (!mail.allowed) {
      c.header('Retry-After', String(mail.retryAfterSeconds));
      return renderPage(c, page(confirmationMailLimited(mail.retryAfterSeconds)), 429);
    }
    const shards = c.get('shards');
    const shard = await signUpShard(shards);
    const created = await signUp(shards, shard, { email, password, now: Date.now() });
    if (!created) {
      // The address has an account: its owner retyping the sign-up form is signed in; anyone
      // else is told to sign in or reset the password.
      const account = await signIn(shards, { email, password });
      if (!account) return c.redirect('/login?account-exists=1', 303);
      await beginSession(c, account);
      return c.redirect('/', 303);
    }
    const { accountId, email: to } = created;
    const origin = new URL(c.req.url).origin;
    c.get('services').inBackground(
      sendConfirmation(
        { secretsKey: config.SECRETS_KEY, sender },
        { accountId, email: to, origin, now: Date.now() },
      ).catch((error: unknown) =>
        log.error('confirmation email not sent', { accountId, ...errorFields(error) }),
      ),
    );
    // Signed in at once; the free credits wait for the confirmation link.
    await beginSession(c, { accountId, shard });
    return c.redirect('/?welcome=1', 303);
  });

  dashboard.post('/logout', ...signedInPage, async (c) => {
    const session = c.get('session');
    if (session) await endSession(c.get('db'), session);
    clearSessionCookie(c);
    return c.redirect('/login?signed-out=1', 303);
  });
}
