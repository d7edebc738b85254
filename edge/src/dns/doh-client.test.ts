import { Buffer } from 'node:buffer';
import dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { type FakeDohOptions, type FakeZone, fakeDoh } from '../../test/fake-doh.ts';
import { type DnsAnswer, DohClient, type DohClientOptions } from './doh-client.ts';
import { TtlCache } from './ttl-cache.ts';

const PRIMARY = 'https://primary.example/dns-query';
const SECONDARY = 'https://secondary.example/dns-query';

const ZONE: FakeZone = {
  'example.com': {
    MX: [
      [10, 'MX1.Example.com.'],
      [20, 'mx2.example.com'],
    ],
    A: ['93.184.215.14'],
    TXT: [['v=spf1 ', '-all']],
    ttl: 120,
  },
  'ipv6.example.com': { AAAA: ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'] },
  'broken.example': { servfail: true },
  'long-lived.example': { A: ['93.184.215.15'], ttl: 86_400 },
};

function clientWith(
  fakeOptions: FakeDohOptions = {},
  clientOptions: Partial<DohClientOptions> = {},
  zone: FakeZone = ZONE,
) {
  const resolver = fakeDoh(zone, fakeOptions);
  let now = 1_700_000_000_000;
  const cache = new TtlCache<DnsAnswer>({ now: () => now });
  const client = new DohClient({
    urls: [PRIMARY, SECONDARY],
    fetch: resolver.fetch,
    cache,
    ...clientOptions,
  });
  return {
    client,
    queries: resolver.queries,
    advanceSeconds(seconds: number) {
      now += seconds * 1000;
    },
  };
}

describe('DohClient wire format (RFC 8484)', () => {
  it('POSTs an application/dns-message query with id 0 and RD set', async () => {
    const { client, queries } = clientWith();
    const answer = await client.query('example.com', 'A');
    expect(answer).toEqual({
      rcode: 'NOERROR',
      answers: [{ type: 'A', name: 'example.com', ttl: 120, address: '93.184.215.14' }],
      ttl: 120,
    });
    expect(queries).toEqual([
      {
        url: PRIMARY,
        method: 'POST',
        contentType: 'application/dns-message',
        accept: 'application/dns-message',
        dnsParameter: null,
        id: 0,
        recursionDesired: true,
        name: 'example.com',
        type: 'A',
      },
    ]);
  });

  it('GETs with the query in ?dns= as base64url without padding', async () => {
    const { client, queries } = clientWith({}, { method: 'GET' });
    const answer = await client.query('ipv6.example.com', 'AAAA');
    expect(answer.rcode).toBe('NOERROR');
    expect(answer.answers).toEqual([
      { type: 'AAAA', name: 'ipv6.example.com', ttl: 300, address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c' },
    ]);
    const [query] = queries;
    expect(query?.method).toBe('GET');
    expect(query?.contentType).toBeNull();
    expect(query?.accept).toBe('application/dns-message');
    const expectedWire = dnsPacket.encode({
      type: 'query',
      id: 0,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ type: 'AAAA', name: 'ipv6.example.com', class: 'IN' }],
    });
    // This query is 34 bytes, so plain base64 would end in '=' padding, which RFC 8484 §4.1 drops.
    expect(expectedWire.length % 3).not.toBe(0);
    expect(query?.dnsParameter).toBe(expectedWire.toString('base64url'));
    expect(query?.dnsParameter).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('reads MX records lower-cased without the trailing dot, and joins TXT strings', async () => {
    const { client } = clientWith();
    const mx = await client.query('Example.COM.', 'MX');
    expect(mx.answers).toEqual([
      { type: 'MX', name: 'example.com', ttl: 120, preference: 10, exchange: 'mx1.example.com' },
      { type: 'MX', name: 'example.com', ttl: 120, preference: 20, exchange: 'mx2.example.com' },
    ]);
    const txt = await client.query('example.com', 'TXT');
    expect(txt.answers).toEqual([{ type: 'TXT', name: 'example.com', ttl: 120, text: 'v=spf1 -all' }]);
  });

  it('answers NODATA as NOERROR without records, with the default negative TTL', async () => {
    const { client } = clientWith();
    expect(await client.query('ipv6.example.com', 'A')).toEqual({ rcode: 'NOERROR', answers: [], ttl: 60 });
  });

  it('refuses a name that cannot be encoded without asking anyone', async () => {
    const { client, queries } = clientWith();
    const answer = await client.query(`${'a'.repeat(64)}.example`, 'A');
    expect(answer.rcode).toBe('BAD_NAME');
    expect(queries).toHaveLength(0);
  });
});

describe('DohClient failover', () => {
  it('takes NXDOMAIN as final: the second resolver is not asked', async () => {
    const { client, queries } = clientWith();
    const answer = await client.query('missing.example', 'MX');
    expect(answer).toEqual({ rcode: 'NXDOMAIN', answers: [], ttl: 60 });
    expect(queries.map((query) => query.url)).toEqual([PRIMARY]);
  });

  it('fails over from a SERVFAIL to the next resolver', async () => {
    const { client, queries } = clientWith({ behaviours: { [PRIMARY]: 'servfail' } });
    const answer = await client.query('example.com', 'A');
    expect(answer.rcode).toBe('NOERROR');
    expect(answer.answers).toHaveLength(1);
    expect(queries.map((query) => query.url)).toEqual([PRIMARY, SECONDARY]);
  });

  it('fails over from an HTTP 500', async () => {
    const { client, queries } = clientWith({ behaviours: { [PRIMARY]: 'http-500' } });
    expect((await client.query('example.com', 'A')).rcode).toBe('NOERROR');
    expect(queries.map((query) => query.url)).toEqual([PRIMARY, SECONDARY]);
  });

  it('fails over from a resolver that hangs, after its own timeout', async () => {
    const { client, queries } = clientWith({ behaviours: { [PRIMARY]: 'hang' } }, { timeoutMs: 50 });
    expect((await client.query('example.com', 'A')).rcode).toBe('NOERROR');
    expect(queries.map((query) => query.url)).toEqual([PRIMARY, SECONDARY]);
  });

  it('fails over from a body that is not a DNS message', async () => {
    const { client, queries } = clientWith({ behaviours: { [PRIMARY]: 'garbage' } });
    expect((await client.query('example.com', 'A')).rcode).toBe('NOERROR');
    expect(queries).toHaveLength(2);
  });

  it.each([
    ['garbage', /primary\.example: body is not a DNS message/],
    ['html', /content type "text\/html", not application\/dns-message/],
    ['other-question', /answers another question \(other-example\.com A\)/],
    ['not-response', /not a response to our query/],
    ['truncated', /truncated answer/],
  ] as const)('rejects a %s response as BAD_RESPONSE', async (behaviour, reason) => {
    const { client } = clientWith({ behaviours: { [PRIMARY]: behaviour, [SECONDARY]: behaviour } });
    const answer = await client.query('example.com', 'A');
    expect(answer.rcode).toBe('BAD_RESPONSE');
    expect(answer.answers).toEqual([]);
    expect(answer.ttl).toBe(0);
    expect('reason' in answer && answer.reason).toMatch(reason);
  });

  it('reports SERVFAIL when every resolver says so, naming each resolver', async () => {
    const { client } = clientWith();
    const answer = await client.query('broken.example', 'MX');
    expect(answer).toEqual({
      rcode: 'SERVFAIL',
      answers: [],
      ttl: 0,
      reason: 'primary.example: answered SERVFAIL; secondary.example: answered SERVFAIL',
    });
  });

  it('reports TIMEOUT when every resolver hangs', async () => {
    const { client } = clientWith(
      { behaviours: { [PRIMARY]: 'hang', [SECONDARY]: 'hang' } },
      { timeoutMs: 50 },
    );
    const answer = await client.query('example.com', 'A');
    expect(answer).toMatchObject({
      rcode: 'TIMEOUT',
      reason: 'primary.example: timed out after 50 ms; secondary.example: timed out after 50 ms',
    });
  });

  it('reports TRANSPORT for HTTP errors and failed connections', async () => {
    const { client } = clientWith({ behaviours: { [PRIMARY]: 'http-500', [SECONDARY]: 'network-error' } });
    const answer = await client.query('example.com', 'A');
    expect(answer).toMatchObject({
      rcode: 'TRANSPORT',
      reason: 'primary.example: HTTP 500; secondary.example: request failed: Network connection lost.',
    });
  });

  it('prefers a resolver SERVFAIL over a timeout when summing up', async () => {
    const { client } = clientWith(
      { behaviours: { [PRIMARY]: 'servfail', [SECONDARY]: 'hang' } },
      { timeoutMs: 50 },
    );
    expect((await client.query('example.com', 'A')).rcode).toBe('SERVFAIL');
  });

  it('names resolvers by host only, so a token in the URL never reaches a message', async () => {
    const secretUrl = 'https://doh.example/dns-query/token-s3cret';
    const resolver = fakeDoh(ZONE, { behaviours: { [secretUrl]: 'http-500' } });
    const client = new DohClient({ urls: [secretUrl], fetch: resolver.fetch });
    const answer = await client.query('example.com', 'A');
    expect(answer).toMatchObject({ rcode: 'TRANSPORT', reason: 'doh.example: HTTP 500' });
  });

  it('accepts a question echoed in another letter case (RFC 1035 §2.3.3)', async () => {
    const echoUpper = fakeDoh(ZONE);
    const upperCaseFetch: typeof fetch = async (input, init) => {
      const response = await echoUpper.fetch(input, init);
      const packet = dnsPacket.decode(Buffer.from(await response.arrayBuffer()));
      for (const question of packet.questions ?? []) question.name = question.name.toUpperCase();
      return new Response(new Uint8Array(dnsPacket.encode(packet)), {
        headers: { 'content-type': 'application/dns-message' },
      });
    };
    const client = new DohClient({ urls: [PRIMARY], fetch: upperCaseFetch });
    expect((await client.query('example.com', 'A')).rcode).toBe('NOERROR');
  });
});

describe('DohClient cache', () => {
  it('answers a repeated query from the cache until the TTL has passed', async () => {
    const { client, queries, advanceSeconds } = clientWith();
    const first = await client.query('example.com', 'MX');
    expect(await client.query('EXAMPLE.com', 'MX')).toEqual(first);
    expect(queries).toHaveLength(1);

    advanceSeconds(119);
    await client.query('example.com', 'MX');
    expect(queries).toHaveLength(1);

    advanceSeconds(1);
    await client.query('example.com', 'MX');
    expect(queries).toHaveLength(2);
  });

  it('keeps each type apart', async () => {
    const { client, queries } = clientWith();
    await client.query('example.com', 'MX');
    await client.query('example.com', 'A');
    expect(queries.map((query) => query.type)).toEqual(['MX', 'A']);
  });

  it('caps a long TTL at one hour', async () => {
    const { client, queries, advanceSeconds } = clientWith();
    expect((await client.query('long-lived.example', 'A')).ttl).toBe(86_400);
    advanceSeconds(3_599);
    await client.query('long-lived.example', 'A');
    expect(queries).toHaveLength(1);
    advanceSeconds(1);
    await client.query('long-lived.example', 'A');
    expect(queries).toHaveLength(2);
  });

  it('caches NXDOMAIN for the SOA minimum (RFC 2308 §5)', async () => {
    const { client, queries, advanceSeconds } = clientWith({ soaMinimum: 30 });
    expect(await client.query('missing.example', 'A')).toEqual({ rcode: 'NXDOMAIN', answers: [], ttl: 30 });
    advanceSeconds(29);
    expect((await client.query('missing.example', 'A')).rcode).toBe('NXDOMAIN');
    expect(queries).toHaveLength(1);
    advanceSeconds(1);
    await client.query('missing.example', 'A');
    expect(queries).toHaveLength(2);
  });

  it('caches NXDOMAIN for 60 s when the answer carries no SOA', async () => {
    const { client, queries, advanceSeconds } = clientWith();
    await client.query('missing.example', 'A');
    advanceSeconds(59);
    await client.query('missing.example', 'A');
    expect(queries).toHaveLength(1);
    advanceSeconds(1);
    await client.query('missing.example', 'A');
    expect(queries).toHaveLength(2);
  });

  it('does not cache failures: the next query asks again', async () => {
    const { client, queries } = clientWith();
    expect((await client.query('broken.example', 'A')).rcode).toBe('SERVFAIL');
    expect((await client.query('broken.example', 'A')).rcode).toBe('SERVFAIL');
    expect(queries.map((query) => query.url)).toEqual([PRIMARY, SECONDARY, PRIMARY, SECONDARY]);
  });

  it('does not cache a timeout', async () => {
    const { client, queries } = clientWith(
      { behaviours: { [PRIMARY]: 'hang', [SECONDARY]: 'hang' } },
      { timeoutMs: 50 },
    );
    await client.query('example.com', 'A');
    await client.query('example.com', 'A');
    expect(queries).toHaveLength(4);
  });
});
