// Headers on every dashboard response. The CSP allows no inline script or style at all, so
// an injected <script> or style attribute does nothing; pages carry their behaviour in
// /app.js and their look in /app.css. Static assets get the same headers from public/_headers.
import { createMiddleware } from 'hono/factory';

/**
 * The dashboard's CSP; `thirdParty` may add script and frame origins (a page with a Turnstile
 * widget) and form targets (a form whose answer redirects to Stripe Checkout: browsers apply
 * `form-action` to the redirect too).
 */
export function dashboardCsp(
  thirdParty: { scripts?: string[]; frames?: string[]; forms?: string[] } = {},
): string {
  return [
    "default-src 'self'",
    ["script-src 'self'", ...(thirdParty.scripts ?? [])].join(' '),
    "style-src 'self'",
    "img-src 'self' data:",
    ...(thirdParty.frames?.length ? [`frame-src ${thirdParty.frames.join(' ')}`] : []),
    ["form-action 'self'", ...(thirdParty.forms ?? [])].join(' '),
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export const DASHBOARD_CSP = dashboardCsp();

export const securityHeaders = createMiddleware(async (c, next) => {
  await next();
  const headers = c.res.headers;
  // A page that needs more (the sign-up form with Turnstile) set its own, built by dashboardCsp.
  if (!headers.has('Content-Security-Policy')) headers.set('Content-Security-Policy', DASHBOARD_CSP);
  headers.set('X-Frame-Options', 'DENY');
  headers.set('Referrer-Policy', 'same-origin');
  headers.set('X-Content-Type-Options', 'nosniff');
  // Every dashboard page shows account data or carries a form token: never keep a copy.
  headers.set('Cache-Control', 'no-store');
});
