// The fake mail world, checked from the outside the way the prober and the edge will use it:
// raw SMTP over node:net/node:tls and DNS wire format over fetch. The reply texts are spelled
// out here rather than imported, so a change to what a server says fails a test.
import { Resolver } from 'node:dns/promises';
import { connect as connectTcp } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { until } from '../eventually.ts';
import { EXPECTED_VERDICTS } from './expected-verdicts.ts';
import { type MailWorld, startWorld, ZONE } from './index.ts';
import { type Reply, SmtpTestClient } from './smtp-test-client.ts';
import { companyHosts, MX_HOSTS, PROVIDER_HOSTS } from './zone.ts';

const GREYLIST_DELAY_MS = 400;

let world: MailWorld;
beforeAll(async () => {
  world = await startWorld({ greylistDelayMs: GREYLIST_DELAY_MS });
});
afterAll(async () => {
  await world?.close();
});

/** A session on `mx` up to RCPT: the RCPT replies, in order. */
async function rcptReplies(mxName: string, recipients: readonly string[]): Promise<Reply[]> {
  const mx = world.mx[mxName]!;
  const client = await SmtpTestClient.greeted(mx.ip, mx.port);
  expect((await client.command('EHLO probe.rcpt.test')).code).toBe(250);
  expect((await client.command('MAIL FROM:<probe@rcpt.test>')).code).toBe(250);
  const replies: Reply[] = [];
  for (const recipient of recipients) replies.push(await client.command(`RCPT TO:<${recipient}>`));
  await client.quit();
  return replies;
}

async function rcptReply(mxName: string, recipient: string): Promise<string> {
  const [reply] = await rcptReplies(mxName, [recipient]);
  return reply!.last;
}

/** Waits for a state of a server that has no event of its own (a count), within the test's time. */
const waitFor = (condition: () => boolean, what: string) => until(condition, what, 15_000);

describe('fake MX servers', () => {
  test('greet with their host name and advertise PIPELINING and SIZE, but not SMTPUTF8 or STARTTLS on accept', async () => {
    const mx = world.mx.accept!;
    const client = await SmtpTestClient.open(mx.ip, world.smtpPort);
    expect((await client.reply()).last).toBe('220 mx.accept.test ESMTP rcpt fake MX');
    const ehlo = await client.command('EHLO probe.rcpt.test');
    expect(ehlo.lines).toEqual(['250-mx.accept.test', '250-PIPELINING', '250-8BITMIME', '250 SIZE 36700160']);
    await client.quit();
  });

  test('every SMTP server greets with the host name its MX record gives', async () => {
    const greeters = Object.values(world.mx).filter((mx) => mx.name !== 'banner421' && mx.name !== 'tarpit');
    const greetings = await Promise.all(
      greeters.map(async (mx) => {
        const client = await SmtpTestClient.open(mx.ip, mx.port);
        const greeting = await client.reply();
        await client.quit();
        return greeting.last;
      }),
    );
    const companies = companyHosts(world.companyMx.length);
    const hostOf = (name: string) =>
      MX_HOSTS[name as keyof typeof MX_HOSTS] ??
      [...companies, ...PROVIDER_HOSTS].find((company) => company.name === name)?.host;
    expect(greetings).toEqual(greeters.map((mx) => `220 ${hostOf(mx.name)} ESMTP rcpt fake MX`));
    for (const mx of greeters) {
      const host = hostOf(mx.name) ?? '';
      expect(ZONE[host]?.A ?? companies.find((company) => company.host === host)?.ip).toEqual(
        ZONE[host] ? [mx.ip] : mx.ip,
      );
    }
  });

  test('share one port, each on its own loopback address', () => {
    const ips = Object.values(world.mx).map((mx) => mx.ip);
    expect(new Set(ips).size).toBe(ips.length);
    for (const mx of Object.values(world.mx)) {
      expect(mx.port).toBe(world.smtpPort);
      expect(mx.ip).toMatch(/^127\.0\.0\.\d+$/);
    }
    expect(Object.keys(world.mx).sort()).toEqual(
      [
        'accept',
        'banner421',
        'bulk',
        'catchall',
        'company1',
        'company2',
        'company3',
        'company4',
        'connlimit',
        'disabled',
        'exchange',
        'fallbackSecondary',
        'full',
        'gateway',
        'greylist',
        'greylistMilter',
        'onercpt',
        'policy',
        'postfix',
        'provider1',
        'provider2',
        'rbl',
        'slowgreylist',
        'starttls',
        'tarpit',
        'tenant',
        'tenantRelayDenied',
        'tlsrequired',
        'utf8',
      ].sort(),
    );
  });

  test('accept takes the listed mailboxes and user… and rejects the rest with 550 5.1.1', async () => {
    const accepted = [...world.mailboxes, 'user42', 'Alice'].map((local) => `${local}@accept.test`);
    const replies = await rcptReplies('accept', [...accepted, 'nobody@accept.test']);
    expect(replies.slice(0, -1).map((reply) => reply.last)).toEqual(accepted.map(() => '250 Accepted'));
    expect(replies.at(-1)?.last).toBe(
      '550 5.1.1 <nobody@accept.test>: Recipient address rejected: User unknown in local recipient table',
    );
    expect(world.mailboxes).toEqual(
      expect.arrayContaining(['alice', 'bob', 'carol', 'info', 'support', 'sales']),
    );
  });

  test('record the RCPT addresses they see, in order, until resetStats()', async () => {
    const mx = world.mx.policy!;
    mx.resetStats();
    await rcptReplies('policy', ['first@policy.test', 'second@policy.test']);
    expect(mx.received()).toEqual(['first@policy.test', 'second@policy.test']);
    mx.resetStats();
    expect(mx.received()).toEqual([]);
  });

  test('catchall accepts any recipient', async () => {
    expect(await rcptReply('catchall', 'x7f3k9q2@catchall.test')).toBe('250 Accepted');
  });

  test('the security gateway accepts any recipient of the domains behind it', async () => {
    const replies = await rcptReplies('gateway', ['x7f3k9q2@gatewayed.test', 'nobody@untenanted.test']);
    expect(replies.map((reply) => reply.code)).toEqual([250, 250]);
  });

  test("the tenant answers per mailbox, with Exchange Online's words for an unknown one", async () => {
    const [known, unknown] = await rcptReplies('tenant', ['alice@gatewayed.test', 'nobody@gatewayed.test']);
    expect(known?.code).toBe(250);
    expect(unknown?.last).toBe(
      '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
    );
  });

  test('the other tenant refuses a client that bypassed the gateway', async () => {
    expect(await rcptReply('tenantRelayDenied', 'alice@tenantrefuses.test')).toMatch(
      /^550 5\.7\.64 TenantAttribution; Relay Access Denied/,
    );
  });

  test('full answers 552 5.2.2 for mailboxes and 550 5.1.1 for the rest', async () => {
    const [full, unknown] = await rcptReplies('full', ['alice@full.test', 'nobody@full.test']);
    expect(full?.last).toBe('552 5.2.2 <alice@full.test>: Mailbox full');
    expect(unknown?.last).toBe(
      '550 5.1.1 <nobody@full.test>: Recipient address rejected: User unknown in local recipient table',
    );
  });

  test('disabled answers 550 5.2.1', async () => {
    expect(await rcptReply('disabled', 'alice@disabled.test')).toBe(
      '550 5.2.1 The email account that you tried to reach is disabled',
    );
  });

  test('rbl blocks the client at RCPT with 554 5.7.1 naming its address', async () => {
    expect(await rcptReply('rbl', 'alice@rbl.test')).toBe(
      '554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org',
    );
  });

  test('policy rejects at RCPT with 550 5.7.1', async () => {
    expect(await rcptReply('policy', 'alice@policy.test')).toBe(
      '550 5.7.1 Message rejected due to local policy',
    );
  });

  test('banner421 greets with 421 4.7.0 and hangs up', async () => {
    const mx = world.mx.banner421!;
    const client = await SmtpTestClient.open(mx.ip, mx.port);
    expect((await client.reply()).last).toBe('421 4.7.0 Service not available, closing transmission channel');
    await client.closed;
    await expect(client.reply()).rejects.toThrow(/closed/);
  });

  test('greylist defers a new triplet with 450 4.2.0 and takes it once the delay has passed', async () => {
    const client = await SmtpTestClient.greeted(world.mx.greylist!.ip, world.smtpPort);
    await client.command('EHLO probe.rcpt.test');
    await client.command('MAIL FROM:<probe@rcpt.test>');
    const first = await client.command('RCPT TO:<alice@greylist.test>');
    // The server noted the triplet before it answered, so the delay counts from no later than now.
    const deferredAt = performance.now();
    expect(first.last).toBe(
      '450 4.2.0 <alice@greylist.test>: Recipient address rejected: Greylisted, see http://postgrey.example/help/greylist.test.html',
    );
    expect((await client.command('RCPT TO:<alice@greylist.test>')).code).toBe(450);
    expect((await client.command('RCPT TO:<nobody@greylist.test>')).code).toBe(450);

    await delay(Math.ceil(deferredAt + GREYLIST_DELAY_MS - performance.now()) + 1);
    expect((await client.command('RCPT TO:<alice@greylist.test>')).last).toBe('250 Accepted');
    // After the wait the mailbox rule answers.
    expect((await client.command('RCPT TO:<nobody@greylist.test>')).last).toBe(
      '550 5.1.1 <nobody@greylist.test>: Recipient address rejected: User unknown in local recipient table',
    );
    // Another sender is another triplet: deferred afresh.
    await client.command('RSET');
    await client.command('MAIL FROM:<other@rcpt.test>');
    expect((await client.command('RCPT TO:<alice@greylist.test>')).code).toBe(450);
    await client.quit();
  });

  test('greylistMilter defers a new triplet as milter-greylist does: 451 4.7.1 with the time left', async () => {
    const client = await SmtpTestClient.greeted(world.mx.greylistMilter!.ip, world.smtpPort);
    await client.command('EHLO probe.rcpt.test');
    await client.command('MAIL FROM:<probe@rcpt.test>');
    const first = await client.command('RCPT TO:<alice@greylist451.test>');
    const deferredAt = performance.now();
    expect(first.last).toMatch(/^451 4\.7\.1 Greylisting in action, please come back in 00:00:0\d$/);
    await delay(Math.ceil(deferredAt + GREYLIST_DELAY_MS - performance.now()) + 1);
    expect((await client.command('RCPT TO:<alice@greylist451.test>')).last).toBe('250 Accepted');
    await client.quit();
  });

  test('starttls offers STARTTLS with a self-signed certificate and checks mailboxes over TLS', async () => {
    const mx = world.mx.starttls!;
    const client = await SmtpTestClient.greeted(mx.ip, mx.port);
    expect((await client.command('EHLO probe.rcpt.test')).lines).toContain('250-STARTTLS');
    const secure = await client.startTls('mx.starttls.test');
    const certificate = secure.getPeerX509Certificate();
    expect(certificate?.subject).toBe('CN=mx.starttls.test');
    expect(certificate?.checkIssued(certificate)).toBe(true);
    expect(certificate?.checkHost('mx.starttls.test')).toBe('mx.starttls.test');
    expect(secure.authorized).toBe(false); // self-signed: nobody vouches for it

    const ehlo = await client.command('EHLO probe.rcpt.test');
    expect(ehlo.lines.join('\n')).not.toContain('STARTTLS');
    await client.command('MAIL FROM:<probe@rcpt.test>');
    expect((await client.command('RCPT TO:<alice@starttls.test>')).last).toBe('250 Accepted');
    expect((await client.command('RCPT TO:<nobody@starttls.test>')).code).toBe(550);
    await client.quit();
  });

  test('tlsrequired answers 530 5.7.0 to MAIL and RCPT before STARTTLS and behaves like accept after it', async () => {
    const mx = world.mx.tlsrequired!;
    const client = await SmtpTestClient.greeted(mx.ip, mx.port);
    expect((await client.command('EHLO probe.rcpt.test')).lines).toContain('250-STARTTLS');
    expect((await client.command('MAIL FROM:<probe@rcpt.test>')).last).toBe(
      '530 5.7.0 Must issue a STARTTLS command first',
    );
    expect((await client.command('RCPT TO:<alice@tlsrequired.test>')).last).toBe(
      '530 5.7.0 Must issue a STARTTLS command first',
    );

    await client.startTls('mx.tlsrequired.test');
    expect((await client.command('EHLO probe.rcpt.test')).code).toBe(250);
    expect((await client.command('MAIL FROM:<probe@rcpt.test>')).last).toBe('250 Accepted');
    expect((await client.command('RCPT TO:<alice@tlsrequired.test>')).last).toBe('250 Accepted');
    expect((await client.command('RCPT TO:<nobody@tlsrequired.test>')).last).toBe(
      '550 5.1.1 <nobody@tlsrequired.test>: Recipient address rejected: User unknown in local recipient table',
    );
    await client.quit();
  });

  test('connlimit serves 3 sessions at once and refuses a 4th with 421 4.7.0 at the greeting', async () => {
    const mx = world.mx.connlimit!;
    await waitFor(() => mx.connections() === 0, 'connlimit to be idle');
    mx.resetStats();
    const sessions = await Promise.all([1, 2, 3].map(() => SmtpTestClient.greeted(mx.ip, mx.port)));

    const fourth = await SmtpTestClient.open(mx.ip, mx.port);
    expect((await fourth.reply()).last).toBe('421 4.7.0 Too many concurrent connections');
    await fourth.closed;
    expect(mx.maxConcurrent()).toBe(4);

    // Once one of the three has left, a new session is served, and it behaves like accept.
    await sessions[0]?.quit();
    await waitFor(() => mx.connections() === 2, 'the closed sessions to leave connlimit');
    const next = await SmtpTestClient.greeted(mx.ip, mx.port);
    await next.command('EHLO probe.rcpt.test');
    await next.command('MAIL FROM:<probe@rcpt.test>');
    expect((await next.command('RCPT TO:<alice@connlimit.test>')).last).toBe('250 Accepted');
    expect((await next.command('RCPT TO:<nobody@connlimit.test>')).code).toBe(550);
    await Promise.all([next, ...sessions.slice(1)].map((session) => session?.quit()));
  });

  test('fallback: the preference 10 host refuses connections, the preference 20 host accepts', async () => {
    const mx = await resolve('GET', 'fallback.test', 'MX');
    const hosts = mx.answers
      .map((answer) => answer.data as Required<dnsPacket.MxData>)
      .sort((a, b) => a.preference - b.preference)
      .map((record) => record.exchange);
    expect(hosts).toEqual(['mx1.fallback.test', 'mx2.fallback.test']);
    const [primaryIp, secondaryIp] = await Promise.all(
      hosts.map(async (host) => (await resolve('GET', host, 'A')).answers[0]?.data as string),
    );

    const refused = await new Promise<NodeJS.ErrnoException>((resolveError, reject) => {
      const socket = connectTcp({ host: primaryIp!, port: world.smtpPort });
      socket.once('connect', () => reject(new Error('the primary accepted a connection')));
      socket.once('error', resolveError);
    });
    expect(refused.code).toBe('ECONNREFUSED');

    expect(secondaryIp).toBe(world.mx.fallbackSecondary!.ip);
    const [alice, nobody] = await rcptReplies('fallbackSecondary', [
      'alice@fallback.test',
      'nobody@fallback.test',
    ]);
    expect(alice?.last).toBe('250 Accepted');
    expect(nobody?.code).toBe(550);
  });

  test('utf8 advertises SMTPUTF8 and accepts a UTF-8 recipient of a SMTPUTF8 transaction', async () => {
    const mx = world.mx.utf8!;
    const client = await SmtpTestClient.greeted(mx.ip, mx.port);
    expect((await client.command('EHLO probe.rcpt.test')).lines).toContain('250-SMTPUTF8');
    expect((await client.command('MAIL FROM:<probe@rcpt.test> SMTPUTF8')).last).toBe('250 Accepted');
    expect((await client.command('RCPT TO:<jörg@utf8.test>')).last).toBe('250 Accepted');
    expect((await client.command('RCPT TO:<x7f3k9q2@utf8.test>')).last).toBe('250 Accepted');
    await client.quit();
  });

  test('accept, without SMTPUTF8, refuses the SMTPUTF8 parameter and UTF-8 addresses', async () => {
    const mx = world.mx.accept!;
    const client = await SmtpTestClient.greeted(mx.ip, mx.port);
    await client.command('EHLO probe.rcpt.test');
    expect((await client.command('MAIL FROM:<probe@rcpt.test> SMTPUTF8')).last).toBe(
      '555 5.5.4 Unsupported option: SMTPUTF8',
    );
    expect((await client.command('MAIL FROM:<probe@rcpt.test>')).code).toBe(250);
    expect((await client.command('RCPT TO:<jörg@accept.test>')).last).toBe(
      '553 5.6.7 <jörg@accept.test>: non-ASCII address requires SMTPUTF8',
    );
    await client.quit();
  });

  test('mailinator.com routes to a server that accepts anything', async () => {
    const mx = await resolve('POST', 'mailinator.com', 'MX');
    expect(mx.answers).toHaveLength(1);
    const host = (mx.answers[0]!.data as dnsPacket.MxData).exchange;
    const a = await resolve('POST', host, 'A');
    expect(a.answers.map((answer) => answer.data)).toEqual([world.mx.catchall!.ip]);
    expect(await rcptReply('catchall', 'x7f3k9q2@mailinator.com')).toBe('250 Accepted');
  });

  test('bulk answers a pipelined burst in order and takes many connections at once', async () => {
    const mx = world.mx.bulk!;
    mx.resetStats();
    const recipients = Array.from({ length: 400 }, (_, index) =>
      index % 4 === 3 ? `nobody${index}@bulk-07.test` : `user${index}@bulk-07.test`,
    );
    const client = await SmtpTestClient.greeted(mx.ip, mx.port);
    await client.command('EHLO probe.rcpt.test');
    client.write('MAIL FROM:<probe@rcpt.test>', ...recipients.map((recipient) => `RCPT TO:<${recipient}>`));
    expect((await client.reply()).code).toBe(250);
    const codes: number[] = [];
    for (const _ of recipients) codes.push((await client.reply()).code);
    expect(codes).toEqual(recipients.map((recipient) => (recipient.startsWith('user') ? 250 : 550)));
    expect(mx.received()).toEqual(recipients);
    await client.quit();

    const many = await Promise.all(Array.from({ length: 30 }, () => SmtpTestClient.greeted(mx.ip, mx.port)));
    expect(mx.maxConcurrent()).toBeGreaterThanOrEqual(30);
    await Promise.all(many.map((session) => session.quit()));
  });
});

/** A DoH answer, reduced to what the tests look at (the dns-packet types lack rcode). */
interface Resolution {
  rcode: string;
  answers: { type: string; name: string; ttl: number | undefined; data: unknown }[];
  additionalTypes: string[];
}

/** Asks the world's DoH stub, checking the envelope every answer must have: id, QR, RD, RA, question. */
async function resolve(
  method: 'GET' | 'POST',
  name: string,
  type: dnsPacket.RecordType,
  extra: Partial<dnsPacket.Packet> = {},
): Promise<Resolution> {
  const id = Math.floor(Math.random() * 65_536);
  const query = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
    ...extra,
  });
  const response =
    method === 'GET'
      ? await fetch(`${world.dohUrl}?dns=${query.toString('base64url')}`, {
          headers: { accept: 'application/dns-message' },
        })
      : await fetch(world.dohUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/dns-message', accept: 'application/dns-message' },
          body: query,
        });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/dns-message');
  const packet = dnsPacket.decode(Buffer.from(await response.arrayBuffer())) as dnsPacket.DecodedPacket & {
    rcode: string;
    flag_qr: boolean;
    flag_rd: boolean;
    flag_ra: boolean;
  };
  expect(packet.id).toBe(id);
  expect([packet.flag_qr, packet.flag_rd, packet.flag_ra]).toEqual([true, true, true]);
  expect(packet.questions).toEqual([{ type, name, class: 'IN' }]);
  return {
    rcode: packet.rcode,
    answers: (packet.answers ?? []).map((record) => ({
      type: record.type,
      name: record.name,
      ttl: 'ttl' in record ? record.ttl : undefined,
      data: 'data' in record ? record.data : undefined,
    })),
    additionalTypes: (packet.additionals ?? []).map((record) => record.type),
  };
}

describe.each(['GET', 'POST'] as const)('DoH stub over %s', (method) => {
  test('MX of a mail domain, with TTL 300', async () => {
    const answer = await resolve(method, 'accept.test', 'MX');
    expect(answer.rcode).toBe('NOERROR');
    expect(answer.answers).toEqual([
      { type: 'MX', name: 'accept.test', ttl: 300, data: { preference: 10, exchange: 'mx.accept.test' } },
    ]);
  });

  test("a gateway domain's tenant signals: SPF include and verification TXT, autodiscover CNAME", async () => {
    const txt = await resolve(method, 'gatewayed.test', 'TXT');
    expect(txt.answers.map((record) => String(record.data))).toEqual([
      'v=spf1 include:spf.protection.outlook.com -all',
      'MS=ms48213377',
    ]);
    const cname = await resolve(method, 'autodiscover.gatewayed.test', 'CNAME');
    expect(cname.answers).toEqual([
      { type: 'CNAME', name: 'autodiscover.gatewayed.test', ttl: 300, data: 'autodiscover.outlook.com' },
    ]);
  });

  test('A of an MX host', async () => {
    const answer = await resolve(method, 'mx.accept.test', 'A');
    expect(answer.answers.map((record) => record.data)).toEqual([world.mx.accept!.ip]);
  });

  test('null MX (RFC 7505)', async () => {
    const answer = await resolve(method, 'nullmx.test', 'MX');
    expect(answer.rcode).toBe('NOERROR');
    expect(answer.answers.map((record) => record.data)).toEqual([{ preference: 0, exchange: '.' }]);
  });

  test('implicit MX: no MX, an A record of the accept server', async () => {
    const mx = await resolve(method, 'implicit.test', 'MX');
    expect(mx.rcode).toBe('NOERROR');
    expect(mx.answers).toEqual([]);
    const a = await resolve(method, 'implicit.test', 'A');
    expect(a.answers.map((record) => record.data)).toEqual([world.mx.accept!.ip]);
  });

  test('AAAA only', async () => {
    const aaaa = await resolve(method, 'ipv6.test', 'AAAA');
    expect(aaaa.answers.map((record) => [record.type, record.data])).toEqual([['AAAA', '::1']]);
    expect((await resolve(method, 'ipv6.test', 'A')).answers).toEqual([]);
    expect((await resolve(method, 'ipv6.test', 'MX')).answers).toEqual([]);
  });

  test('NODATA for a name without mail records', async () => {
    for (const type of ['MX', 'A', 'AAAA'] as const) {
      const answer = await resolve(method, 'nomail.test', type);
      expect(answer.rcode).toBe('NOERROR');
      expect(answer.answers).toEqual([]);
    }
    const txt = await resolve(method, 'nomail.test', 'TXT');
    expect(txt.answers.map((record) => record.data)).toEqual([[Buffer.from('v=spf1 -all')]]);
  });

  test('NXDOMAIN for names outside the zone', async () => {
    for (const name of ['nonexistent.test', 'gmial.com', 'www.accept.test']) {
      const answer = await resolve(method, name, 'MX');
      expect(answer.rcode).toBe('NXDOMAIN');
      expect(answer.answers).toEqual([]);
    }
  });

  test('NODATA, not NXDOMAIN, for an empty non-terminal', async () => {
    expect((await resolve(method, 'fallback.test', 'A')).rcode).toBe('NOERROR');
    expect((await resolve(method, 'test', 'MX')).rcode).toBe('NOERROR');
  });

  test('SERVFAIL for servfail.test', async () => {
    const answer = await resolve(method, 'servfail.test', 'MX');
    expect(answer.rcode).toBe('SERVFAIL');
    expect(answer.answers).toEqual([]);
  });

  test('names are case-insensitive and echoed as asked', async () => {
    const answer = await resolve(method, 'MX.Accept.TEST', 'A');
    expect(answer.answers).toMatchObject([{ name: 'MX.Accept.TEST', data: world.mx.accept!.ip }]);
  });

  test('bulk domains bulk-01 … bulk-50 route to the bulk server', async () => {
    for (const name of ['bulk-01.test', 'bulk-50.test']) {
      const answer = await resolve(method, name, 'MX');
      expect(answer.answers.map((record) => record.data)).toEqual([
        { preference: 10, exchange: 'mx.bulk.test' },
      ]);
    }
    expect((await resolve(method, 'bulk-51.test', 'MX')).rcode).toBe('NXDOMAIN');
  });

  test('EDNS: an OPT record in the query gets one in the answer', async () => {
    const answer = await resolve(method, 'accept.test', 'MX', {
      additionals: [
        {
          type: 'OPT',
          name: '.',
          udpPayloadSize: 4096,
          extendedRcode: 0,
          ednsVersion: 0,
          flags: 0,
          flag_do: false,
          options: [],
        },
      ],
    });
    expect(answer.additionalTypes).toEqual(['OPT']);
  });
});

describe('DoH stub HTTP', () => {
  test('counts the queries it answered', async () => {
    world.doh.resetStats();
    await resolve('GET', 'accept.test', 'MX');
    await resolve('POST', 'nonexistent.test', 'MX');
    expect(world.doh.queries()).toBe(2);
  });

  test('400 on a query that is not a DNS message', async () => {
    const garbage = [
      `${world.dohUrl}?dns=!!!`,
      `${world.dohUrl}?dns=AAAA`,
      `${world.dohUrl}?other=1`,
      // A DNS response, not a query.
      `${world.dohUrl}?dns=${dnsPacket.encode({ type: 'response', id: 1, questions: [{ type: 'A', name: 'accept.test' }], answers: [] }).toString('base64url')}`,
    ];
    for (const url of garbage) expect((await fetch(url)).status, url).toBe(400);
    const post = await fetch(world.dohUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/dns-message' },
      body: Buffer.from('definitely not DNS'),
    });
    expect(post.status).toBe(400);
  });

  test('415 for another media type, 405 for another method, 404 for another path', async () => {
    const query = dnsPacket.encode({ type: 'query', id: 0, questions: [{ type: 'A', name: 'accept.test' }] });
    const wrongType = await fetch(world.dohUrl, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: query,
    });
    expect(wrongType.status).toBe(415);
    const put = await fetch(world.dohUrl, { method: 'PUT', body: query });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    const elsewhere = await fetch(world.dohUrl.replace('/dns-query', '/resolve'));
    expect(elsewhere.status).toBe(404);
  });
});

describe('a domain whose owner changes its DNS', () => {
  test('answers the new records at once, with the TTL the owner set, and NXDOMAIN once it is let go', async () => {
    const name = 'moving.test';
    expect((await resolve('GET', name, 'MX')).rcode).toBe('NXDOMAIN');
    world.setZone(name, { MX: [{ preference: 10, exchange: 'mx.accept.test' }], ttl: 1 });
    const url = `${world.dohUrl}?dns=${dnsPacket.encode({ type: 'query', id: 1, questions: [{ type: 'MX', name }] }).toString('base64url')}`;
    // RFC 8484 §5.1: the HTTP freshness lifetime is the answer's smallest TTL.
    expect((await fetch(url)).headers.get('cache-control')).toBe('max-age=1');
    expect((await resolve('POST', name, 'MX')).answers).toEqual([
      { type: 'MX', name, ttl: 1, data: { preference: 10, exchange: 'mx.accept.test' } },
    ]);
    world.setZone(name, { MX: [{ preference: 10, exchange: 'mx.disabled.test' }], ttl: 1 });
    expect((await resolve('GET', name, 'MX')).answers.map((record) => record.data)).toEqual([
      { preference: 10, exchange: 'mx.disabled.test' },
    ]);
    world.setZone(name, null);
    expect((await resolve('GET', name, 'MX')).rcode).toBe('NXDOMAIN');
  });
});

describe('zone and expectations', () => {
  test('every MX host of the zone has an A record on loopback', () => {
    for (const [name, entry] of Object.entries(ZONE)) {
      for (const mx of entry.MX ?? []) {
        if (mx.exchange === '.') continue;
        expect(ZONE[mx.exchange]?.A?.[0], `${name} → ${mx.exchange}`).toMatch(/^127\.0\.0\.\d+$/);
      }
    }
  });

  test('every expected verdict names a domain of the world', () => {
    const domains = new Set(Object.values(world.domains));
    for (const row of EXPECTED_VERDICTS) expect(domains.has(row.address.split('@')[1] ?? '')).toBe(true);
    for (const domain of Object.values(world.domains)) {
      expect(
        EXPECTED_VERDICTS.some((row) => row.address.endsWith(`@${domain}`)),
        domain,
      ).toBe(true);
    }
  });
});

describe('lifecycle', () => {
  test('close() frees both ports: a new world starts on them', async () => {
    const first = await startWorld();
    const { smtpPort } = first;
    const dohPort = Number(new URL(first.dohUrl).port);
    await first.close();

    const second = await startWorld({ smtpPort, dohPort, bulkDomains: 120 });
    try {
      expect(second.smtpPort).toBe(smtpPort);
      expect(second.dohUrl).toBe(`http://127.0.0.1:${dohPort}/dns-query`);
      const client = await SmtpTestClient.greeted(second.mx.accept!.ip, smtpPort);
      await client.quit();
      const query = dnsPacket.encode({
        type: 'query',
        id: 7,
        questions: [{ type: 'MX', name: 'bulk-120.test' }],
      });
      const answer = dnsPacket.decode(
        Buffer.from(await (await fetch(`${second.dohUrl}?dns=${query.toString('base64url')}`)).arrayBuffer()),
      );
      expect(answer.answers).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  test('a taken port fails the start and leaves nothing behind', async () => {
    await expect(startWorld({ smtpPort: world.smtpPort })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    const dohPort = Number(new URL(world.dohUrl).port);
    await expect(startWorld({ dohPort })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    // The servers the failed starts had opened are gone: their port can be taken again.
    const again = await startWorld();
    await again.close();
  });

  test('the tarpit never sends a byte, and close() drops it and every open session', async () => {
    const tarpitWorld = await startWorld();
    const tarpit = tarpitWorld.mx.tarpit!;
    const stuck = await SmtpTestClient.open(tarpit.ip, tarpitWorld.smtpPort);
    stuck.write('EHLO probe.rcpt.test');
    await waitFor(() => tarpit.connections() === 1, 'the tarpit to take the connection');

    const accept = tarpitWorld.mx.accept!;
    const idle = await SmtpTestClient.greeted(accept.ip, tarpitWorld.smtpPort);
    const tls = await SmtpTestClient.greeted(tarpitWorld.mx.starttls!.ip, tarpitWorld.smtpPort);
    await tls.command('EHLO probe.rcpt.test');
    await tls.startTls('mx.starttls.test');

    await tarpitWorld.close();
    await Promise.all([stuck.closed, idle.closed, tls.closed]);
    expect(stuck.bytesReceived).toBe(0);
    expect(tarpit.connections()).toBe(0);
    expect(accept.connections()).toBe(0);
  });
});

describe('plain DNS over UDP', () => {
  test('answers the system resolver from the same zone', async () => {
    const world = await startWorld();
    try {
      const resolver = new Resolver();
      resolver.setServers([world.dnsServer]);
      expect(await resolver.resolveMx('accept.test')).toEqual([{ exchange: 'mx.accept.test', priority: 10 }]);
      expect(await resolver.resolve4('mx.accept.test')).toEqual([world.mx.accept?.ip]);
      await expect(resolver.resolveMx('nonexistent.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    } finally {
      await world.close();
    }
  });
});

describe('block lists', () => {
  let listing: MailWorld;
  beforeAll(async () => {
    listing = await startWorld({
      companies: { domains: 4, hosts: 2, blocklisted: { clients: ['127.0.0.2'], hosts: [1] } },
      blocklistedAtProvider: ['127.0.0.2'],
    });
  });
  afterAll(async () => {
    await listing?.close();
  });

  /** The RCPT reply of one address, asked from the local address `from`. */
  async function rcptFrom(mx: string, from: string, address: string): Promise<string> {
    const server = listing.mx[mx];
    if (!server) throw new Error(`no MX ${mx}`);
    const client = await SmtpTestClient.open(server.ip, server.port, from);
    await client.reply();
    await client.command('EHLO rcpt.test');
    await client.command('MAIL FROM:<verify@rcpt.test>');
    const reply = await client.command(`RCPT TO:<${address}>`);
    await client.quit();
    return reply.last;
  }

  test("a listing host refuses the listed client with Postfix's block-list reply and serves the others", async () => {
    expect(await rcptFrom('company1', '127.0.0.2', 'user1@company-001.test')).toBe(
      '554 5.7.1 Service unavailable; Client host [127.0.0.2] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/127.0.0.2',
    );
    expect(await rcptFrom('company1', '127.0.0.1', 'user1@company-001.test')).toBe('250 Accepted');
    expect(await rcptFrom('company2', '127.0.0.2', 'user2@company-002.test')).toBe('250 Accepted');
  });

  test('the provider family lists the client at every MX host', async () => {
    for (const mx of ['provider1', 'provider2']) {
      expect(await rcptFrom(mx, '127.0.0.2', 'alice@fastmail-hosted-1.test')).toContain('blocked using');
      expect(await rcptFrom(mx, '127.0.0.3', 'alice@fastmail-hosted-1.test')).toBe('250 Accepted');
    }
  });
});
