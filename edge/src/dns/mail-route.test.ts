import { describe, expect, it } from 'vitest';
import { comparableRoute, MAIL_ROUTE_CASES, MAIL_ROUTE_ZONE } from '../../../test/dns/mail-route-cases.ts';
import { zoneFetch } from '../../../test/dns/zone-fetch.ts';
import { DohClient } from './doh-client.ts';
import { resolveMailRoute } from './mail-route.ts';

const RESOLVER = 'https://resolver.example/dns-query';

describe('resolveMailRoute over DNS over HTTPS', () => {
  // A fresh client per case, so no answer comes from another case's cache.
  it.each(MAIL_ROUTE_CASES)('$name ($domain)', async ({ domain, allowPrivateTargets = false, expected }) => {
    const doh = new DohClient({ urls: [RESOLVER], fetch: zoneFetch(MAIL_ROUTE_ZONE), timeoutMs: 200 });
    const outcome = await resolveMailRoute(domain, { doh, allowPrivateTargets });
    expect(comparableRoute(outcome)).toEqual(expected);
  });

  it('names the resolver and what went wrong with it', async () => {
    const doh = new DohClient({ urls: [RESOLVER], fetch: zoneFetch(MAIL_ROUTE_ZONE), timeoutMs: 200 });
    expect(await resolveMailRoute('silent.route.test', { doh, allowPrivateTargets: false })).toEqual({
      kind: 'error',
      failure: 'timeout',
      message: 'MX lookup for silent.route.test failed (timeout): resolver.example: timed out after 200 ms',
    });
  });

  it('calls a resolver it cannot reach unreachable', async () => {
    const refused: typeof fetch = () => Promise.reject(new TypeError('connection refused'));
    const doh = new DohClient({ urls: [RESOLVER], fetch: refused });
    expect(await resolveMailRoute('two.route.test', { doh, allowPrivateTargets: false })).toMatchObject({
      kind: 'error',
      failure: 'unreachable',
    });
  });
});
