import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from './config.ts';

const TOKEN = 'rkp_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5';
const RUN_ENV = { EDGE_URL: 'https://rcpt.example.com', PROBER_TOKEN: TOKEN };

function problemsOf(env: Record<string, string>, mode: 'run' | 'verify' = 'run'): string[] {
  try {
    loadConfig(env, mode);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('fills in the defaults around the two required variables', () => {
    const config = loadConfig(RUN_ENV, 'run');
    expect(config).toEqual({
      edgeUrl: new URL('wss://rcpt.example.com/'),
      proberToken: TOKEN,
      region: 'default',
      capacity: 50,
      smtpPort: 25,
      allowPrivateTargets: false,
      requireTls: false,
      heloName: null,
      mailFrom: null,
      connectTimeoutMs: 10_000,
      commandTimeoutMs: 30_000,
      perMxConcurrency: 5,
      opsPort: 9464,
      opsHost: '127.0.0.1',
      logLevel: 'info',
      drainTimeoutMs: 30_000,
      dnsServers: [],
      egresses: [{ id: 'system', kind: 'direct', localAddress: null, helo: null }],
      egressHourlyBudget: 200,
      egressWarmUp: true,
      egressBlocklists: ['zen.spamhaus.org', 'b.barracudacentral.org', 'bl.spamcop.net'],
      egressHealthIntervalMs: 3_600_000,
      egressPort25CheckHost: null,
    });
  });

  it('reads the health check settings: blocklists, interval, port 25 target', () => {
    const config = loadConfig(
      {
        ...RUN_ENV,
        EGRESS_BLOCKLISTS: 'ZEN.spamhaus.org., dnsbl.example.org',
        EGRESS_HEALTH_INTERVAL_MS: '600000',
        EGRESS_PORT25_CHECK_HOST: 'mx.example.net:2525',
      },
      'run',
    );
    expect(config.egressBlocklists).toEqual(['zen.spamhaus.org', 'dnsbl.example.org']);
    expect(config.egressHealthIntervalMs).toBe(600_000);
    expect(config.egressPort25CheckHost).toEqual({ host: 'mx.example.net', port: 2525 });
    expect(loadConfig({ ...RUN_ENV, EGRESS_BLOCKLISTS: '' }, 'run').egressBlocklists).toEqual([]);
    expect(
      loadConfig({ ...RUN_ENV, EGRESS_PORT25_CHECK_HOST: '[2001:db8::25]' }, 'run').egressPort25CheckHost,
    ).toEqual({ host: '2001:db8::25', port: 25 });
    expect(() => loadConfig({ ...RUN_ENV, EGRESS_BLOCKLISTS: 'zen_spamhaus' }, 'run')).toThrow(
      /EGRESS_BLOCKLISTS must be a comma-separated list of DNSBL zones/,
    );
    const many = Array.from({ length: 17 }, (_, index) => `list${index}.example.org`).join(',');
    expect(() => loadConfig({ ...RUN_ENV, EGRESS_BLOCKLISTS: many }, 'run')).toThrow(
      /EGRESS_BLOCKLISTS must name at most 16 zones, got 17/,
    );
    expect(() => loadConfig({ ...RUN_ENV, EGRESS_PORT25_CHECK_HOST: 'mx:99999' }, 'run')).toThrow(
      /EGRESS_PORT25_CHECK_HOST must be host or host:port/,
    );
    expect(() =>
      loadConfig({ ...RUN_ENV, SOCKS5_PROXIES: 'socks5://proxy.example.net?address=nope' }, 'run'),
    ).toThrow(/address must be the proxy's public IP address/);
  });

  it('reads egresses: source addresses with their HELO names, then SOCKS5 proxies', () => {
    const config = loadConfig(
      {
        ...RUN_ENV,
        SOURCE_ADDRESSES: '198.51.100.7=out1.example.net., 2001:db8::7',
        SOCKS5_PROXIES:
          'socks5://us%40er:p%3Ass@proxy.example.net:1081?helo=out3.example.net&address=203.0.113.9,socks5://[2001:db8::1]',
      },
      'run',
    );
    expect(config.egresses).toEqual([
      { id: '198.51.100.7', kind: 'direct', localAddress: '198.51.100.7', helo: 'out1.example.net' },
      { id: '2001:db8::7', kind: 'direct', localAddress: '2001:db8::7', helo: null },
      {
        id: 'socks5://proxy.example.net:1081',
        kind: 'socks5',
        proxy: { host: 'proxy.example.net', port: 1081, username: 'us@er', password: 'p:ss' },
        helo: 'out3.example.net',
        address: '203.0.113.9',
      },
      {
        id: 'socks5://[2001:db8::1]:1080',
        kind: 'socks5',
        proxy: { host: '2001:db8::1', port: 1080, username: null, password: null },
        helo: null,
        address: null,
      },
    ]);
    // The log line names each egress, never a proxy's password.
    const described = JSON.stringify(describeConfig(config));
    expect(described).toContain('socks5://proxy.example.net:1081');
    expect(described).not.toContain('p:ss');
    expect(described).not.toContain('p%3Ass');
  });

  it('parses every variable of a full env file', () => {
    const config = loadConfig(
      {
        EDGE_URL: 'http://127.0.0.1:8787/',
        PROBER_TOKEN: ` ${TOKEN}\n`,
        REGION: 'eu-west',
        CAPACITY: '200',
        SMTP_PORT: '2525',
        ALLOW_PRIVATE_TARGETS: 'true',
        REQUIRE_TLS: 'yes',
        HELO_NAME: 'probe1.rcpt.example.com.',
        MAIL_FROM: 'verify@rcpt.example.com',
        CONNECT_TIMEOUT_MS: '5000',
        COMMAND_TIMEOUT_MS: '8000',
        PER_MX_CONCURRENCY: '2',
        OPS_PORT: '0',
        OPS_HOST: '0.0.0.0',
        LOG_LEVEL: 'DEBUG',
        DRAIN_TIMEOUT_MS: '45000',
        DNS_SERVERS: '127.0.0.1:5353, [::1]:53,9.9.9.9',
        UNRELATED: 'ignored',
      },
      'run',
    );
    expect(config).toMatchObject({
      edgeUrl: new URL('ws://127.0.0.1:8787/'),
      proberToken: TOKEN,
      region: 'eu-west',
      capacity: 200,
      smtpPort: 2525,
      allowPrivateTargets: true,
      requireTls: true,
      heloName: 'probe1.rcpt.example.com',
      mailFrom: 'verify@rcpt.example.com',
      connectTimeoutMs: 5000,
      commandTimeoutMs: 8000,
      perMxConcurrency: 2,
      opsPort: 0,
      opsHost: '0.0.0.0',
      logLevel: 'debug',
      drainTimeoutMs: 45_000,
      dnsServers: ['127.0.0.1:5353', '[::1]:53', '9.9.9.9'],
    });
  });

  it('takes MAIL_FROM=<> as the null sender and an empty value as unset', () => {
    expect(loadConfig({ ...RUN_ENV, MAIL_FROM: '<>' }, 'run').mailFrom).toBe('');
    expect(loadConfig({ ...RUN_ENV, MAIL_FROM: '', SMTP_PORT: '' }, 'run')).toMatchObject({
      mailFrom: null,
      smtpPort: 25,
    });
  });

  it('needs neither the edge nor a token for verify', () => {
    expect(loadConfig({}, 'verify')).toMatchObject({ edgeUrl: null, proberToken: null });
  });

  it('needs EDGE_URL and PROBER_TOKEN for run, naming both', () => {
    const problems = problemsOf({});
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^EDGE_URL is required/);
    expect(problems[1]).toMatch(/^PROBER_TOKEN is required/);
  });

  it.each([
    ['SMTP_PORT', 'abc', 'SMTP_PORT must be an integer 1–65535, got "abc"'],
    ['SMTP_PORT', '70000', 'SMTP_PORT must be an integer 1–65535, got "70000"'],
    ['CAPACITY', '0', 'CAPACITY must be an integer 1–10000, got "0"'],
    ['CAPACITY', '2.5', 'CAPACITY must be an integer 1–10000, got "2.5"'],
    ['PER_MX_CONCURRENCY', '-1', 'PER_MX_CONCURRENCY must be an integer 1–1000, got "-1"'],
    ['OPS_PORT', '1e3', 'OPS_PORT must be an integer 0–65535, got "1e3"'],
    ['CONNECT_TIMEOUT_MS', '10', 'CONNECT_TIMEOUT_MS must be an integer 100–300000, got "10"'],
    ['COMMAND_TIMEOUT_MS', 'soon', 'COMMAND_TIMEOUT_MS must be an integer 100–600000, got "soon"'],
    ['DRAIN_TIMEOUT_MS', '30s', 'DRAIN_TIMEOUT_MS must be an integer 0–3600000, got "30s"'],
    ['ALLOW_PRIVATE_TARGETS', 'maybe', 'ALLOW_PRIVATE_TARGETS must be true or false, got "maybe"'],
    ['REQUIRE_TLS', '2', 'REQUIRE_TLS must be true or false, got "2"'],
    [
      'EDGE_URL',
      'rcpt.example.com',
      'EDGE_URL must be an absolute URL (https://… or wss://…), got "rcpt.example.com"',
    ],
    [
      'EDGE_URL',
      'ftp://rcpt.example.com',
      'EDGE_URL must use http, https, ws or wss, got "ftp://rcpt.example.com"',
    ],
    [
      'EDGE_URL',
      'http://rcpt.example.com',
      'EDGE_URL must use https or wss (http and ws only to a loopback address), got "http://rcpt.example.com"',
    ],
    [
      'EDGE_URL',
      'ws://10.0.0.5:8787',
      'EDGE_URL must use https or wss (http and ws only to a loopback address), got "ws://10.0.0.5:8787"',
    ],
    [
      'EDGE_URL',
      'http://127.0.0.1.evil.example',
      'EDGE_URL must use https or wss (http and ws only to a loopback address)',
    ],
    [
      'EDGE_URL',
      'https://user:pw@rcpt.example.com',
      'EDGE_URL must not contain a user name or password (use PROBER_TOKEN)',
    ],
    ['REGION', 'eu west', 'REGION must be 1–64 letters, digits, dots, dashes or underscores, got "eu west"'],
    ['HELO_NAME', 'probe_1!', `HELO_NAME must be a host name (this IP's PTR name), got "probe_1!"`],
    [
      'MAIL_FROM',
      'verify',
      'MAIL_FROM must be an address like verify@example.com, or <> for the null sender, got "verify"',
    ],
    [
      'LOG_LEVEL',
      'loud',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
    ['OPS_HOST', 'local host', 'OPS_HOST must be an IP address or host name, got "local host"'],
    ['DNS_SERVERS', '127.0.0.1,dns.example', 'DNS_SERVERS must be a comma-separated list of IP addresses'],
    ['DNS_SERVERS', '127.0.0.1:99999', 'got "127.0.0.1:99999"'],
    [
      'SOURCE_ADDRESSES',
      '127.0.0.1,eth0',
      'SOURCE_ADDRESSES must be a comma-separated list of local IP addresses',
    ],
    ['SOURCE_ADDRESSES', '127.0.0.2=bad_name!', 'SOURCE_ADDRESSES HELO name must be a host name'],
    ['SOURCE_ADDRESSES', '127.0.0.2,127.0.0.2', 'name the egress 127.0.0.2 twice'],
    ['SOCKS5_PROXIES', 'http://proxy.example.net:8080', 'entry 1 must be socks5://'],
    ['SOCKS5_PROXIES', 'socks5://u:secret@proxy.example.net/path', 'entry 1 must be socks5://'],
    ['SOCKS5_PROXIES', 'socks5://:secret@proxy.example.net', 'RFC 1929'],
    // Provider rules are built in now; a file named here would otherwise be ignored without a word.
    ['PROVIDER_RULES', 'rules/providers.json', 'PROVIDER_RULES is no longer read'],
  ])('names %s when it is %j', (name, value, message) => {
    const problems = problemsOf({ ...RUN_ENV, [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(message);
    expect(problems[0]).not.toContain('secret');
  });

  it.each(['http://127.0.0.1:8787', 'ws://localhost:8787', 'http://[::1]:8787', 'wss://rcpt.example.com'])(
    'links to %s',
    (url) => {
      expect(loadConfig({ ...RUN_ENV, EDGE_URL: url }, 'run').edgeUrl?.protocol).toMatch(/^wss?:$/);
    },
  );

  it('lists every bad variable at once', () => {
    const problems = problemsOf({ PROBER_TOKEN: TOKEN, SMTP_PORT: 'abc', CAPACITY: 'lots' });
    expect(problems.map((problem) => problem.split(' ')[0])).toEqual(['CAPACITY', 'SMTP_PORT', 'EDGE_URL']);
  });

  it('never echoes the token, even when it is malformed', () => {
    const malformed = 'rkp_secret value';
    const problems = problemsOf({ ...RUN_ENV, PROBER_TOKEN: malformed });
    expect(problems).toEqual(['PROBER_TOKEN must not contain spaces or control characters']);
    expect(JSON.stringify(describeConfig(loadConfig(RUN_ENV, 'run')))).not.toContain(TOKEN);
    expect(describeConfig(loadConfig(RUN_ENV, 'run'))).toMatchObject({ proberTokenSet: true });
  });
});
