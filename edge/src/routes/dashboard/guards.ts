// The middleware each kind of dashboard route runs, in order: headers first (so that even an
// error page carries them), then the session, then the CSRF check of a POST.
import { csrfProtection } from '../../middleware/csrf.ts';
import { securityHeaders } from '../../middleware/security-headers.ts';
import { loadSession, requireSessionJson, requireSessionPage } from '../../middleware/session.ts';

/** Pages and forms of a signed-in person. */
export const signedInPage = [
  securityHeaders,
  loadSession,
  requireSessionPage,
  csrfProtection('session'),
] as const;

/** JSON endpoints called by the pages' scripts (401 JSON without a session). */
export const signedInJson = [
  securityHeaders,
  loadSession,
  requireSessionJson,
  csrfProtection('session'),
] as const;

/** Sign-in and sign-up: no session required, forms bound to the pre-session cookie. */
export const signedOutPage = [securityHeaders, loadSession, csrfProtection('pre-session')] as const;
