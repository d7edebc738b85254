import type { AddressOutcome, ProbeReport, ProbeRequest } from '@rcpt/shared/contract/prober';
import { afterEach, describe, expect, it } from 'vitest';
import type { EgressHealth } from '../egress/egress-health.ts';
import { type OpsServer, type ProberHealth, startOpsServer } from './http.ts';
import { createLogger } from './logger.ts';
import { addressOutcomeLabel, ProberMetrics, providerLabel } from './metrics.ts';

const logLines: string[] = [];
const logger = createLogger({
  level: 'debug',
  destination: { write: (line: string) => logLines.push(line) },
});
const servers: OpsServer[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  logLines.length = 0;
});

function reply(code: number, enhanced: string | null, text = 'text') {
  return { code, enhanced, text };
}

const REQUEST: ProbeRequest = {
  emails: ['alice@example.test', 'gone@example.test', 'later@example.test'],
  domain: 'example.test',
  mx: [{ host: 'mx.example.test', preference: 10, ips: ['127.0.0.1'] }],
  mailFrom: 'verify@rcpt.example',
  helo: 'probe.rcpt.example',
  timeoutMs: 10_000,
  transcript: false,
};

const REPORT: ProbeReport = {
  perAddress: [
    { email: 'alice@example.test', reply: reply(250, '2.1.5', 'OK'), failure: null },
    { email: 'gone@example.test', reply: reply(550, '5.1.1', 'No such user'), failure: null },
    { email: 'later@example.test', reply: reply(451, '4.7.1', 'Greylisted, try later'), failure: null },
  ],
  catchAllReply: reply(550, '5.1.1', 'No such user'),
  session: {
    mxHost: 'mx.example.test',
    mxIp: '127.0.0.1',
    tls: true,
    tlsError: null,
    smtputf8: false,
    durationMs: 800,
  },
};

async function startServer(health: () => ProberHealth, metrics = newMetrics()): Promise<string> {
  const server = await startOpsServer({ host: '127.0.0.1', port: 0, metrics, health, logger });
  servers.push(server);
  return `http://127.0.0.1:${server.port}`;
}

function newMetrics(state: { sessions?: number; backoffs?: number; linked?: boolean } = {}): ProberMetrics {
  return new ProberMetrics({
    openSessions: () => state.sessions ?? 0,
    hostBackoffs: () => state.backoffs ?? 0,
    linkConnected: () => state.linked ?? false,
    probesInFlight: () => 0,
  });
}

describe('ProberMetrics', () => {
  it('exposes every rcpt metric and the process metrics on GET /metrics after a probe', async () => {
    const state = { sessions: 3, backoffs: 2, linked: true };
    const metrics = newMetrics(state);
    metrics.recordProbe(REQUEST, REPORT, 0.8);
    metrics.recordReconnect();
    const base = await startServer(() => ({ linked: true, inFlight: 0, draining: false }), metrics);

    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text).toContain('rcpt_probes_total{outcome="accepted",provider="other"} 1');
    expect(text).toContain('rcpt_probes_total{outcome="rejected",provider="other"} 1');
    expect(text).toContain('rcpt_probes_total{outcome="temporary",provider="other"} 1');
    expect(text).toContain('rcpt_smtp_replies_total{class="2xx"} 1');
    expect(text).toContain('rcpt_smtp_replies_total{class="4xx"} 1');
    expect(text).toContain('rcpt_smtp_replies_total{class="5xx"} 2');
    expect(text).toContain('rcpt_probe_duration_seconds_bucket{le="1"} 1');
    expect(text).toContain('rcpt_probe_duration_seconds_count 1');
    expect(text).toContain('rcpt_open_sessions 3');
    expect(text).toContain('rcpt_host_backoffs 2');
    expect(text).toContain('rcpt_link_connected 1');
    expect(text).toContain('rcpt_link_reconnects_total 1');
    expect(text).toContain('rcpt_probes_in_flight 0');
    expect(text).toContain('process_cpu_user_seconds_total');

    // Gauges read live state at scrape time.
    state.sessions = 0;
    state.linked = false;
    const later = await (await fetch(`${base}/metrics`)).text();
    expect(later).toContain('rcpt_open_sessions 0');
    expect(later).toContain('rcpt_link_connected 0');
  });

  it('keeps each registry to itself', async () => {
    const first = newMetrics();
    const second = newMetrics();
    first.recordProbe(REQUEST, REPORT, 0.1);
    expect(await first.scrape()).toContain('rcpt_probes_total{outcome="accepted",provider="other"} 1');
    expect(await second.scrape()).not.toContain('rcpt_probes_total{outcome="accepted"}');
  });

  it('counts an engine failure once per address asked about', async () => {
    const metrics = newMetrics();
    const request = { ...REQUEST, emails: ['a@gmail.com', 'b@gmail.com', 'c@gmail.com', 'd@gmail.com'] };
    metrics.recordProbeError({ ...request, domain: 'gmail.com' }, 0.2);
    expect(await metrics.scrape()).toContain(
      'rcpt_probes_total{outcome="internal_error",provider="google"} 4',
    );
  });

  it.each<[string, string[], string]>([
    ['gmail.com', ['gmail-smtp-in.l.google.com'], 'google'],
    ['acme.com', ['aspmx.l.google.com'], 'google'], // Google Workspace is Google's MX too
    ['acme.com', ['acme-com.mail.protection.outlook.com'], 'microsoft'],
    ['acme.com', ['mx0a-1.pphosted.com', 'aspmx.l.google.com'], 'proofpoint'], // the gateway answers
    ['yahoo.co.uk', ['mx.example.test'], 'yahoo'],
    ['example.test', ['mx.example.test'], 'other'],
  ])('labels %s via %j with the provider registry id %s', (domain, hosts, label) => {
    const mx = hosts.map((host, index) => ({ host, preference: index, ips: ['127.0.0.1'] }));
    expect(providerLabel({ domain, mx })).toBe(label);
  });

  it.each<[string, AddressOutcome]>([
    ['accepted', { email: 'a@x.test', reply: reply(250, null), failure: null }],
    ['rejected', { email: 'a@x.test', reply: reply(550, '5.1.1'), failure: null }],
    ['temporary', { email: 'a@x.test', reply: reply(450, '4.2.0'), failure: null }],
    ['temporary', { email: 'a@x.test', reply: reply(451, '4.7.1'), failure: null }],
    ['policy', { email: 'a@x.test', reply: reply(554, '5.7.1'), failure: null }],
    [
      'timeout',
      {
        email: 'a@x.test',
        reply: null,
        failure: { kind: 'timeout', stage: 'rcpt', reply: null, message: 'no reply' },
      },
    ],
    [
      'policy',
      {
        email: 'a@x.test',
        reply: null,
        failure: { kind: 'rejected', stage: 'banner', reply: reply(554, '5.7.1'), message: 'blocked' },
      },
    ],
    // The reply table's policy rows, not only 5.7.x: a block list named under a mailbox code,
    // Yahoo's temporary [TSS04] block, and our sender domain refused.
    ['policy', { email: 'a@x.test', reply: reply(550, '5.1.1', 'Blocked by Spamhaus'), failure: null }],
    ['policy', { email: 'a@x.test', reply: reply(421, '4.7.0', '[TSS04] Messages deferred'), failure: null }],
    [
      'policy',
      {
        email: 'a@x.test',
        reply: null,
        failure: { kind: 'rejected', stage: 'mail', reply: reply(553, '5.1.8'), message: 'bad sender' },
      },
    ],
    [
      'session_rejected',
      {
        email: 'a@x.test',
        reply: null,
        failure: { kind: 'rejected', stage: 'mail', reply: reply(501, '5.5.4'), message: 'syntax' },
      },
    ],
  ])('labels the outcome %s', (label, outcome) => {
    expect(addressOutcomeLabel(outcome)).toBe(label);
  });
});

describe('ops server', () => {
  it('answers /healthz with 503 until linked, 200 while linked, 503 while draining', async () => {
    const health: ProberHealth = { linked: false, inFlight: 0, draining: false };
    const base = await startServer(() => health);

    const before = await fetch(`${base}/healthz`);
    expect(before.status).toBe(503);
    expect(await before.json()).toEqual({ ok: false, linked: false, inFlight: 0, draining: false });

    health.linked = true;
    health.inFlight = 2;
    const linked = await fetch(`${base}/healthz`);
    expect(linked.status).toBe(200);
    expect(await linked.json()).toEqual({ ok: true, linked: true, inFlight: 2, draining: false });

    health.draining = true;
    expect((await fetch(`${base}/healthz`)).status).toBe(503);
  });

  it('has nothing else to say', async () => {
    const base = await startServer(() => ({ linked: true, inFlight: 0, draining: false }));
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});

describe('logger', () => {
  it('redacts tokens and authorization headers wherever they are logged', () => {
    const token = 'rkp_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA';
    logger.info({ token }, 'a token field');
    logger.info({ headers: { authorization: `Bearer ${token}` } }, 'a header');
    logger.info({ config: { proberToken: token, PROBER_TOKEN: token } }, 'a config');
    logger.info({ request: { headers: { Authorization: `Bearer ${token}` } } }, 'a request');
    expect(logLines).toHaveLength(4);
    expect(logLines.join('')).not.toContain(token);
    expect(logLines.join('')).toContain('[redacted]');
    expect(JSON.parse(logLines[0]!)).toMatchObject({
      level: 'info',
      name: 'rcpt-prober',
      msg: 'a token field',
    });
  });
});

describe('egress metrics', () => {
  it('exposes each block and each hour against its budget, and drops a block once it is over', async () => {
    let blocks = [
      {
        egress: '127.0.0.2',
        scope: { kind: 'mx_host' as const, name: 'mx1.company.test' },
        since: 0,
        until: 1,
        reply: reply(554, '5.7.1', 'Client host [127.0.0.2] blocked using zen.spamhaus.org'),
        level: 1,
      },
    ];
    const metrics = new ProberMetrics({
      openSessions: () => 0,
      hostBackoffs: () => 0,
      linkConnected: () => true,
      probesInFlight: () => 0,
      egressBlocks: () => blocks,
      egressUses: () => [{ egress: '127.0.0.1', provider: 'google', used: 12, budget: 50 }],
    });
    const text = await metrics.scrape();
    expect(text).toContain('rcpt_egress_blocked{egress="127.0.0.2",scope="mx_host:mx1.company.test"} 1');
    expect(text).toContain('rcpt_egress_hourly_used{egress="127.0.0.1",provider="google"} 12');
    expect(text).toContain('rcpt_egress_hourly_budget{egress="127.0.0.1",provider="google"} 50');
    blocks = [];
    expect(await metrics.scrape()).not.toContain('rcpt_egress_blocked{');
  });

  it('exposes each egress health as the fleet view shows it, and no series before a check', async () => {
    let health: EgressHealth[] = [];
    const metrics = new ProberMetrics({
      openSessions: () => 0,
      hostBackoffs: () => 0,
      linkConnected: () => true,
      probesInFlight: () => 0,
      egressHealth: () => health,
    });
    expect(await metrics.scrape()).not.toMatch(/^rcpt_egress_(reverse_dns_ok|listed)\{/m);
    health = [
      {
        egress: 'a',
        address: '192.0.2.10',
        ptr: 'probe-a.example.net',
        fcrdns: 'pass',
        heloMatches: true,
        listings: [],
        unchecked: [],
        port25: 'ok',
        checkedAt: 1_700_000_000_000,
      },
      {
        egress: 'b',
        address: '192.0.2.11',
        ptr: null,
        fcrdns: 'fail',
        heloMatches: null,
        listings: [{ zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: 'SBL: Spamhaus SBL data' }],
        unchecked: [],
        port25: 'unknown',
        checkedAt: 1_700_000_360_000,
      },
    ];
    const text = await metrics.scrape();
    expect(text).toContain('rcpt_egress_reverse_dns_ok{egress="a"} 1');
    expect(text).toContain('rcpt_egress_reverse_dns_ok{egress="b"} 0');
    expect(text).toContain('rcpt_egress_helo_matches_ptr{egress="a"} 1');
    expect(text).not.toContain('rcpt_egress_helo_matches_ptr{egress="b"}');
    expect(text).toContain('rcpt_egress_port25_reachable{egress="a"} 1');
    expect(text).not.toContain('rcpt_egress_port25_reachable{egress="b"}');
    expect(text).toContain('rcpt_egress_listed{egress="b",zone="zen.spamhaus.org"} 1');
    expect(text).not.toContain('rcpt_egress_listed{egress="a"');
    expect(text).toContain('rcpt_egress_health_checked_timestamp_seconds{egress="b"} 1700000360');
  });
});
