// The tenant-detection cases: a domain behind a security gateway (one the provider registry names,
// or a host it does not know), the DNS it publishes, and the
// tenant `detectTenant` must find (or why none). One table, run against every way rcpt asks DNS
// — in memory (shared), DNS over HTTPS (the edge, inside workerd) and the system resolver over
// UDP (the prober) — all answered by the world's resolver from MAIL_TENANT_ZONE.
import type { TenantDetection } from '../../shared/src/dns/mail-tenant.ts';
import type { ZoneEntry } from '../world/zone.ts';

export interface MailTenantCase {
  name: string;
  domain: string;
  /** The domain's MX hosts, as its mail route found them. */
  mxHosts: readonly string[];
  /** The records this case adds to MAIL_TENANT_ZONE; names are unique to the case. */
  zone: Readonly<Record<string, ZoneEntry>>;
  /** For `error`, `message` is the part before the resolver's own words (see `comparableDetection`). */
  expected: TenantDetection;
}

// Public unicast addresses (no special-purpose range): nothing ever connects to them here.
const IP = (last: number) => `93.184.214.${last}`;
const PROOFPOINT = (name: string) => `mx0a-${name}.pphosted.com`;
const MIMECAST = 'eu-smtp-inbound-1.mimecast.com';
/** A company's own relay in front of its tenant: a host name no registry knows. */
const RELAY = (name: string) => `mailgw.${name}.tenant.test`;
const SPF_MICROSOFT = 'v=spf1 include:spf.protection.outlook.com -all';
const GOOGLE_INBOUND = 'aspmx.l.google.com';

/** Names every case may use: the providers' own hosts. */
const SHARED_ZONE: Record<string, ZoneEntry> = {
  [GOOGLE_INBOUND]: { A: [IP(200)] },
  'autodiscover.outlook.com': { A: [IP(201)] },
};

export const MAIL_TENANT_CASES: readonly MailTenantCase[] = [
  {
    name: 'Microsoft 365 named by the SPF include; its inbound host resolves',
    domain: 'spf.tenant.test',
    mxHosts: [PROOFPOINT('spf')],
    zone: {
      'spf.tenant.test': { TXT: ['google-analytics=xyz', SPF_MICROSOFT] },
      'spf-tenant-test.mail.protection.outlook.com': { A: [IP(1)] },
    },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'microsoft', inboundHost: 'spf-tenant-test.mail.protection.outlook.com' },
      signal: 'SPF include:spf.protection.outlook.com',
      mx: [{ host: 'spf-tenant-test.mail.protection.outlook.com', preference: 0, ips: [IP(1)] }],
    },
  },
  {
    name: 'Microsoft 365 named by its domain verification TXT (MS=ms…), in any letter case',
    domain: 'verified.tenant.test',
    mxHosts: [PROOFPOINT('verified')],
    zone: {
      'verified.tenant.test': { TXT: ['v=spf1 include:_spf.pphosted.com -all', 'MS=ms48213377'] },
      'verified-tenant-test.mail.protection.outlook.com': { A: [IP(2)] },
    },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'microsoft', inboundHost: 'verified-tenant-test.mail.protection.outlook.com' },
      signal: 'verification TXT ms=ms…',
      mx: [{ host: 'verified-tenant-test.mail.protection.outlook.com', preference: 0, ips: [IP(2)] }],
    },
  },
  {
    name: 'Microsoft 365 named only by autodiscover (CNAME autodiscover.outlook.com)',
    domain: 'autodiscover.tenant.test',
    mxHosts: [MIMECAST],
    zone: {
      'autodiscover.tenant.test': { TXT: ['v=spf1 include:_netblocks.mimecast.com -all'] },
      'autodiscover.autodiscover.tenant.test': { CNAME: 'autodiscover.outlook.com' },
      'autodiscover-tenant-test.mail.protection.outlook.com': { A: [IP(3)] },
    },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'microsoft', inboundHost: 'autodiscover-tenant-test.mail.protection.outlook.com' },
      signal: 'autodiscover CNAME autodiscover.outlook.com',
      mx: [{ host: 'autodiscover-tenant-test.mail.protection.outlook.com', preference: 0, ips: [IP(3)] }],
    },
  },
  {
    name: 'Google Workspace named by the SPF include: its one inbound host',
    domain: 'workspace.tenant.test',
    mxHosts: [MIMECAST],
    zone: { 'workspace.tenant.test': { TXT: ['v=spf1 include:_spf.google.com ~all'] } },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'google', inboundHost: GOOGLE_INBOUND },
      signal: 'SPF include:_spf.google.com',
      mx: [{ host: GOOGLE_INBOUND, preference: 0, ips: [IP(200)] }],
    },
  },
  {
    name: "signals of both: the gateway's first fronted provider (Microsoft) wins",
    domain: 'both.tenant.test',
    mxHosts: [PROOFPOINT('both')],
    zone: {
      'both.tenant.test': { TXT: ['google-site-verification=abc', SPF_MICROSOFT] },
      'both-tenant-test.mail.protection.outlook.com': { A: [IP(5)] },
    },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'microsoft', inboundHost: 'both-tenant-test.mail.protection.outlook.com' },
      signal: 'SPF include:spf.protection.outlook.com',
      mx: [{ host: 'both-tenant-test.mail.protection.outlook.com', preference: 0, ips: [IP(5)] }],
    },
  },
  {
    name: 'a Microsoft signal whose inbound host does not exist: the next provider named',
    domain: 'moved.tenant.test',
    mxHosts: [PROOFPOINT('moved')],
    zone: { 'moved.tenant.test': { TXT: ['MS=ms11112222', 'google-site-verification=def'] } },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'google', inboundHost: GOOGLE_INBOUND },
      signal: 'verification TXT google-site-verification=…',
      mx: [{ host: GOOGLE_INBOUND, preference: 0, ips: [IP(200)] }],
    },
  },
  {
    name: 'a Microsoft signal whose inbound host does not exist, and nothing else: no tenant',
    domain: 'gone.tenant.test',
    mxHosts: [PROOFPOINT('gone')],
    zone: { 'gone.tenant.test': { TXT: [SPF_MICROSOFT] } },
    expected: {
      kind: 'none',
      why: "the tenant's inbound host does not resolve: gone-tenant-test.mail.protection.outlook.com",
    },
  },
  {
    name: 'a gateway domain that names no tenant',
    domain: 'none.tenant.test',
    mxHosts: [PROOFPOINT('none')],
    zone: { 'none.tenant.test': { TXT: ['v=spf1 include:_spf.pphosted.com -all'] } },
    expected: { kind: 'none', why: 'no microsoft or google tenant signal in SPF, TXT or autodiscover' },
  },
  {
    name: "an MX that is a mailbox provider's own (Microsoft 365 itself) asks nothing",
    domain: 'direct.tenant.test',
    mxHosts: ['direct-tenant-test.mail.protection.outlook.com'],
    zone: { 'direct.tenant.test': { TXT: [SPF_MICROSOFT] } },
    expected: { kind: 'none', why: "the MX is a mailbox provider's own" },
  },
  {
    name: 'Microsoft 365 behind an MX no registry knows (a self-hosted relay), every signal present',
    domain: 'relayed.tenant.test',
    mxHosts: [RELAY('relayed')],
    zone: {
      'relayed.tenant.test': { TXT: [SPF_MICROSOFT, 'MS=ms55501234'] },
      'autodiscover.relayed.tenant.test': { CNAME: 'autodiscover.outlook.com' },
      'relayed-tenant-test.mail.protection.outlook.com': { A: [IP(6)] },
    },
    expected: {
      kind: 'tenant',
      tenant: { provider: 'microsoft', inboundHost: 'relayed-tenant-test.mail.protection.outlook.com' },
      signal: 'SPF include:spf.protection.outlook.com',
      mx: [{ host: 'relayed-tenant-test.mail.protection.outlook.com', preference: 0, ips: [IP(6)] }],
    },
  },
  {
    name: 'Microsoft signals behind an unknown MX whose tenant host does not exist: no tenant',
    domain: 'stale.tenant.test',
    mxHosts: [RELAY('stale')],
    zone: { 'stale.tenant.test': { TXT: [SPF_MICROSOFT] } },
    expected: {
      kind: 'none',
      why: "the tenant's inbound host does not resolve: stale-tenant-test.mail.protection.outlook.com",
    },
  },
  {
    name: 'Google signals behind an MX no registry knows: nothing confirms a tenant, none is looked for',
    domain: 'searchconsole.tenant.test',
    mxHosts: [RELAY('searchconsole')],
    zone: {
      'searchconsole.tenant.test': {
        TXT: ['google-site-verification=ghi', 'v=spf1 include:_spf.google.com ~all'],
      },
    },
    expected: { kind: 'none', why: 'no microsoft tenant signal in SPF, TXT or autodiscover' },
  },
  {
    name: 'the TXT lookup failing is an error, not "no tenant"',
    domain: 'servfail.tenant.test',
    mxHosts: [PROOFPOINT('servfail')],
    zone: { 'servfail.tenant.test': { servfail: true } },
    expected: { kind: 'error', message: 'TXT lookup for servfail.tenant.test failed (servfail)' },
  },
];

/** Every case's records in one zone. */
export const MAIL_TENANT_ZONE: Readonly<Record<string, ZoneEntry>> = Object.freeze(
  Object.assign({}, SHARED_ZONE, ...MAIL_TENANT_CASES.map((tenantCase) => tenantCase.zone)),
);

/** The detection with an error's message cut before the resolver's own words, which differ by adapter. */
export function comparableDetection(detection: TenantDetection): TenantDetection {
  if (detection.kind !== 'error') return detection;
  const end = detection.message.indexOf('): ');
  return { ...detection, message: end === -1 ? detection.message : detection.message.slice(0, end + 1) };
}
