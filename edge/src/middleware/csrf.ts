// CSRF protection for every dashboard POST. Signed-in forms carry an HMAC of the session
// token (no stored state); the sign-in and sign-up forms, which have no session yet, are
// bound to a random pre-session cookie instead (double submit). Both comparisons are in
// constant time (isValidCsrfToken). SameSite=Lax cookies are the second line of defence.
import { ApiError } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import { csrfTokenFor, isValidCsrfToken } from '../services/accounts/sessions.ts';
import { readBoundedForm } from './json-body.ts';
import type { DashboardEnv } from './session.ts';

/**
 * `__Host-`, like the session cookie: browsers take it only Secure, with Path=/ and no Domain
 * (RFC 6265bis §4.1.3.2), so a sibling subdomain or a plain-http page cannot plant a token of
 * its choosing and pass the double-submit check. Browsers count http://localhost as secure, so
 * `wrangler dev` keeps it.
 */
export const PRE_SESSION_CSRF_COOKIE = '__Host-rcpt_csrf';
export const CSRF_FIELD = '_csrf';
export const CSRF_HEADER = 'X-CSRF-Token';

const FORM_TYPES = /^(multipart\/form-data|application\/x-www-form-urlencoded)\s*(;|$)/i;

/**
 * Verifies the token of a POST (form field `_csrf` or the X-CSRF-Token header) and gives the
 * page the token its own forms must carry. `session`: bound to the signed-in session;
 * `pre-session`: bound to the pre-session cookie, which a GET sets when missing.
 */
export function csrfProtection(binding: 'session' | 'pre-session') {
  return createMiddleware<DashboardEnv>(async (c, next) => {
    let secret: string | undefined;
    if (binding === 'session') {
      secret = c.get('session')?.token;
    } else {
      secret = getCookie(c, PRE_SESSION_CSRF_COOKIE);
      if (!secret && c.req.method === 'GET') {
        secret = randomToken();
        setCookie(c, PRE_SESSION_CSRF_COOKIE, secret, {
          httpOnly: true,
          secure: true,
          sameSite: 'Lax',
          path: '/',
        });
      }
    }
    if (c.req.method === 'POST') {
      const form = await readForm(c);
      const field = form.get(CSRF_FIELD);
      const presented = c.req.header(CSRF_HEADER) ?? (typeof field === 'string' ? field : undefined);
      if (!secret || !(await isValidCsrfToken(secret, presented))) throw new ApiError('CSRF_FAILED');
    }
    c.set('csrfToken', secret ? await csrfTokenFor(secret) : '');
    await next();
  });
}

/**
 * Reads a form body once, within MAX_FORM_BYTES (413 past it), and leaves it in Hono's body
 * cache so that the handler's `c.req.formData()` gets the same parsed form, never the raw
 * stream unbounded. Every dashboard POST is a form (the pages' script posts FormData too).
 */
async function readForm(c: Context<DashboardEnv>): Promise<FormData> {
  const contentType = c.req.header('content-type') ?? '';
  if (!FORM_TYPES.test(contentType)) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', {
      message: 'Send the form as multipart/form-data or URL-encoded.',
    });
  }
  const form = await readBoundedForm(c.req.raw);
  c.req.bodyCache.formData = form;
  return form;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}
