// The middleware each kind of dashboard route runs, in order: headers first (so that even an
// error page carries them), then the session, then the CSRF check of a POST.
import { csrfProtection } from '../../middleware/csrf.ts';
import { accountChangeRateLimit, apiKeyRateLimit } from '../../middleware/rate-limit.ts';
import { securityHeaders } from '../../middleware/security-headers.ts';
import { loadSession, requireSessionJson, requireSessionPage } from '../../middleware/session.ts';

/** Pages and forms of a signed-in person. */
export const signedInPage = [
  securityHeaders,
  loadSession,
  requireSessionPage,
  csrfProtection('session'),
] as const;

/**
 * Forms that spend rcpt's resources (a verification, an upload or its preview, a webhook
 * test, a password hash): the signed-in account gets the API's per-minute limit, counted
 * apart from its keys, so a session is no way around it.
 */
export const spendingPage = [...signedInPage, apiKeyRateLimit] as const;

/**
 * Forms that change the account (keys, webhook URL and secret, settings): each writes to the
 * database every account shares, so an account gets a few a minute (ACCOUNT_CHANGE_LIMITS).
 */
export const changingPage = [...signedInPage, accountChangeRateLimit] as const;

/** JSON endpoints called by the pages' scripts (401 JSON without a session). */
export const signedInJson = [
  securityHeaders,
  loadSession,
  requireSessionJson,
  csrfProtection('session'),
] as const;

/** The bulk preview: a JSON endpoint that parses a whole upload, limited like spendingPage. */
export const spendingJson = [...signedInJson, apiKeyRateLimit] as const;

/** Sign-in and sign-up: no session required, forms bound to the pre-session cookie. */
export const signedOutPage = [securityHeaders, loadSession, csrfProtection('pre-session')] as const;
