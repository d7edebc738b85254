// Headers on every dashboard response. The CSP allows no inline script or style at all, so
// an injected <script> or style attribute does nothing; pages carry their behaviour in
// /app.js and their look in /app.css. Static assets get the same headers from public/_headers.
import { createMiddleware } from 'hono/factory';

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const securityHeaders = createMiddleware(async (c, next) => {
  await next();
  const headers = c.res.headers;
  headers.set('Content-Security-Policy', DASHBOARD_CSP);
  headers.set('X-Frame-Options', 'DENY');
  headers.set('Referrer-Policy', 'same-origin');
  headers.set('X-Content-Type-Options', 'nosniff');
  // Every dashboard page shows account data or carries a form token: never keep a copy.
  headers.set('Cache-Control', 'no-store');
});
