// A webhook attempt resolves its host once and connects to an address it checked, never to one a
// second resolution (the platform's, by the time `fetch` looks the name up) would give: the DNS
// rebinding window between the check and the call is closed. The fake Stripe of the test world
// stands in for the customer's endpoint: an HTTP server on 127.0.0.1.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { postToCheckedTarget, type TargetPolicy } from './target.ts';

const ENDPOINT_PORT = new URL(env.STRIPE_API_URL ?? '').port;
const request = {
  headers: { 'content-type': 'application/json' },
  body: '{"type":"job.completed"}',
  timeoutMs: 5_000,
};

/** A host whose DNS answers the checked address first and a private one to every later query. */
function rebindingPolicy(): TargetPolicy & { queries: string[] } {
  const queries: string[] = [];
  return {
    queries,
    async resolve(host) {
      queries.push(host);
      return queries.length === 1 ? ['127.0.0.1'] : ['10.0.0.1'];
    },
    refuse: (address, host) => (address.startsWith('10.') ? `${host} resolves to ${address}` : null),
  };
}

describe('postToCheckedTarget', () => {
  it('resolves once and posts to the checked address, whatever the name resolves to afterwards', async () => {
    const policy = rebindingPolicy();
    // `.invalid` never resolves (RFC 6761 §6.4): only a connection to the checked address reaches anything.
    const url = new URL(`http://rebinding.webhooks.invalid:${ENDPOINT_PORT}/v1/customers`);
    const outcome = await postToCheckedTarget(url, request, policy);
    // The endpoint answered (the fake Stripe refuses a call without its key: 401).
    expect(outcome).toEqual({ status: 401, address: '127.0.0.1' });
    expect(policy.queries).toEqual(['rebinding.webhooks.invalid']);
  });

  it('refuses a host with any refused address, and connects to none', async () => {
    const url = new URL(`http://mixed.webhooks.invalid:${ENDPOINT_PORT}/v1/customers`);
    const outcome = await postToCheckedTarget(url, request, {
      resolve: async () => ['127.0.0.1', '10.0.0.1'],
      refuse: (address, host) => (address.startsWith('10.') ? `${host} resolves to ${address}` : null),
    });
    expect(outcome).toEqual({ refusal: 'mixed.webhooks.invalid resolves to 10.0.0.1' });
  });

  it('says which address failed when none answers, and refuses a name without addresses', async () => {
    const closed = await postToCheckedTarget(new URL('http://down.webhooks.invalid:9/hook'), request, {
      resolve: async () => ['127.0.0.1'],
      refuse: () => null,
    });
    expect(closed).toMatchObject({ error: expect.stringMatching(/^127\.0\.0\.1: /) });
    const none = await postToCheckedTarget(new URL('https://empty.webhooks.invalid/hook'), request, {
      resolve: async () => ({ failure: 'empty.webhooks.invalid could not be resolved (NXDOMAIN)' }),
      refuse: () => null,
    });
    expect(none).toEqual({ refusal: 'empty.webhooks.invalid could not be resolved (NXDOMAIN)' });
  });
});
