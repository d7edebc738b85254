/** @jsxImportSource hono/jsx */
// The page shell: landmarks, the navigation, and the one stylesheet and script. No inline
// script or style anywhere (the CSP forbids them).
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { Child } from 'hono/jsx';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { DashboardEnv } from '../../middleware/session.ts';
import { CONFIRMATION_PATH } from '../../services/accounts/email-confirmation.ts';
import { SIGNUP_CREDITS } from '../../services/accounts/sign-in.ts';
import { CsrfField, SubmitButton } from './forms.tsx';

export type NavSection =
  | 'overview'
  | 'keys'
  | 'verify'
  | 'bulk'
  | 'history'
  | 'accuracy'
  | 'outcomes'
  | 'webhooks'
  | 'probers'
  | 'account'
  | 'credits';

const NAV: { section: NavSection; href: string; label: string }[] = [
  { section: 'overview', href: '/', label: 'Overview' },
  { section: 'keys', href: '/keys', label: 'API keys' },
  { section: 'verify', href: '/verify', label: 'Verify' },
  { section: 'bulk', href: '/bulk', label: 'Bulk' },
  { section: 'history', href: '/history', label: 'History' },
  { section: 'accuracy', href: '/accuracy', label: 'Accuracy' },
  { section: 'outcomes', href: '/outcomes', label: 'Outcomes' },
  { section: 'webhooks', href: '/webhooks', label: 'Webhooks' },
  { section: 'probers', href: '/probers', label: 'Probers' },
  { section: 'account', href: '/account', label: 'Account' },
];

export interface LayoutProps {
  title: string;
  /** The nav entry to mark as current; the nav is shown only to a signed-in person. */
  section?: NavSection | undefined;
  signedIn: boolean;
  csrfToken: string;
  /** Extra elements for <head> (e.g. the no-script refresh of a running job). */
  head?: Child;
  /** The signed-in account's balance, shown in the header beside "Buy credits". */
  creditBalance?: number | null | undefined;
  /** The signed-in account's email while it is unconfirmed: every page then says so. */
  unconfirmedEmail?: string | null | undefined;
  /** What the header says after the brand; "dashboard" unless the page is another part of rcpt. */
  brandTail?: string;
  /** Whether the page loads the dashboard's script (a document page needs none). */
  script?: boolean;
  children?: Child;
}

export function Layout(props: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · rcpt`}</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/app.css" />
        {props.script === false ? null : <script src="/app.js" defer />}
        {props.head}
      </head>
      <body>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="site-header">
          <div class="site-header-inner">
            <a class="brand" href="/">
              rcpt<span class="brand-tail"> {props.brandTail ?? 'dashboard'}</span>
            </a>
            {props.signedIn ? (
              <div class="header-account">
                {typeof props.creditBalance === 'number' ? (
                  <CreditsBadge balance={props.creditBalance} current={props.section === 'credits'} />
                ) : null}
                <form method="post" action="/logout" class="logout-form">
                  <CsrfField token={props.csrfToken} />
                  <SubmitButton kind="link">Log out</SubmitButton>
                </form>
              </div>
            ) : null}
          </div>
          {props.signedIn ? (
            <nav aria-label="Dashboard" class="site-nav">
              <ul>
                {NAV.map((entry) => (
                  <li>
                    <a href={entry.href} aria-current={entry.section === props.section ? 'page' : undefined}>
                      {entry.label}
                    </a>
                  </li>
                ))}
                <li>
                  <a href="/docs">Docs</a>
                </li>
              </ul>
            </nav>
          ) : null}
        </header>
        <main id="main" tabindex={-1}>
          {props.signedIn && props.unconfirmedEmail ? (
            <ConfirmationBanner email={props.unconfirmedEmail} csrfToken={props.csrfToken} />
          ) : null}
          {props.children}
        </main>
        <footer class="site-footer">
          <p>
            rcpt email verification · <a href="/docs">API reference</a>
          </p>
        </footer>
      </body>
    </html>
  );
}

/** The balance in the header of every signed-in page, and the way to buy more. */
function CreditsBadge(props: { balance: number; current: boolean }) {
  return (
    <p class="header-credits">
      <span data-testid="header-balance">
        <strong>{props.balance.toLocaleString('en-US')}</strong> {props.balance === 1 ? 'credit' : 'credits'}
      </span>{' '}
      <a href="/credits" class="button button-small" aria-current={props.current ? 'page' : undefined}>
        Buy credits
      </a>
    </p>
  );
}

/** Until the account's email is confirmed: where the link went, and a way to have it sent again. */
function ConfirmationBanner(props: { email: string; csrfToken: string }) {
  return (
    <div class="notice notice-info confirm-banner" data-testid="confirm-banner">
      <p>
        <strong>Confirm your email address.</strong> We sent a link to {props.email}: follow it to receive
        your {SIGNUP_CREDITS} free credits. Until then live requests have no credits to spend; test keys work.
      </p>
      <form method="post" action={`${CONFIRMATION_PATH}/resend`}>
        <CsrfField token={props.csrfToken} />
        <SubmitButton kind="secondary">Send the link again</SubmitButton>
      </form>
    </div>
  );
}

/** One card of a page: a section named by its heading, so screen readers list it as a region. */
export function Card(props: { id: string; title: string; children?: Child }) {
  return (
    <section class="card" aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** Props of Layout that come from the request: who is signed in, the form token, the banner. */
export function layoutContext(
  c: Context<DashboardEnv>,
): Pick<LayoutProps, 'signedIn' | 'csrfToken' | 'unconfirmedEmail' | 'creditBalance'> {
  const session = c.get('session');
  return {
    signedIn: Boolean(session),
    csrfToken: c.get('csrfToken') ?? '',
    unconfirmedEmail: session?.unconfirmedEmail ?? null,
    creditBalance: session?.creditBalance ?? null,
  };
}

export function renderPage(c: Context<DashboardEnv>, page: Child, status: ContentfulStatusCode = 200) {
  return c.html(html`<!DOCTYPE html>${page}`, status);
}
