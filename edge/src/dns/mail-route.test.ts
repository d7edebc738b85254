import { describe, expect, it } from 'vitest';
import { comparableRoute, MAIL_ROUTE_CASES, MAIL_ROUTE_ZONE } from '../../../test/dns/mail-route-cases.ts';
import { answerQuery, namesThatExist } from '../../../test/world/dns-answer.ts';
import { DohClient } from './doh-client.ts';
import { resolveMailRoute } from './mail-route.ts';

const RESOLVER = 'https://resolver.example/dns-query';

/**
 * A `fetch` that is a DoH resolver (RFC 8484 POST) answering from the mail-route zone with the
 * world's resolver; a silent name's request hangs until the client's timeout aborts it.
 */
function zoneFetch(): typeof fetch {
  const existingNames = namesThatExist(MAIL_ROUTE_ZONE);
  return async (input, init) => {
    const request = new Request(input, init);
    const answer = answerQuery(new Uint8Array(await request.arrayBuffer()), MAIL_ROUTE_ZONE, existingNames);
    if (answer === null) {
      const signal = init?.signal ?? request.signal;
      return new Promise<Response>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    return new Response(answer, { headers: { 'content-type': 'application/dns-message' } });
  };
}

describe('resolveMailRoute over DNS over HTTPS', () => {
  // A fresh client per case, so no answer comes from another case's cache.
  it.each(MAIL_ROUTE_CASES)('$name ($domain)', async ({ domain, allowPrivateTargets = false, expected }) => {
    const doh = new DohClient({ urls: [RESOLVER], fetch: zoneFetch(), timeoutMs: 200 });
    const outcome = await resolveMailRoute(domain, { doh, allowPrivateTargets });
    expect(comparableRoute(outcome)).toEqual(expected);
  });

  it('names the resolver and what went wrong with it', async () => {
    const doh = new DohClient({ urls: [RESOLVER], fetch: zoneFetch(), timeoutMs: 200 });
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
