import type { Context } from 'hono';

// The client's address, for keys limited to address blocks and publishable keys' per-client limit.

/**
 * `CF-Connecting-IP`: "the client IP address connecting to Cloudflare"
 * (developers.cloudflare.com/fundamentals/reference/http-headers/#cf-connecting-ip). Null when
 * absent (a request that did not come through Cloudflare): no address block holds it.
 */
export function clientAddressOf(c: Context): string | null {
  return c.req.header('cf-connecting-ip') ?? null;
}
