import { describe, expect, it } from 'vitest';
import { DohClient } from './doh-client.ts';
import { type FakeDohOptions, type FakeZone, fakeDoh } from './fake-doh.ts';
import { resolveMailRoute } from './mail-route.ts';

const PRIMARY = 'https://primary.example/dns-query';
const SECONDARY = 'https://secondary.example/dns-query';

function routeOf(
  domain: string,
  zone: FakeZone,
  { allowPrivateTargets = false, ...fakeOptions }: FakeDohOptions & { allowPrivateTargets?: boolean } = {},
) {
  const resolver = fakeDoh(zone, fakeOptions);
  const doh = new DohClient({ urls: [PRIMARY, SECONDARY], fetch: resolver.fetch, timeoutMs: 50 });
  return { route: resolveMailRoute(domain, { doh, allowPrivateTargets }), queries: resolver.queries };
}

describe('resolveMailRoute with MX records (RFC 5321 §5.1)', () => {
  it('orders MX hosts by preference, each with IPv4 then IPv6 addresses', async () => {
    const { route } = routeOf('example.com', {
      'example.com': {
        MX: [
          [20, 'mx2.example.com'],
          [10, 'mx1.example.com'],
        ],
      },
      'mx1.example.com': { A: ['93.184.215.10', '93.184.215.11'], AAAA: ['2606:2800:220:1::10'] },
      'mx2.example.com': { AAAA: ['2606:2800:220:1::20'], A: ['93.184.215.20'] },
    });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [
        {
          host: 'mx1.example.com',
          preference: 10,
          ips: ['93.184.215.10', '93.184.215.11', '2606:2800:220:1::10'],
        },
        { host: 'mx2.example.com', preference: 20, ips: ['93.184.215.20', '2606:2800:220:1::20'] },
      ],
    });
  });

  it('answers null_mx for "MX 0 ." (RFC 7505)', async () => {
    const { route, queries } = routeOf('nomail.example', {
      'nomail.example': { MX: [[0, '.']], A: ['93.184.215.1'] },
    });
    expect(await route).toEqual({ kind: 'null_mx' });
    expect(queries.map((query) => query.type)).toEqual(['MX']);
  });

  it('ignores a root exchange listed beside real MX hosts', async () => {
    const { route } = routeOf('mixed.example', {
      'mixed.example': {
        MX: [
          [0, '.'],
          [10, 'mx.mixed.example'],
        ],
      },
      'mx.mixed.example': { A: ['93.184.215.30'] },
    });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.mixed.example', preference: 10, ips: ['93.184.215.30'] }],
    });
  });

  it('answers nxdomain when the domain does not exist', async () => {
    const { route } = routeOf('missing.example', {});
    expect(await route).toEqual({ kind: 'nxdomain' });
  });

  it('answers no_mail_route when no MX host resolves (MX pointing at names that do not exist)', async () => {
    const { route } = routeOf('dangling.example', {
      'dangling.example': { MX: [[10, 'mx.gone.example']], A: ['93.184.215.40'] },
    });
    expect(await route).toEqual({ kind: 'no_mail_route' });
  });

  it('drops an MX host without addresses and keeps the others', async () => {
    const { route } = routeOf('half.example', {
      'half.example': {
        MX: [
          [5, 'mx.gone.example'],
          [10, 'mx.half.example'],
        ],
      },
      'mx.half.example': { A: ['93.184.215.50'] },
    });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.half.example', preference: 10, ips: ['93.184.215.50'] }],
    });
  });

  it('resolves a host listed twice once, at its best preference', async () => {
    const { route, queries } = routeOf('twice.example', {
      'twice.example': {
        MX: [
          [30, 'mx.twice.example'],
          [10, 'mx.twice.example'],
        ],
      },
      'mx.twice.example': { A: ['93.184.215.60'] },
    });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.twice.example', preference: 10, ips: ['93.184.215.60'] }],
    });
    expect(queries.filter((query) => query.name === 'mx.twice.example')).toHaveLength(2); // one A, one AAAA
  });

  it('resolves at most 10 MX hosts', async () => {
    const zone: Record<string, { MX?: [number, string][]; A?: string[] }> = { 'many.example': { MX: [] } };
    for (let index = 0; index < 15; index++) {
      zone['many.example']?.MX?.push([index, `mx${index}.many.example`]);
      zone[`mx${index}.many.example`] = { A: [`93.184.216.${index}`] };
    }
    const { route, queries } = routeOf('many.example', zone);
    const outcome = await route;
    expect(outcome.kind === 'mx' && outcome.mx.map((host) => host.host)).toEqual(
      Array.from({ length: 10 }, (_, index) => `mx${index}.many.example`),
    );
    expect(queries.filter((query) => query.type === 'A')).toHaveLength(10);
  });

  it('keeps at most 16 addresses per host, as the prober contract allows', async () => {
    const addresses = Array.from({ length: 20 }, (_, index) => `93.184.217.${index}`);
    const { route } = routeOf('wide.example', {
      'wide.example': { MX: [[10, 'mx.wide.example']] },
      'mx.wide.example': { A: addresses, AAAA: ['2606:2800:220:1::1'] },
    });
    const outcome = await route;
    expect(outcome.kind === 'mx' && outcome.mx[0]?.ips).toEqual(addresses.slice(0, 16));
  });
});

describe('resolveMailRoute without MX records: implicit MX (RFC 5321 §5.1)', () => {
  it('uses the domain A records as an MX of preference 0', async () => {
    const { route } = routeOf('bare.example', {
      'bare.example': { A: ['93.184.215.70'], AAAA: ['2606:2800:220:1::70'] },
    });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'A',
      mx: [{ host: 'bare.example', preference: 0, ips: ['93.184.215.70', '2606:2800:220:1::70'] }],
    });
  });

  it('uses the AAAA records when there is no A record', async () => {
    const { route } = routeOf('v6only.example', { 'v6only.example': { AAAA: ['2606:2800:220:1::80'] } });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'AAAA',
      mx: [{ host: 'v6only.example', preference: 0, ips: ['2606:2800:220:1::80'] }],
    });
  });

  it('answers no_mail_route when the domain has neither MX nor A/AAAA', async () => {
    const { route } = routeOf('empty.example', { 'empty.example': { TXT: [['v=spf1 -all']] } });
    expect(await route).toEqual({ kind: 'no_mail_route' });
  });

  it('answers unroutable when the domain itself is on a private address', async () => {
    const { route } = routeOf('intranet.example', { 'intranet.example': { A: ['192.168.1.10'] } });
    expect(await route).toEqual({
      kind: 'unroutable',
      mx: [{ host: 'intranet.example', preference: 0, ips: ['192.168.1.10'] }],
    });
  });
});

describe('resolveMailRoute and special-purpose addresses (RFC 6890)', () => {
  const loopbackZone: FakeZone = {
    'loopback.example': { MX: [[10, 'mx.loopback.example']] },
    'mx.loopback.example': { A: ['127.0.0.1'], AAAA: ['::1'] },
  };

  it('answers unroutable when every MX host is on loopback', async () => {
    const { route } = routeOf('loopback.example', loopbackZone);
    expect(await route).toEqual({
      kind: 'unroutable',
      mx: [{ host: 'mx.loopback.example', preference: 10, ips: ['127.0.0.1', '::1'] }],
    });
  });

  it('lets loopback through when the deployment allows private targets', async () => {
    const { route } = routeOf('loopback.example', loopbackZone, { allowPrivateTargets: true });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.loopback.example', preference: 10, ips: ['127.0.0.1', '::1'] }],
    });
  });

  it('keeps the public addresses of a host and drops private-only hosts beside public ones', async () => {
    const { route } = routeOf('partial.example', {
      'partial.example': {
        MX: [
          [10, 'mx1.partial.example'],
          [20, 'mx2.partial.example'],
        ],
      },
      'mx1.partial.example': { A: ['10.0.0.5', '93.184.215.90'], AAAA: ['fd00::5', '::ffff:192.168.0.1'] },
      'mx2.partial.example': { A: ['169.254.1.1'] },
    });
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx1.partial.example', preference: 10, ips: ['93.184.215.90'] }],
    });
  });
});

describe('resolveMailRoute and DNS failures', () => {
  it('answers error when the MX lookup gets SERVFAIL, naming the name, the type and why', async () => {
    const { route } = routeOf('broken.example', { 'broken.example': { servfail: true } });
    expect(await route).toEqual({
      kind: 'error',
      message:
        'MX lookup for broken.example failed (SERVFAIL): primary.example: answered SERVFAIL; secondary.example: answered SERVFAIL',
    });
  });

  it('answers error when an MX host address lookup gets SERVFAIL', async () => {
    const { route } = routeOf('badhost.example', {
      'badhost.example': {
        MX: [
          [10, 'mx1.badhost.example'],
          [20, 'mx2.badhost.example'],
        ],
      },
      'mx1.badhost.example': { A: ['93.184.215.100'] },
      'mx2.badhost.example': { servfail: true },
    });
    const outcome = await route;
    expect(outcome.kind).toBe('error');
    expect(outcome.kind === 'error' && outcome.message).toMatch(
      /^A lookup for mx2\.badhost\.example failed \(SERVFAIL\)/,
    );
  });

  it('answers error when every resolver times out', async () => {
    const { route } = routeOf(
      'example.com',
      { 'example.com': { A: ['93.184.215.14'] } },
      { behaviours: { [PRIMARY]: 'hang', [SECONDARY]: 'hang' } },
    );
    expect(await route).toEqual({
      kind: 'error',
      message:
        'MX lookup for example.com failed (TIMEOUT): primary.example: timed out after 50 ms; secondary.example: timed out after 50 ms',
    });
  });

  it('gets the route through the second resolver when the first sends garbage', async () => {
    const { route } = routeOf(
      'bare.example',
      { 'bare.example': { A: ['93.184.215.70'] } },
      { behaviours: { [PRIMARY]: 'garbage' } },
    );
    expect(await route).toEqual({
      kind: 'mx',
      dnsType: 'A',
      mx: [{ host: 'bare.example', preference: 0, ips: ['93.184.215.70'] }],
    });
  });
});
