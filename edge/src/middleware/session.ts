// The signed-in person behind a dashboard request: the `__Host-rcpt_session` cookie resumed into
// a session (sliding expiry), and the caller the services charge (the account, no API key).
import { ApiError } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import {
  type ActiveSession,
  type ResumedSession,
  resumeSession,
  SESSION_COOKIE,
} from '../services/accounts/sessions.ts';
import { settleDesk } from '../services/money/account-desk.ts';
import { readBalance } from '../storage/accounts.ts';
import { enterAccountShard } from './services.ts';

export interface DashboardEnv {
  Bindings: AppEnv['Bindings'];
  Variables: AppEnv['Variables'] & {
    session: ResumedSession | null;
    /** The `_csrf` value for this page's forms (see csrf.ts). */
    csrfToken: string;
  };
}

const COOKIE_OPTIONS = { httpOnly: true, secure: true, sameSite: 'Lax', path: '/' } as const;

export function setSessionCookie(c: Context, session: ActiveSession): void {
  setCookie(c, SESSION_COOKIE, session.token, { ...COOKIE_OPTIONS, expires: new Date(session.expiresAt) });
}

export function clearSessionCookie(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, COOKIE_OPTIONS);
}

/** Resumes the session of the cookie, if any; a dead cookie is cleared. */
export const loadSession = createMiddleware<DashboardEnv>(async (c, next) => {
  const token = getCookie(c, SESSION_COOKIE);
  let session = token ? await resumeSession(c.get('shards'), token, Date.now()) : null;
  if (session) {
    enterAccountShard(c, session.shard);
    // The page shows the balance and history D1 holds once the account's desk wrote what it
    // answered; a form that may charge in D1 has the desk's unspent credits back first
    // (docs/money.md, "Where the balance lives").
    const { desks, db } = c.get('services');
    await settleDesk(desks, session.accountId, { release: c.req.method !== 'GET' });
    session = {
      ...session,
      creditBalance: (await readBalance(db, session.accountId)) ?? session.creditBalance,
    };
  }
  c.set('session', session);
  if (session) {
    c.set('caller', {
      accountId: session.accountId,
      apiKeyId: null,
      mode: 'live',
      creditBalance: session.creditBalance,
      ownProbersOnly: session.ownProbersOnly,
    });
  }
  await next();
  // Unless the route set or cleared the cookie itself (sign-in, sign-out, password change):
  // the idle expiry slides on the server, so the cookie's follows it; a dead cookie goes.
  const routeSetIt = c.res.headers.getSetCookie().some((line) => line.startsWith(`${SESSION_COOKIE}=`));
  if (routeSetIt) return;
  if (session) setSessionCookie(c, session);
  else if (token !== undefined) clearSessionCookie(c);
});

/**
 * The balance the page of this request shows in its header, once the request has spent or been
 * granted credits: the session's was read when the request began, before the charge.
 */
export function setPageBalance(c: Context<DashboardEnv>, creditBalance: number): void {
  const session = c.get('session');
  if (session) c.set('session', { ...session, creditBalance });
}

/** Pages: no session → the login page, coming back here afterwards. */
export const requireSessionPage = createMiddleware<DashboardEnv>(async (c, next) => {
  if (!c.get('session')) {
    const url = new URL(c.req.url);
    const back =
      c.req.method === 'GET' && url.pathname !== '/'
        ? `?next=${encodeURIComponent(url.pathname + url.search)}`
        : '';
    return c.redirect(`/login${back}`, 303);
  }
  await next();
});

/** JSON endpoints used by the pages' scripts: no session → 401 in the API's error shape. */
export const requireSessionJson = createMiddleware<DashboardEnv>(async (c, next) => {
  if (!c.get('session')) throw new ApiError('UNAUTHORIZED', { message: 'Sign in to the dashboard first.' });
  await next();
});

/** The session of a request that passed requireSession*. */
export function sessionOf(c: Context<DashboardEnv>): ActiveSession {
  const session = c.get('session');
  if (!session) throw new Error('sessionOf called on a route without requireSession');
  return session;
}
