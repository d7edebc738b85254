// Where the client may send its API key. The key travels in a header on every request, so over
// plain `http://` anyone on the path reads it: that is allowed only to this machine (a local
// `npm start`, a tunnel's local end), where the traffic never leaves the loopback interface
// (RFC 1122 §3.2.1.3: 127.0.0.0/8 never appears outside a host; RFC 4291 §2.5.3: ::1; RFC 6761
// §6.3: `localhost` and names under it resolve to loopback).
import { RcptConfigurationError } from './errors.ts';

/** The API's base URL without trailing slashes, or a refusal naming what is wrong with it. */
export function checkedBaseUrl(baseUrl: string): string {
  const url = URL.parse(baseUrl);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    throw new RcptConfigurationError(`the base URL must be an http(s) URL; got "${baseUrl}"`);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw new RcptConfigurationError(
      `the base URL ${url.origin} is plain http to another machine, which would send the API key in clear; use https:// (http:// is accepted only for localhost, 127.0.0.0/8 and [::1])`,
    );
  return baseUrl.replace(/\/+$/, '');
}

function isLoopbackHost(hostname: string): boolean {
  const name = hostname.toLowerCase();
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    name === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
  );
}
