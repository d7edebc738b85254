// probe() against the fake mail world (one fake MX per server behaviour, test/world) and, for
// what no sane server does, against hand-driven servers on 127.0.0.1. Every outcome is asserted
// exactly: reply code and enhanced code, or failure kind and stage.
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { MAX_EVIDENCE_BYTES, type ProbeReport, type ProbeRequest } from '@rcpt/shared/contract/prober';
import { evidenceBytes } from '@rcpt/shared/verify/evidence';
import { createProviderRegistry, type RcptTrust } from '@rcpt/shared/verify/providers';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { until } from '../../../test/eventually.ts';
import { type MailWorld, startWorld, ZONE } from '../../../test/world/index.ts';
import { startNetworkPath } from '../../../test/world/network-path.ts';
import { directEgress, socks5Egress } from '../egress/egress.ts';
import { egressLabel } from '../egress/egress-label.ts';
import { MxThrottle, ROUND_TRIP_SAMPLES, SESSION_GROWTH_EVERY } from '../throttle/mx-throttle.ts';
import { CatchAllCache } from './catch-all-cache.ts';
import { type ProbeDeps, probe, probeMany } from './probe.ts';

let world: MailWorld;
beforeAll(async () => {
  world = await startWorld({ greylistDelayMs: 200 });
});
afterAll(async () => {
  await world?.close();
});

const USER_UNKNOWN = { code: 550, enhanced: '5.1.1' };
const ACCEPTED = { code: 250, enhanced: null, text: 'Accepted' };

function deps(overrides: Partial<ProbeDeps> = {}): ProbeDeps {
  return {
    smtpPort: world.smtpPort,
    allowPrivateTargets: true,
    requireTls: false,
    timeouts: { connectMs: 2_000, bannerMs: 2_000, commandMs: 2_000 },
    throttle: new MxThrottle(),
    ...overrides,
  };
}

/** A probe of `localParts` at the world's domain for `behaviour`, whose one MX is that behaviour's server. */
function request(
  behaviour: string,
  localParts: string[],
  overrides: Partial<ProbeRequest> = {},
): ProbeRequest {
  const domain = world.domains[behaviour] ?? `${behaviour}.test`;
  return {
    emails: localParts.map((localPart) => `${localPart}@${domain}`),
    domain,
    mailFrom: 'verify@rcpt.test',
    helo: 'prober.rcpt.test',
    timeoutMs: 8_000,
    transcript: false,
    ...overrides,
    mx: overrides.mx ?? [mxOf(behaviour)],
  };
}

function mxOf(behaviour: string, preference = 10) {
  const server = world.mx[behaviour];
  if (!server) throw new Error(`the world has no ${behaviour} server`);
  return { host: `mx.${world.domains[behaviour] ?? `${behaviour}.test`}`, preference, ips: [server.ip] };
}

/** Each address as "code enhanced" or "failure-kind@stage [reply code]". */
function outcomes(report: ProbeReport): string[] {
  return report.perAddress.map((address) => {
    if (address.reply) return `${address.reply.code} ${address.reply.enhanced ?? '-'}`;
    const failure = address.failure;
    return `${failure?.kind}@${failure?.stage}${failure?.reply ? ` ${failure.reply.code}` : ''}`;
  });
}

describe('the behaviours of the mail world', () => {
  test('accept: a listed mailbox is 250, an unknown one 550 5.1.1, and the random address says not catch-all', async () => {
    const server = world.mx.accept!;
    server.resetStats();
    const report = await probe(request('accept', ['alice', 'nobody']), deps());
    expect(report.perAddress).toEqual([
      { email: 'alice@accept.test', reply: ACCEPTED, failure: null },
      {
        email: 'nobody@accept.test',
        reply: {
          ...USER_UNKNOWN,
          text: '<nobody@accept.test>: Recipient address rejected: User unknown in local recipient table',
        },
        failure: null,
      },
    ]);
    expect(report.catchAllReply).toMatchObject(USER_UNKNOWN);
    expect(report.session).toMatchObject({
      mxHost: 'mx.accept.test',
      mxIp: server.ip,
      tls: false,
      tlsError: null,
      smtputf8: false,
    });
    expect(report.session.transcript).toBeUndefined();
    const [alice, nobody, random] = server.received();
    expect([alice, nobody]).toEqual(['alice@accept.test', 'nobody@accept.test']);
    // 20 random lowercase letters and digits, of the same domain.
    expect(random).toMatch(/^[a-z0-9]{20}@accept\.test$/);
  });

  test('catchall: the random address is accepted too', async () => {
    const report = await probe(request('catchall', ['alice']), deps());
    expect(outcomes(report)).toEqual(['250 -']);
    expect(report.catchAllReply).toMatchObject({ code: 250 });
  });

  test.each([
    ['greylist', '450 4.2.0', 450, false],
    ['greylistMilter', '451 4.7.1', 451, false],
    ['full', '552 5.2.2', 550, true],
    ['disabled', '550 5.2.1', 550, true],
    ['rbl', '554 5.7.1', 554, false],
    ['policy', '550 5.7.1', 550, false],
  ])(
    '%s: RCPT gets %s; the made-up address, asked in the same group, is kept only when it lasts',
    async (behaviour, expected, catchAllCode, kept) => {
      const server = world.mx[behaviour]!;
      server.resetStats();
      const throttle = new MxThrottle();
      const catchAllCache = new CatchAllCache();
      const report = await probe(request(behaviour, ['alice']), deps({ throttle, catchAllCache }));
      expect(outcomes(report)).toEqual([expected]);
      // Its answer does not decide a verdict with nothing accepted (shared/verify/verdict.ts);
      // a deferral or a refusal of the client is no lasting answer for the domain.
      expect(report.catchAllReply?.code).toBe(catchAllCode);
      expect(catchAllCache.get(world.domains[behaviour]!) !== null).toBe(kept);
      expect(server.received()).toEqual([
        `alice@${world.domains[behaviour]}`,
        expect.stringMatching(new RegExp(`^[a-z0-9]{20}@${world.domains[behaviour]}$`)),
      ]);
      // Greylisting (postgrey's 450 4.2.0, milter-greylist's 451 4.7.1) and permanent refusals
      // are no reason to stay away from the host: the reply table says so (asksClientToSlowDown).
      expect(throttle.backoffs()).toEqual([]);
    },
  );

  test('banner421 alone: every address is rejected at banner with the 421, and the host is backed off', async () => {
    const throttle = new MxThrottle();
    const server = world.mx.banner421!;
    const report = await probe(request('banner421', ['alice', 'bob']), deps({ throttle }));
    const failure = {
      kind: 'rejected',
      stage: 'banner',
      reply: { code: 421, enhanced: '4.7.0', text: 'Service not available, closing transmission channel' },
      message: 'the server refused the session (421)',
    };
    expect(report.perAddress.map((address) => address.failure)).toEqual([failure, failure]);
    expect(report.session.mxHost).toBe('mx.banner421.test');
    expect(throttle.backoffs()).toEqual([
      {
        ip: server.ip,
        until: expect.any(Number),
        reason: '421 4.7.0 Service not available, closing transmission channel',
      },
    ]);
    // The next probe of that host fails fast, without a connection.
    const again = await probe(request('banner421', ['alice']), deps({ throttle }));
    expect(outcomes(again)).toEqual(['throttled@connect']);
    expect(again.session.mxHost).toBeNull();
  });

  test('banner421 with another MX: falls back to it', async () => {
    const report = await probe(
      request('banner421', ['alice', 'nobody'], { mx: [mxOf('banner421', 10), mxOf('accept', 20)] }),
      deps(),
    );
    expect(outcomes(report)).toEqual(['250 -', '550 5.1.1']);
    expect(report.session.mxHost).toBe('mx.accept.test');
  });

  test('tarpit: a timeout at banner after the banner step timeout', async () => {
    const report = await probe(
      request('tarpit', ['alice']),
      deps({ timeouts: { connectMs: 2_000, bannerMs: 300, commandMs: 2_000 } }),
    );
    expect(report.perAddress[0]?.failure).toEqual({
      kind: 'timeout',
      stage: 'banner',
      reply: null,
      message: 'no greeting within 300 ms',
    });
    expect(report.session.mxHost).toBe('mx.tarpit.test');
    expect(report.session.durationMs).toBeLessThan(8_000);
  });

  test('tarpit: the probe’s own timeoutMs ends it when the step timeouts are longer', async () => {
    const report = await probe(
      request('tarpit', ['alice', 'bob'], { timeoutMs: 400 }),
      deps({ timeouts: { bannerMs: 30_000 } }),
    );
    for (const address of report.perAddress) {
      expect(address.failure).toMatchObject({ kind: 'timeout', stage: 'banner', reply: null });
      expect(address.failure?.message).toMatch(/^the session exceeded its \d+ ms budget$/);
    }
    expect(report.session.durationMs).toBeLessThan(30_000);
  });

  test('starttls: the session runs over TLS and the self-signed certificate is recorded', async () => {
    const report = await probe(request('starttls', ['alice', 'nobody']), deps());
    expect(outcomes(report)).toEqual(['250 -', '550 5.1.1']);
    expect(report.session).toMatchObject({ tls: true, tlsError: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });

  test.each([false, true])('tlsrequired: works through STARTTLS (requireTls %s)', async (requireTls) => {
    const report = await probe(request('tlsrequired', ['alice', 'nobody']), deps({ requireTls }));
    expect(outcomes(report)).toEqual(['250 -', '550 5.1.1']);
    expect(report.session.tls).toBe(true);
  });

  test('requireTls and no STARTTLS offered: tls_failed at starttls', async () => {
    const report = await probe(request('accept', ['alice']), deps({ requireTls: true }));
    expect(report.perAddress[0]?.failure).toEqual({
      kind: 'tls_failed',
      stage: 'starttls',
      reply: null,
      message: 'the server does not offer STARTTLS',
    });
    expect(report.session).toMatchObject({ mxHost: 'mx.accept.test', tls: false });
  });

  test('requireTls: an MX without STARTTLS is passed over for one with it', async () => {
    const report = await probe(
      request('starttls', ['alice'], { mx: [mxOf('accept', 10), mxOf('starttls', 20)] }),
      deps({ requireTls: true }),
    );
    expect(outcomes(report)).toEqual(['250 -']);
    expect(report.session).toMatchObject({ mxHost: 'mx.starttls.test', tls: true });
  });

  test("connlimit with a throttle limit of 5: the 421s at banner lower the host's session limit, and every address is answered", async () => {
    const server = world.mx.connlimit!;
    const throttle = new MxThrottle({ perIpLimit: 5 });
    // Fewer addresses (one session each) than the calm sessions that grow the limit back by one,
    // so what is read below is the lowering, whenever in the run the refusal came.
    const addresses = SESSION_GROWTH_EVERY - 1;
    const reports = await Promise.all(
      Array.from({ length: addresses }, (_, index) =>
        probe(request('connlimit', [`user${index}`]), deps({ throttle })),
      ),
    );
    expect(reports.flatMap(outcomes)).toEqual(Array(addresses).fill('250 -'));
    // The server serves 3 at once: the prober lowered its limit towards that (a refusal that
    // races another connection counts that one too) and did not back off the host.
    expect(throttle.profile(server.ip).sessionLimit).toBeLessThan(5);
    expect(throttle.backoffs()).toEqual([]);
  });

  test('connlimit with a throttle limit of 5 and another MX: every address is answered', async () => {
    const throttle = new MxThrottle({ perIpLimit: 5 });
    const reports = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        probe(
          request('connlimit', [`user${index}`], { mx: [mxOf('connlimit', 10), mxOf('bulk', 20)] }),
          deps({ throttle }),
        ),
      ),
    );
    expect(reports.flatMap(outcomes)).toEqual(Array(12).fill('250 -'));
  });

  test('fallback: the primary refuses connections, the secondary answers', async () => {
    const primaryIp = ZONE['mx1.fallback.test']?.A?.[0] ?? '';
    const secondaryIp = ZONE['mx2.fallback.test']?.A?.[0] ?? '';
    expect(secondaryIp).toBe(world.mx.fallbackSecondary?.ip);
    const report = await probe(
      request('fallback', ['alice', 'nobody'], {
        // Listed out of order on purpose: preference decides (RFC 5321 §5.1).
        mx: [
          { host: 'mx2.fallback.test', preference: 20, ips: [secondaryIp] },
          { host: 'mx1.fallback.test', preference: 10, ips: [primaryIp] },
        ],
        transcript: true,
      }),
      deps(),
    );
    expect(outcomes(report)).toEqual(['250 -', '550 5.1.1']);
    expect(report.session).toMatchObject({ mxHost: 'mx2.fallback.test', mxIp: secondaryIp });
    const transcript = report.session.transcript ?? [];
    expect(transcript[0]).toBe(`* connecting to mx1.fallback.test [${primaryIp}]:${world.smtpPort}`);
    expect(transcript[1]).toMatch(/^\* connection_failed at connect: ECONNREFUSED/);
    expect(transcript).toContain(`* connecting to mx2.fallback.test [${secondaryIp}]:${world.smtpPort}`);
  });

  test('fallback without the secondary: connection_failed at connect, no host reached', async () => {
    const primaryIp = ZONE['mx1.fallback.test']?.A?.[0] ?? '';
    const report = await probe(
      request('fallback', ['alice'], {
        mx: [{ host: 'mx1.fallback.test', preference: 10, ips: [primaryIp] }],
      }),
      deps(),
    );
    expect(report.perAddress[0]?.failure).toMatchObject({
      kind: 'connection_failed',
      stage: 'connect',
      reply: null,
    });
    expect(report.session.mxHost).toBeNull();
  });

  test('utf8: an internationalised address is asked with SMTPUTF8', async () => {
    const server = world.mx.utf8!;
    server.resetStats();
    const report = await probe(request('utf8', ['jürgen', 'alice']), deps());
    expect(outcomes(report)).toEqual(['250 -', '250 -']);
    expect(report.session.smtputf8).toBe(true);
    expect(server.received().slice(0, 2)).toEqual(['jürgen@utf8.test', 'alice@utf8.test']);
  });

  test('accept (no SMTPUTF8): the internationalised address is smtputf8_unsupported, the others are still asked', async () => {
    const server = world.mx.accept!;
    server.resetStats();
    const report = await probe(request('accept', ['alice', 'jürgen', 'nobody']), deps());
    expect(outcomes(report)).toEqual(['250 -', 'smtputf8_unsupported@mail', '550 5.1.1']);
    expect(server.received().slice(0, 2)).toEqual(['alice@accept.test', 'nobody@accept.test']);
    expect(server.received().some((address) => address.startsWith('jürgen'))).toBe(false);
  });
});

describe('what the probe asks and shows', () => {
  test('the transcript is only there when asked, and then shows the real and the random address', async () => {
    const report = await probe(
      request('accept', ['alice'], { transcript: true }),
      deps({ randomLocalPart: () => 'randomlocalpart0001' }),
    );
    expect(report.catchAllReply).toMatchObject(USER_UNKNOWN);
    const transcript = report.session.transcript ?? [];
    // One group (RFC 2920): the real address, the made-up one after it, and QUIT, then the
    // replies in the same order.
    const mail = transcript.indexOf('C: MAIL FROM:<verify@rcpt.test>');
    expect(transcript.slice(mail, mail + 8)).toEqual([
      'C: MAIL FROM:<verify@rcpt.test>',
      'C: RCPT TO:<alice@accept.test>',
      'C: RCPT TO:<randomlocalpart0001@accept.test>',
      'C: QUIT',
      expect.stringMatching(/^S: 250 /),
      expect.stringMatching(/^S: 250 /),
      expect.stringMatching(/^S: 550 5\.1\.1 <randomlocalpart0001@accept\.test>/),
      expect.stringMatching(/^S: 221 /),
    ]);
    expect(transcript).toHaveLength(mail + 8);
  });

  test('a probe that runs out while waiting for a session slot: timeout at connect', async () => {
    const server = world.mx.accept!;
    const throttle = new MxThrottle({ perIpLimit: 1 });
    const held = await throttle.acquire(server.ip);
    const report = await probe(request('accept', ['alice'], { timeoutMs: 200 }), deps({ throttle }));
    held();
    expect(report.perAddress[0]?.failure).toEqual({
      kind: 'timeout',
      stage: 'connect',
      reply: null,
      message: 'the probe ran out of its 200 ms waiting for a session slot',
    });
    expect(throttle.waiting()).toBe(0);
  });

  test('an address of another domain is refused by the guard', async () => {
    const report = await probe(
      { ...request('accept', ['alice']), emails: ['alice@accept.test', 'bob@other.test'] },
      deps(),
    );
    expect(outcomes(report)).toEqual(['250 -', 'target_refused@guard']);
  });

  test.each<[RcptTrust, string]>([
    ['accepts_everything', 'Everything Inc. accepts every address at RCPT: a probe cannot tell'],
    ['unverifiable', 'Everything Inc. does not answer verification probes'],
  ])('a provider whose RCPT is %s is not probed at all', async (rcpt, message) => {
    const server = world.mx.accept!;
    server.resetStats();
    const providers = createProviderRegistry([
      {
        id: 'everything_inc',
        name: 'Everything Inc.',
        family: 'everything_inc',
        domains: [],
        mxSuffixes: ['accept.test'],
        rcpt,
      },
    ]);
    const report = await probe(request('accept', ['alice', 'nobody']), deps({ providers }));
    expect(report.perAddress.map((address) => address.failure)).toEqual(
      Array(2).fill({ kind: 'provider_unverifiable', stage: 'guard', reply: null, message }),
    );
    expect(report.session.mxHost).toBeNull();
    expect(server.received()).toEqual([]);
  });

  test('probeMany answers every request, in order', async () => {
    const requests = ['alice', 'nobody', 'bob', 'ghost'].map((localPart) => request('bulk', [localPart]));
    const reports = await probeMany(requests, deps(), 2);
    expect(reports.map((report) => outcomes(report)[0])).toEqual([
      '250 -',
      '550 5.1.1',
      '250 -',
      '550 5.1.1',
    ]);
  });
});

// ——— Hand-driven servers for what the world's well-behaved servers never do ———

type Script = (socket: Socket, next: () => Promise<string | null>) => Promise<void>;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A server on 127.0.0.1 running `script` per connection; counts connections and commands. */
async function scriptedServer(script: Script) {
  const sockets = new Set<Socket>();
  const commands: string[] = [];
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
    const lines = createInterface({ input: socket, crlfDelay: Number.POSITIVE_INFINITY })[
      Symbol.asyncIterator
    ]();
    const next = async () => {
      try {
        const { value, done } = await lines.next();
        if (done) return null;
        commands.push(value);
        return value;
      } catch {
        return null;
      }
    };
    script(socket, next).catch(() => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port, commands, connections: () => connections };
}

/** Greeting and EHLO (without PIPELINING unless asked), then `rest`. */
function afterEhlo(rest: Script, extensions: string[] = []): Script {
  return async (socket, next) => {
    socket.write('220 mx.scripted.test ESMTP\r\n');
    await next();
    const lines = ['mx.scripted.test', ...extensions];
    socket.write(
      lines.map((text, index) => `250${index === lines.length - 1 ? ' ' : '-'}${text}\r\n`).join(''),
    );
    await rest(socket, next);
  };
}

/** Answers MAIL, RCPT (via `rcpt`), RSET and QUIT like a plain server. */
function dialogue(rcpt: (address: string, inTransaction: number) => string): Script {
  return async (socket, next) => {
    let inTransaction = 0;
    for (let line = await next(); line !== null; line = await next()) {
      if (line.startsWith('MAIL') || line === 'RSET') {
        inTransaction = 0;
        socket.write('250 2.0.0 Ok\r\n');
      } else if (line.startsWith('RCPT')) {
        inTransaction++;
        socket.write(`${rcpt(/<(.*)>/.exec(line)?.[1] ?? '', inTransaction)}\r\n`);
      } else if (line === 'QUIT') {
        socket.end('221 2.0.0 Bye\r\n');
        return;
      } else socket.write('502 5.5.2 Error\r\n');
    }
  };
}

function scriptedRequest(localParts: string[], overrides: Partial<ProbeRequest> = {}): ProbeRequest {
  return {
    emails: localParts.map((localPart) => `${localPart}@scripted.test`),
    domain: 'scripted.test',
    mx: [{ host: 'mx.scripted.test', preference: 10, ips: ['127.0.0.1'] }],
    mailFrom: 'verify@rcpt.test',
    helo: 'prober.rcpt.test',
    timeoutMs: 8_000,
    transcript: false,
    ...overrides,
  };
}

function scriptedDeps(port: number, overrides: Partial<ProbeDeps> = {}): ProbeDeps {
  return deps({ smtpPort: port, ...overrides });
}

describe('hostile inputs', () => {
  test('CR LF in a local part never reaches the wire; the other addresses are still asked', async () => {
    const { port, commands } = await scriptedServer(afterEhlo(dialogue(() => '250 2.1.5 Ok')));
    const report = await probe(
      { ...scriptedRequest(['alice']), emails: ['alice@scripted.test', 'x>\r\nDATA\r\n<y@scripted.test'] },
      scriptedDeps(port),
    );
    expect(outcomes(report)).toEqual(['250 2.1.5', 'target_refused@guard']);
    expect(report.perAddress[1]?.failure?.message).toBe('the address contains the control character U+000D');
    expect(commands.filter((line) => line.startsWith('RCPT'))).toEqual([
      'RCPT TO:<alice@scripted.test>',
      expect.stringMatching(/^RCPT TO:<[a-z0-9]{20}@scripted\.test>$/),
    ]);
    expect(commands).not.toContain('DATA');
  });

  test('NUL in the HELO name: every address refused, no connection made', async () => {
    const { port, connections } = await scriptedServer(afterEhlo(dialogue(() => '250 Ok')));
    const report = await probe(
      scriptedRequest(['alice', 'bob'], { helo: 'prober\u0000.rcpt.test' }),
      scriptedDeps(port),
    );
    expect(report.perAddress.map((address) => address.failure)).toEqual(
      Array(2).fill({
        kind: 'target_refused',
        stage: 'guard',
        reply: null,
        message: 'the HELO name contains the control character U+0000',
      }),
    );
    expect(connections()).toBe(0);
  });

  test('127.0.0.1 as MX without allowPrivateTargets: target_refused, no connection made', async () => {
    const { port, connections } = await scriptedServer(afterEhlo(dialogue(() => '250 Ok')));
    const report = await probe(
      scriptedRequest(['alice']),
      scriptedDeps(port, { allowPrivateTargets: false }),
    );
    expect(report.perAddress[0]?.failure).toEqual({
      kind: 'target_refused',
      stage: 'guard',
      reply: null,
      message:
        'mx.scripted.test: 127.0.0.1 is a private, loopback or link-local address (set ALLOW_PRIVATE_TARGETS to allow)',
    });
    expect(report.session.mxHost).toBeNull();
    expect(connections()).toBe(0);
  });

  test('a 10 MB reply line to RCPT: invalid_response at rcpt, and the process carries on', async () => {
    const { port } = await scriptedServer(
      afterEhlo(async (socket, next) => {
        await next();
        socket.write('250 2.1.0 Ok\r\n');
        await next();
        socket.write(`250 ${'x'.repeat(10 * 1024 * 1024)}\r\n`);
        await next();
      }),
    );
    const report = await probe(scriptedRequest(['alice']), scriptedDeps(port));
    expect(report.perAddress[0]?.failure).toEqual({
      kind: 'invalid_response',
      stage: 'rcpt',
      reply: null,
      message: 'a reply line longer than 4096 bytes',
    });
    expect(report.catchAllReply).toBeNull();
  });

  test('garbage instead of a reply to MAIL: invalid_response at mail', async () => {
    const { port } = await scriptedServer(
      afterEhlo(async (socket, next) => {
        await next();
        socket.write('\u0016\u0003\u0001 garbage that is no SMTP\r\n');
        await next();
      }),
    );
    const report = await probe(scriptedRequest(['alice', 'bob']), scriptedDeps(port));
    expect(outcomes(report)).toEqual(['invalid_response@mail', 'invalid_response@mail']);
  });

  test('a server closing mid-dialogue: answered addresses keep their replies, the rest are asked again in new sessions', async () => {
    const { port, connections } = await scriptedServer(
      afterEhlo(async (socket, next) => {
        await next();
        socket.write('250 2.1.0 Ok\r\n');
        await next();
        socket.write('250 2.1.5 Ok\r\n');
        await next();
        socket.destroy();
      }),
    );
    const report = await probe(scriptedRequest(['alice', 'bob', 'carol', 'dave']), scriptedDeps(port));
    // Each session answers one RCPT: alice, then bob, then carol; dave was cut short three
    // times and keeps the failure. The catch-all test, asked last in the first two, never got
    // its answer.
    expect(outcomes(report)).toEqual(['250 2.1.5', '250 2.1.5', '250 2.1.5', 'disconnected@rcpt']);
    expect(report.catchAllReply).toBeNull();
    expect(connections()).toBe(3);
    expect(report.session.mxHost).toBe('mx.scripted.test');
  });
});

describe('session handling', () => {
  test('a failed TLS handshake is retried once in plaintext, with the handshake error in tlsError', async () => {
    let attempt = 0;
    const { port, connections } = await scriptedServer(async (socket, next) => {
      attempt++;
      socket.write('220 mx.scripted.test ESMTP\r\n');
      await next();
      socket.write('250-mx.scripted.test\r\n250 STARTTLS\r\n');
      if (attempt === 1) {
        expect(await next()).toBe('STARTTLS');
        socket.write('220 2.0.0 Ready\r\n');
        socket.once('data', () => socket.end('not a TLS record\r\n'));
        return;
      }
      await dialogue(() => '250 2.1.5 Ok')(socket, next);
    });
    const report = await probe(scriptedRequest(['alice']), scriptedDeps(port));
    expect(outcomes(report)).toEqual(['250 2.1.5']);
    expect(report.session.tls).toBe(false);
    expect(report.session.tlsError).toMatch(/^TLS handshake failed: /);
    expect(connections()).toBe(2);
  });

  test('"452 too many recipients" defers the rest to a new transaction (RFC 5321 §4.5.3.1.10)', async () => {
    const { port, commands } = await scriptedServer(
      afterEhlo(
        dialogue((address, inTransaction) =>
          inTransaction > 2
            ? '452 4.5.3 Error: too many recipients'
            : address.startsWith('nobody')
              ? '550 5.1.1 User unknown'
              : '250 2.1.5 Ok',
        ),
        ['PIPELINING'],
      ),
    );
    const report = await probe(scriptedRequest(['a1', 'a2', 'a3', 'nobody', 'a5']), scriptedDeps(port));
    expect(outcomes(report)).toEqual(['250 2.1.5', '250 2.1.5', '250 2.1.5', '550 5.1.1', '250 2.1.5']);
    // The first group (every address, the made-up one, QUIT) learns the limit; the next session
    // asks the rest two at a time: MAIL, then MAIL and RSET MAIL.
    expect(commands.filter((line) => line.startsWith('MAIL') || line === 'RSET')).toHaveLength(4);
    // The catch-all test found a fresh transaction with room.
    expect(report.catchAllReply).toMatchObject({ code: 250 });
  });

  test('a server that answers 452 to everything is not asked forever', async () => {
    const { port } = await scriptedServer(afterEhlo(dialogue(() => '452 4.5.3 Error: too many recipients')));
    const report = await probe(scriptedRequest(['a1', 'a2']), scriptedDeps(port));
    expect(outcomes(report)).toEqual(['452 4.5.3', '452 4.5.3']);
  });

  test('a domain in IDN form is asked as A-labels of a server without SMTPUTF8 (RFC 5890)', async () => {
    const { port, commands } = await scriptedServer(afterEhlo(dialogue(() => '250 2.1.5 Ok')));
    const report = await probe(
      { ...scriptedRequest([]), emails: ['alice@bücher.test'], domain: 'xn--bcher-kva.test' },
      scriptedDeps(port),
    );
    expect(outcomes(report)).toEqual(['250 2.1.5']);
    expect(report.perAddress[0]?.email).toBe('alice@bücher.test');
    expect(commands).toContain('RCPT TO:<alice@xn--bcher-kva.test>');
  });

  test('recipientsPerTransaction splits a batch into transactions with RSET between them', async () => {
    const { port, commands } = await scriptedServer(afterEhlo(dialogue(() => '250 2.1.5 Ok')));
    const report = await probe(
      scriptedRequest(['a1', 'a2', 'a3']),
      scriptedDeps(port, { recipientsPerTransaction: 2 }),
    );
    expect(outcomes(report)).toEqual(['250 2.1.5', '250 2.1.5', '250 2.1.5']);
    expect(commands.slice(1, 9)).toEqual([
      'MAIL FROM:<verify@rcpt.test>',
      'RCPT TO:<a1@scripted.test>',
      // The catch-all test ends the first group with room for it.
      expect.stringMatching(/^RCPT TO:<[a-z0-9]{20}@scripted\.test>$/),
      'RSET',
      'MAIL FROM:<verify@rcpt.test>',
      'RCPT TO:<a2@scripted.test>',
      'RCPT TO:<a3@scripted.test>',
      'QUIT',
    ]);
  });

  test.each([
    ['a distant host', 0, 50],
    ['a host next door', 1, 0],
  ])(
    // The host has read QUIT half a round trip after it left; our next connection reaches it a
    // round trip after that: the slot can go to the next session at once, if there is a round trip.
    '%s that answers promptly: while the 221 to QUIT is held, the session holds %i slots',
    async (_, slotsHeld, roundTripMs) => {
      // The 221 of the connection after those that measured the round trip waits until the test lets it go.
      let letByeGo = () => {};
      const byeHeld = new Promise<void>((resolve) => {
        letByeGo = resolve;
      });
      let connection = 0;
      const { port, commands } = await scriptedServer(
        afterEhlo(
          async (socket, next) => {
            const held = ++connection === ROUND_TRIP_SAMPLES + 1;
            for (let line = await next(); line !== null; line = await next()) {
              if (line === 'QUIT') {
                if (held) await byeHeld;
                socket.end('221 2.0.0 Bye\r\n');
                return;
              }
              socket.write('250 2.1.5 Ok\r\n');
            }
          },
          ['PIPELINING'],
        ),
      );
      const path =
        roundTripMs > 0
          ? await startNetworkPath({ ip: '127.0.0.1', serverPort: port, roundTripMs }, 0)
          : null;
      if (path) closers.push(() => path.close());
      const throttle = new MxThrottle({ perIpLimit: 1 });
      const ask = (localPart: string) =>
        probe(
          scriptedRequest([localPart], { evidence: true }),
          scriptedDeps(path?.port ?? port, { throttle }),
        );
      // Sessions that end calm: the host's round trip is known, and it is prompt.
      for (let index = 0; index < ROUND_TRIP_SAMPLES; index++) await ask(`a${index}`);
      const last = ask('last');
      await until(
        () => commands.filter((line) => line === 'QUIT').length === ROUND_TRIP_SAMPLES + 1,
        'the last QUIT',
      );
      expect(throttle.openSessions()).toBe(slotsHeld);
      letByeGo();
      const report = await last;
      expect(outcomes(report)).toEqual(['250 2.1.5']);
      // The report waited for the close: its evidence ends with the 221.
      expect(report.perAddress[0]?.evidence?.dialogue.at(-1)).toMatchObject({
        command: 'QUIT',
        reply: { code: 221 },
      });
      expect(throttle.openSessions()).toBe(0);
    },
  );

  test('a rate-limit deferral at RCPT (450 4.7.1 … too many) backs the host off; the next probe is throttled without connecting', async () => {
    const { port, connections } = await scriptedServer(
      afterEhlo(dialogue(() => '450 4.7.1 Try again later, too many probes')),
    );
    const throttle = new MxThrottle();
    const report = await probe(scriptedRequest(['alice']), scriptedDeps(port, { throttle }));
    expect(outcomes(report)).toEqual(['450 4.7.1']);
    expect(throttle.backoffs()).toMatchObject([
      { ip: '127.0.0.1', reason: '450 4.7.1 Try again later, too many probes' },
    ]);
    const again = await probe(scriptedRequest(['bob']), scriptedDeps(port, { throttle }));
    expect(again.perAddress[0]?.failure).toMatchObject({ kind: 'throttled', stage: 'connect' });
    expect(connections()).toBe(1);
  });

  test('a refused MAIL FROM is final for every address: no fallback to a backup MX', async () => {
    const { port, connections } = await scriptedServer(
      afterEhlo(async (socket, next) => {
        await next();
        socket.write('550 5.7.1 Sender address rejected: SPF fail\r\n');
        if ((await next()) === 'QUIT') socket.end('221 2.0.0 Bye\r\n');
      }),
    );
    const report = await probe(
      scriptedRequest(['alice', 'bob'], {
        mx: [
          { host: 'mx.scripted.test', preference: 10, ips: ['127.0.0.1'] },
          { host: 'backup.scripted.test', preference: 20, ips: ['127.0.0.2'] },
        ],
      }),
      scriptedDeps(port),
    );
    expect(outcomes(report)).toEqual(['rejected@mail 550', 'rejected@mail 550']);
    expect(connections()).toBe(1);
  });
});

// The evidence each address's outcome carries (docs/verdicts.md, "Evidence"): one session asks
// several customers' addresses and the catch-all test's made-up one from rcpt's MAIL FROM, and
// the servers echo the addresses they refuse, as Postfix does. Each address's evidence must show
// only that address in clear.
const CATCH_ALL_LOCAL_PART = 'madeup7q2w9e4r1t8y5u';
const EVIDENCE = { evidence: true };

function evidenceDeps(overrides: Partial<ProbeDeps> = {}): ProbeDeps {
  return deps({ randomLocalPart: () => CATCH_ALL_LOCAL_PART, region: 'eu', ...overrides });
}

describe("evidence names rcpt's egress by its label only", () => {
  test('a server echoing the client address and refusing it by a block list shows the label, never the address or HELO name', async () => {
    const { port } = await scriptedServer(async (socket, next) => {
      socket.write('220 mx.scripted.test ESMTP\r\n');
      const ehlo = await next();
      const client = socket.remoteAddress?.replace(/^::ffff:/, '');
      socket.write(`250 mx.scripted.test Hello ${ehlo?.slice(5)} [${client}]\r\n`);
      for (let line = await next(); line !== null; line = await next()) {
        if (line.startsWith('MAIL')) socket.write('250 2.1.0 Ok\r\n');
        else if (line.startsWith('RCPT')) {
          socket.write(
            `554 5.7.1 Service unavailable; Client host [${client}] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/${client}\r\n`,
          );
        } else if (line === 'QUIT') {
          socket.end('221 2.0.0 Bye\r\n');
          return;
        } else socket.write('250 2.0.0 Ok\r\n');
      }
    });
    const egress = directEgress('127.0.0.5', 'out1.example.net');
    const report = await probe(
      scriptedRequest(['alice'], { helo: 'out1.example.net', evidence: true }),
      scriptedDeps(port, { egress, region: 'eu', egressLabelKey: 'prober-token' }),
    );
    const evidence = report.perAddress[0]?.evidence;
    const label = egressLabel('127.0.0.5', 'eu', 'prober-token');
    expect(evidence?.egress).toBe(label);
    expect(evidence?.mxIp).toBe('127.0.0.1');
    const texts = JSON.stringify(evidence?.dialogue);
    expect(texts).toContain(`Client host [${label}] blocked`);
    expect(texts).toContain(`EHLO ${label}`);
    expect(JSON.stringify(evidence)).not.toMatch(/127\.0\.0\.5|out1\.example\.net/);
  });

  test("a proxy that cannot be reached is named by the label in the session's end", async () => {
    const egress = socks5Egress({ host: '127.0.0.9', port: 1, username: null, password: null });
    const report = await probe(
      scriptedRequest(['alice'], { evidence: true }),
      scriptedDeps(1, { egress, region: 'eu', egressLabelKey: 'prober-token' }),
    );
    const evidence = report.perAddress[0]?.evidence;
    const label = egressLabel(egress.id, 'eu', 'prober-token');
    expect(evidence?.ended).toContain(`through ${label}`);
    expect(JSON.stringify(evidence)).not.toMatch(/socks5:|127\.0\.0\.9/);
  });
});

describe('evidence from a shared session', () => {
  test('each address sees its own RCPT and reply, the session facts, and every other address masked', async () => {
    const report = await probe(request('starttls', ['alice', 'nobody', 'bob'], EVIDENCE), evidenceDeps());
    const [alice, nobody, bob] = report.perAddress;
    const evidence = nobody?.evidence;
    expect(evidence).toBeDefined();
    if (!evidence) return;
    expect(evidence.mxHost).toBe(`mx.${world.domains.starttls}`);
    expect(evidence.mxIp).toBe(world.mx.starttls?.ip);
    // The egress by its label, never its address (docs/verdicts.md, "Evidence").
    expect(evidence.egress).toMatch(/^eu-[0-9a-f]{6}$/);
    expect(evidence.region).toBe('eu');
    expect(evidence.tls).toEqual({
      version: expect.stringMatching(/^TLSv1\.[23]$/),
      cipher: expect.any(String),
      certificateVerified: false,
    });
    expect(evidence.ended).toBeNull();
    expect(Date.parse(evidence.startedAt)).toBeLessThanOrEqual(Date.now());
    const domain = world.domains.starttls;
    const commands = evidence.dialogue.map((step) => step.command);
    expect(commands).toEqual([
      null,
      // The HELO name is the egress address's PTR name: shown as the egress's label.
      `EHLO ${evidence.egress}`,
      'STARTTLS',
      `EHLO ${evidence.egress}`,
      'MAIL FROM:<***@rcpt.test>',
      `RCPT TO:<***@${domain}>`, // alice, who was asked first
      `RCPT TO:<nobody@${domain}>`,
      `RCPT TO:<***@${domain}>`, // bob
      `RCPT TO:<***@${domain}>`, // the catch-all test, in the same group
      'QUIT', // and QUIT: nothing is left to ask
    ]);
    const own = evidence.dialogue[6];
    expect(own?.reply).toEqual({
      code: 550,
      enhanced: '5.1.1',
      text: `<nobody@${domain}>: Recipient address rejected: User unknown in local recipient table`,
    });
    expect(evidence.dialogue[9]?.reply?.code).toBe(221);
    expect(evidence.dialogue[8]?.reply?.text).toBe(
      `<***@${domain}>: Recipient address rejected: User unknown in local recipient table`,
    );
    for (const step of evidence.dialogue) {
      expect(step.atMs).toBeGreaterThanOrEqual(0);
      if (step.reply) expect(step.tookMs).toBeGreaterThanOrEqual(0);
    }
    expect(alice?.evidence?.dialogue[5]?.command).toBe(`RCPT TO:<alice@${domain}>`);
    expect(bob?.evidence?.dialogue[7]?.command).toBe(`RCPT TO:<bob@${domain}>`);
  });

  test('no evidence unless the probe asks for it', async () => {
    const report = await probe(request('accept', ['alice']), evidenceDeps());
    expect(report.perAddress[0]?.evidence).toBeUndefined();
  });

  test('an address no session could ask carries the session that failed', async () => {
    const refused = request('accept', ['alice'], {
      ...EVIDENCE,
      mx: [{ host: 'mx.closed.test', preference: 10, ips: ['127.0.0.1'] }],
    });
    const report = await probe(refused, evidenceDeps({ smtpPort: 1 }));
    const evidence = report.perAddress[0]?.evidence;
    expect(evidence?.dialogue).toEqual([]);
    expect(evidence?.ended).toMatch(/^connection_failed at connect: ECONNREFUSED/);
  });

  test('fuzzed: in sessions shared by many customers, no address but its own appears unmasked', async () => {
    const localPart = fc.stringMatching(/^[a-z][a-z0-9]{9,14}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(localPart, { minLength: 2, maxLength: 25 }),
        fc.boolean(),
        async (parts, anyUser) => {
          // `user…` mailboxes exist: a catch-all test follows, and replies differ in kind.
          const localParts = anyUser ? parts.map((part, index) => (index % 2 ? `user${part}` : part)) : parts;
          const names = [...localParts, 'verify', CATCH_ALL_LOCAL_PART];
          fc.pre(
            names.every((name, index) => names.every((other, at) => at === index || !other.includes(name))),
          );
          const report = await probe(request('starttls', localParts, EVIDENCE), evidenceDeps());
          const everyone = [...report.perAddress.map((outcome) => outcome.email), 'verify@rcpt.test'];
          for (const outcome of report.perAddress) {
            const evidence = outcome.evidence;
            expect(evidence).toBeDefined();
            if (!evidence) continue;
            const shown = JSON.stringify(evidence).toLowerCase();
            expect(shown).toContain(`rcpt to:<${outcome.email.toLowerCase()}>`);
            for (const other of everyone) {
              if (other === outcome.email) continue;
              expect(shown).not.toContain(other.slice(0, other.indexOf('@')).toLowerCase());
            }
            expect(shown).not.toContain(CATCH_ALL_LOCAL_PART);
            expect(evidenceBytes(evidence)).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
          }
        },
      ),
      { numRuns: 15 },
    );
  });
});
