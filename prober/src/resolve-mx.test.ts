import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import * as dnsPacket from 'dns-packet';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailRouteResolver, type MailRouteResolver, resolveMailRoute } from './resolve-mx.ts';

// A loopback DNS server over UDP answering from a fixed zone, so the system resolver path
// (c-ares, dns.setServers) is exercised for real.
type ZoneRecords = { MX?: Array<{ preference: number; exchange: string }>; A?: string[]; AAAA?: string[] };
const ZONE: Record<string, ZoneRecords | 'SERVFAIL'> = {
  'two-mx.test': {
    MX: [
      { preference: 20, exchange: 'mx2.two-mx.test' },
      { preference: 10, exchange: 'mx1.two-mx.test' },
    ],
  },
  'mx1.two-mx.test': { A: ['192.0.2.10'] },
  'mx2.two-mx.test': { AAAA: ['2001:db8::25'] },
  'implicit.test': { A: ['192.0.2.30'] },
  'implicit6.test': { AAAA: ['2001:db8::30'] },
  'null-mx.test': { MX: [{ preference: 0, exchange: '.' }] },
  'no-route.test': {},
  'dangling-mx.test': { MX: [{ preference: 10, exchange: 'nowhere.dangling-mx.test' }] },
  'private-mx.test': { MX: [{ preference: 10, exchange: 'mx.private-mx.test' }] },
  'mx.private-mx.test': { A: ['127.0.0.1'] },
  'broken.test': 'SERVFAIL',
  'mail.test': { MX: [{ preference: 10, exchange: 'mx.mail.test' }] },
  'mx.mail.test': { A: ['127.0.0.1'] },
};
const NXDOMAIN = 3;
const SERVFAIL = 2;

let server: Socket;
let resolver: MailRouteResolver;
let dnsServer: string;

beforeAll(async () => {
  server = createSocket('udp4');
  server.on('message', (message, peer) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    const records = ZONE[name];
    const answers: dnsPacket.Answer[] = [];
    let rcode = 0;
    if (records === 'SERVFAIL') rcode = SERVFAIL;
    else if (!records) rcode = NXDOMAIN;
    else if (question.type === 'MX') {
      for (const data of records.MX ?? []) answers.push({ type: 'MX', name, ttl: 60, data });
    } else if (question.type === 'A' || question.type === 'AAAA') {
      for (const data of records[question.type] ?? [])
        answers.push({ type: question.type, name, ttl: 60, data });
    }
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id ?? 0,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | rcode,
      questions: [question],
      answers,
    });
    server.send(response, peer.port, peer.address);
  });
  server.bind(0, '127.0.0.1');
  await once(server, 'listening');
  dnsServer = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  resolver = createMailRouteResolver([dnsServer]);
});

afterAll(() => {
  server.close();
});

describe('resolveMailRoute', () => {
  it('lists MX hosts best preference first, each with its A and AAAA addresses', async () => {
    expect(await resolveMailRoute('two-mx.test', resolver)).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [
        { host: 'mx1.two-mx.test', preference: 10, ips: ['192.0.2.10'] },
        { host: 'mx2.two-mx.test', preference: 20, ips: ['2001:db8::25'] },
      ],
    });
  });

  it.each([
    ['implicit.test', 'A', '192.0.2.30'],
    ['implicit6.test', 'AAAA', '2001:db8::30'],
  ])(
    'uses the domain itself as an implicit MX when it has no MX records (%s)',
    async (domain, dnsType, ip) => {
      expect(await resolveMailRoute(domain, resolver)).toEqual({
        kind: 'mx',
        dnsType,
        mx: [{ host: domain, preference: 0, ips: [ip] }],
      });
    },
  );

  it.each([
    ['null-mx.test', { kind: 'null_mx' }],
    ['no-route.test', { kind: 'no_mail_route' }],
    ['dangling-mx.test', { kind: 'no_mail_route' }],
    ['missing.test', { kind: 'nxdomain' }],
  ])('tells %s apart', async (domain, outcome) => {
    expect(await resolveMailRoute(domain, resolver)).toEqual(outcome);
  });

  it('reports a resolver failure as a DNS error, not as a missing domain', async () => {
    const outcome = await resolveMailRoute('broken.test', resolver);
    expect(outcome).toMatchObject({ kind: 'error', message: expect.stringContaining('broken.test') });
  });

  it('calls a route whose every address is off limits unroutable', async () => {
    const isUnroutable = (ip: string) => ip.startsWith('127.');
    expect(await resolveMailRoute('private-mx.test', resolver, { isUnroutable })).toEqual({
      kind: 'unroutable',
      mx: [{ host: 'mx.private-mx.test', preference: 10, ips: ['127.0.0.1'] }],
    });
    expect(await resolveMailRoute('two-mx.test', resolver, { isUnroutable })).toMatchObject({ kind: 'mx' });
  });
});

// ——— `rcpt-prober verify`, a real process: system-resolver path pointed at the loopback DNS
// above (DNS_SERVERS), SMTP to a loopback mail server that knows one mailbox.

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

describe('rcpt-prober verify', () => {
  let mailServer: SMTPServer;
  let smtpPort: number;

  beforeAll(async () => {
    mailServer = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onRcptTo(address, _session, callback) {
        if (address.address.toLowerCase() === 'alice@mail.test') return callback();
        callback(Object.assign(new Error('5.1.1 No such user here'), { responseCode: 550 }));
      },
    });
    mailServer.listen(0, '127.0.0.1');
    await once(mailServer.server, 'listening');
    smtpPort = (mailServer.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => mailServer.close(() => resolve()));
  });

  async function verify(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [CLI, 'verify', ...args], {
      env: {
        PATH: process.env.PATH,
        DNS_SERVERS: dnsServer,
        SMTP_PORT: String(smtpPort),
        ALLOW_PRIVATE_TARGETS: 'true',
        HELO_NAME: 'probe.rcpt.test',
        MAIL_FROM: 'verify@rcpt.test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    return { code, stdout, stderr };
  }

  it('says deliverable, as JSON, for a mailbox the server accepts, and exits 0', async () => {
    const { code, stdout } = await verify('alice@mail.test', '--json');
    const output = JSON.parse(stdout);
    expect(output.result).toMatchObject({
      email: 'alice@mail.test',
      status: 'deliverable',
      isDeliverable: true,
    });
    expect(output.dns).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.mail.test', preference: 10, ips: ['127.0.0.1'] }],
    });
    expect(output.probe.perAddress[0].reply.code).toBe(250);
    expect(output.probe.session.transcript).toBeUndefined();
    expect(code).toBe(0);
  });

  it('says undeliverable for a mailbox the server rejects, prints the transcript, and exits 1', async () => {
    const { code, stdout } = await verify('gone@mail.test', '--transcript');
    expect(stdout).toMatch(/^gone@mail\.test: undeliverable \/ mailbox_not_found/);
    expect(stdout).toContain('550 5.1.1 No such user here');
    expect(stdout).toContain('SMTP transcript:');
    expect(stdout).toMatch(/RCPT TO:<gone@mail\.test>/);
    expect(code).toBe(1);
  });

  it('exits 2 on a usage or configuration error', async () => {
    expect((await verify()).code).toBe(2);
    const badFlag = await verify('alice@mail.test', '--loud');
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("Unknown option '--loud'");
  });
});
