// The DNS of the fake mail world: which names exist, where their mail goes, and on which
// loopback address each fake MX listens. The DoH stub answers from this table and tests read
// it for their expectations, so it is data, not code.

/** An MX record: lower preference is tried first (RFC 5321 §5.1). */
export interface MxRecord {
  readonly preference: number;
  readonly exchange: string;
}

/** The records of one name. A name in the table exists; a type it lacks gets NODATA. */
export interface ZoneEntry {
  readonly MX?: readonly MxRecord[];
  readonly A?: readonly string[];
  readonly AAAA?: readonly string[];
  readonly TXT?: readonly string[];
  /** The name's resolver is broken: every query for it answers SERVFAIL. */
  readonly servfail?: true;
  /** An alias (RFC 1034 §3.6.2): resolvers follow it to this name. The name has no other records. */
  readonly CNAME?: string;
  /** The names of an address, under its in-addr.arpa name (RFC 1035 §3.5). */
  readonly PTR?: readonly string[];
  /** No answer ever comes for the name, as when the path to its servers is down: clients time out. */
  readonly silent?: true;
  /**
   * The TTL of the name's records, in seconds (default ZONE_TTL). A domain about to move its mail
   * lowers it first, so that resolvers notice the move soon.
   */
  readonly ttl?: number;
}

/** TTL of every answer, in seconds. */
export const ZONE_TTL = 300;

/**
 * The loopback address of each fake MX. They all listen on the world's one SMTP port; a client
 * tells them apart by address, as it would tell real MX hosts apart. Linux routes all of
 * 127.0.0.0/8 to the loopback interface, so these need no setup.
 */
export const MX_IPS = {
  accept: '127.0.0.10',
  catchall: '127.0.0.11',
  greylist: '127.0.0.12',
  full: '127.0.0.13',
  disabled: '127.0.0.14',
  rbl: '127.0.0.15',
  policy: '127.0.0.16',
  banner421: '127.0.0.17',
  tarpit: '127.0.0.18',
  starttls: '127.0.0.19',
  tlsrequired: '127.0.0.20',
  connlimit: '127.0.0.21',
  // Nothing ever listens here, so a connection is refused: the dead primary of fallback.test.
  fallbackPrimary: '127.0.0.22',
  fallbackSecondary: '127.0.0.23',
  utf8: '127.0.0.24',
  bulk: '127.0.0.25',
  // The defended servers (defences.ts): Postfix's error limits, Exchange's tarpit, one
  // recipient per transaction, greylisting at postgrey's delay.
  postfix: '127.0.0.26',
  exchange: '127.0.0.27',
  onercpt: '127.0.0.28',
  slowgreylist: '127.0.0.29',
  // A security gateway (Proofpoint) in front of Microsoft 365 tenants, and two tenants' own
  // inbound hosts: one that answers per mailbox, one that refuses mail that bypassed the gateway.
  gateway: '127.0.0.30',
  tenant: '127.0.0.31',
  tenantRelayDenied: '127.0.0.32',
  // Greylisting as milter-greylist answers it (451 4.7.1) rather than postgrey (450 4.2.0).
  greylistMilter: '127.0.0.33',
  // A company's own relay in front of its Microsoft 365 tenant, under a name no registry knows.
  relayGateway: '127.0.0.36',
} as const;

/** Host name of each fake MX, as its domain's MX record names it and its greeting announces it. */
export const MX_HOSTS = {
  accept: 'mx.accept.test',
  catchall: 'mx.catchall.test',
  greylist: 'mx.greylist.test',
  full: 'mx.full.test',
  disabled: 'mx.disabled.test',
  rbl: 'mx.rbl.test',
  policy: 'mx.policy.test',
  banner421: 'mx.banner421.test',
  tarpit: 'mx.tarpit.test',
  starttls: 'mx.starttls.test',
  tlsrequired: 'mx.tlsrequired.test',
  connlimit: 'mx.connlimit.test',
  fallbackPrimary: 'mx1.fallback.test',
  fallbackSecondary: 'mx2.fallback.test',
  utf8: 'mx.utf8.test',
  bulk: 'mx.bulk.test',
  postfix: 'mx.postfix.test',
  exchange: 'mx.exchange.test',
  onercpt: 'mx.onercpt.test',
  slowgreylist: 'mx.slowgreylist.test',
  // Proofpoint names a customer's hosts mx0a-<id>.pphosted.com; Microsoft 365 a tenant domain's
  // inbound host <domain with '.' → '-'>.mail.protection.outlook.com. Only the world's DNS
  // answers for these names.
  gateway: 'mx0a-00123401.pphosted.com',
  tenant: 'gatewayed-test.mail.protection.outlook.com',
  tenantRelayDenied: 'tenantrefuses-test.mail.protection.outlook.com',
  greylistMilter: 'mx.greylist451.test',
  relayGateway: 'mailgw.selfrelayed.test',
} as const satisfies Record<keyof typeof MX_IPS, string>;

/** Behaviour name → the domain to use for it. The bulk domains are `bulk-01.test` onwards. */
export const DOMAINS = {
  accept: 'accept.test',
  catchall: 'catchall.test',
  greylist: 'greylist.test',
  greylistMilter: 'greylist451.test',
  full: 'full.test',
  disabled: 'disabled.test',
  rbl: 'rbl.test',
  policy: 'policy.test',
  banner421: 'banner421.test',
  tarpit: 'tarpit.test',
  starttls: 'starttls.test',
  tlsrequired: 'tlsrequired.test',
  connlimit: 'connlimit.test',
  fallback: 'fallback.test',
  utf8: 'utf8.test',
  // A real disposable provider, so the list check and the DNS lookup both see it.
  disposable: 'mailinator.com',
  bulk: 'bulk-01.test',
  nullmx: 'nullmx.test',
  implicit: 'implicit.test',
  ipv6: 'ipv6.test',
  nomail: 'nomail.test',
  servfail: 'servfail.test',
  nxdomain: 'nonexistent.test',
  // A typo of gmail.com that does not exist in the world.
  typo: 'gmial.com',
  // Behind the gateway: a Microsoft 365 tenant that answers per mailbox; no tenant signal in
  // DNS at all; a tenant that refuses a client bypassing the gateway.
  gateway: 'gatewayed.test',
  gatewayNoTenant: 'untenanted.test',
  gatewayTenantRefuses: 'tenantrefuses.test',
  // Behind a catch-all relay whose name is in no registry: a Microsoft 365 tenant with every
  // DNS signal, whose inbound host is the tenant server above.
  relayGateway: 'selfrelayed.test',
} as const;

/** The domains of the defended servers, by server name. */
export const DEFENDED_DOMAINS = {
  postfix: 'postfix.test',
  exchange: 'exchange.test',
  onercpt: 'onercpt.test',
  slowgreylist: 'slowgreylist.test',
} as const;

/**
 * A provider family's MX hosts: two hosts under Fastmail's MX suffix (messagingengine.com, in
 * the provider registry), so a refusal at one of them blocks an egress at the whole provider,
 * and two domains hosted there (the first with both hosts, the second with the other only).
 * Only the world's DNS answers for these names.
 */
export const PROVIDER_HOSTS = [
  { name: 'provider1', host: 'in1-smtp.messagingengine.com', ip: '127.0.0.34' },
  { name: 'provider2', host: 'in2-smtp.messagingengine.com', ip: '127.0.0.35' },
] as const;

export const PROVIDER_DOMAINS = ['fastmail-hosted-1.test', 'fastmail-hosted-2.test'] as const;

function providerZone(): Record<string, ZoneEntry> {
  const [first, second] = PROVIDER_HOSTS;
  return {
    [first.host]: { A: [first.ip] },
    [second.host]: { A: [second.ip] },
    [PROVIDER_DOMAINS[0]]: {
      MX: [
        { preference: 10, exchange: first.host },
        { preference: 20, exchange: second.host },
      ],
    },
    [PROVIDER_DOMAINS[1]]: { MX: [{ preference: 10, exchange: second.host }] },
  };
}

/**
 * The reverse DNS of the addresses a prober of the world sends from (SOURCE_ADDRESSES): each has
 * a PTR name; `name` resolves back to the address unless `resolvesTo` says otherwise — the one
 * mismatch, an egress without forward-confirmed reverse DNS (RFC 8601 §2.7.3).
 */
export const EGRESS_PTR = [
  { address: '127.0.0.1', name: 'out1.egress.test', resolvesTo: '127.0.0.1' },
  { address: '127.0.0.2', name: 'out2.egress.test', resolvesTo: '127.0.0.2' },
  { address: '127.0.0.3', name: 'out3.egress.test', resolvesTo: '127.0.0.99' },
] as const;

/** The in-addr.arpa name of an IPv4 address (RFC 1035 §3.5): its octets reversed. */
function reversed(address: string): string {
  return address.split('.').reverse().join('.');
}

function egressPtrZone(): Record<string, ZoneEntry> {
  return Object.fromEntries(
    EGRESS_PTR.flatMap(({ address, name, resolvesTo }) => [
      [`${reversed(address)}.in-addr.arpa`, { PTR: [name] }],
      [name, { A: [resolvesTo] }],
    ]),
  );
}

/**
 * The DNSBL zone most receivers use (Spamhaus ZEN) as the world serves it: each of `listed` has an
 * A record 127.0.0.2 (SBL) at its reversed name (RFC 5782 §2.1); every other address is NXDOMAIN.
 */
export function dnsblZone(listed: readonly string[], zone = 'zen.spamhaus.org'): Record<string, ZoneEntry> {
  return Object.fromEntries(listed.map((address) => [`${reversed(address)}.${zone}`, { A: ['127.0.0.2'] }]));
}

/** A domain whose single MX is `host` at `ip`, with the host's A record. */
function mailDomain(domain: string, host: string, ip: string): Record<string, ZoneEntry> {
  return {
    [domain]: { MX: [{ preference: 10, exchange: host }], TXT: ['v=spf1 mx -all'] },
    [host]: { A: [ip] },
  };
}

/** Every name of the world except the bulk domains (see `bulkZone`). Names are lower case, without the final dot. */
export const ZONE: Readonly<Record<string, ZoneEntry>> = Object.freeze({
  ...providerZone(),
  ...egressPtrZone(),
  ...mailDomain(DOMAINS.accept, MX_HOSTS.accept, MX_IPS.accept),
  ...mailDomain(DOMAINS.catchall, MX_HOSTS.catchall, MX_IPS.catchall),
  ...mailDomain(DOMAINS.greylist, MX_HOSTS.greylist, MX_IPS.greylist),
  ...mailDomain(DOMAINS.greylistMilter, MX_HOSTS.greylistMilter, MX_IPS.greylistMilter),
  ...mailDomain(DOMAINS.full, MX_HOSTS.full, MX_IPS.full),
  ...mailDomain(DOMAINS.disabled, MX_HOSTS.disabled, MX_IPS.disabled),
  ...mailDomain(DOMAINS.rbl, MX_HOSTS.rbl, MX_IPS.rbl),
  ...mailDomain(DOMAINS.policy, MX_HOSTS.policy, MX_IPS.policy),
  ...mailDomain(DOMAINS.banner421, MX_HOSTS.banner421, MX_IPS.banner421),
  ...mailDomain(DOMAINS.tarpit, MX_HOSTS.tarpit, MX_IPS.tarpit),
  ...mailDomain(DOMAINS.starttls, MX_HOSTS.starttls, MX_IPS.starttls),
  ...mailDomain(DOMAINS.tlsrequired, MX_HOSTS.tlsrequired, MX_IPS.tlsrequired),
  ...mailDomain(DOMAINS.connlimit, MX_HOSTS.connlimit, MX_IPS.connlimit),
  ...mailDomain(DOMAINS.utf8, MX_HOSTS.utf8, MX_IPS.utf8),
  ...mailDomain(DEFENDED_DOMAINS.postfix, MX_HOSTS.postfix, MX_IPS.postfix),
  ...mailDomain(DEFENDED_DOMAINS.exchange, MX_HOSTS.exchange, MX_IPS.exchange),
  ...mailDomain(DEFENDED_DOMAINS.onercpt, MX_HOSTS.onercpt, MX_IPS.onercpt),
  ...mailDomain(DEFENDED_DOMAINS.slowgreylist, MX_HOSTS.slowgreylist, MX_IPS.slowgreylist),
  [DOMAINS.fallback]: {
    MX: [
      { preference: 10, exchange: MX_HOSTS.fallbackPrimary },
      { preference: 20, exchange: MX_HOSTS.fallbackSecondary },
    ],
  },
  [MX_HOSTS.fallbackPrimary]: { A: [MX_IPS.fallbackPrimary] },
  [MX_HOSTS.fallbackSecondary]: { A: [MX_IPS.fallbackSecondary] },
  // mailinator.com's MX goes to the catch-all server: a disposable inbox takes any local part.
  ...mailDomain(DOMAINS.disposable, 'mail.mailinator.com', MX_IPS.catchall),
  [MX_HOSTS.bulk]: { A: [MX_IPS.bulk] },
  // RFC 7505: "MX 0 ." means the domain accepts no mail.
  [DOMAINS.nullmx]: { MX: [{ preference: 0, exchange: '.' }] },
  // RFC 5321 §5.1: no MX, so the domain's own address is its implicit MX.
  [DOMAINS.implicit]: { A: [MX_IPS.accept] },
  // Implicit MX over IPv6; nothing of the world listens on ::1, so connecting fails.
  [DOMAINS.ipv6]: { AAAA: ['::1'] },
  // The name exists but has no route for mail at all.
  [DOMAINS.nomail]: { TXT: ['v=spf1 -all'] },
  [DOMAINS.servfail]: { servfail: true },
  // Microsoft 365's records (learn.microsoft.com, "Add DNS records to connect your domain"):
  // the SPF include and the MS=ms… verification TXT, the autodiscover CNAME; the MX goes to
  // the gateway instead of the tenant's own host.
  [DOMAINS.gateway]: {
    MX: [{ preference: 10, exchange: MX_HOSTS.gateway }],
    TXT: ['v=spf1 include:spf.protection.outlook.com -all', 'MS=ms48213377'],
  },
  [`autodiscover.${DOMAINS.gateway}`]: { CNAME: 'autodiscover.outlook.com' },
  [MX_HOSTS.gateway]: { A: [MX_IPS.gateway] },
  [MX_HOSTS.tenant]: { A: [MX_IPS.tenant] },
  [DOMAINS.gatewayNoTenant]: {
    MX: [{ preference: 10, exchange: MX_HOSTS.gateway }],
    TXT: ['v=spf1 include:_spf.pphosted.com -all'],
  },
  [DOMAINS.gatewayTenantRefuses]: {
    MX: [{ preference: 10, exchange: MX_HOSTS.gateway }],
    TXT: ['v=spf1 include:spf.protection.outlook.com -all'],
  },
  [MX_HOSTS.tenantRelayDenied]: { A: [MX_IPS.tenantRelayDenied] },
  [DOMAINS.relayGateway]: {
    MX: [{ preference: 10, exchange: MX_HOSTS.relayGateway }],
    TXT: ['v=spf1 include:spf.protection.outlook.com -all', 'MS=ms70431895'],
  },
  [`autodiscover.${DOMAINS.relayGateway}`]: { CNAME: 'autodiscover.outlook.com' },
  [MX_HOSTS.relayGateway]: { A: [MX_IPS.relayGateway] },
  'selfrelayed-test.mail.protection.outlook.com': { A: [MX_IPS.tenant] },
});

/** The bulk domains of a world serving `count` of them: bulk-01.test … bulk-99.test, bulk-100.test … */
export function bulkDomainNames(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `bulk-${String(index + 1).padStart(2, '0')}.test`);
}

/** The tarpit domains, pit-001.test onwards: each its own MX name (mx.pit-001.test, …). */
export function tarpitDomainNames(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `pit-${String(index + 1).padStart(3, '0')}.test`);
}

/**
 * Zone entries of the tarpit domains: every MX name is the `exchange` server's address, which
 * holds each refused recipient for Exchange's default TarpitInterval of 5 s (defences.ts). A list
 * of them holds its probes' slots for seconds each, as a list of many such companies does.
 */
export function tarpitZone(count: number): Record<string, ZoneEntry> {
  return Object.assign(
    {},
    ...tarpitDomainNames(count).map((domain) => mailDomain(domain, `mx.${domain}`, MX_IPS.exchange)),
  );
}

/** Zone entries of the bulk domains: all hosted by the one fast `bulk` server. */
export function bulkZone(count: number): Record<string, ZoneEntry> {
  const entry: ZoneEntry = { MX: [{ preference: 10, exchange: MX_HOSTS.bulk }] };
  return Object.fromEntries(bulkDomainNames(count).map((domain) => [domain, entry]));
}

/** The company MX hosts of a world with `count` of them: mx1.company.test on 127.0.0.40, … */
export function companyHosts(count: number): { name: string; host: string; ip: string }[] {
  if (count < 1 || count > 50) throw new RangeError(`between 1 and 50 company MX hosts, not ${count}`);
  return Array.from({ length: count }, (_, index) => ({
    name: `company${index + 1}`,
    host: `mx${index + 1}.company.test`,
    ip: `127.0.0.${40 + index}`,
  }));
}

/** The company domains of a world serving `count` of them: company-001.test, company-002.test, … */
export function companyDomainNames(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `company-${String(index + 1).padStart(3, '0')}.test`);
}

/** Zone entries of the company domains, spread over the company hosts in turn (as hosting providers do). */
export function companyZone(domains: number, hosts: number): Record<string, ZoneEntry> {
  const servers = companyHosts(hosts);
  const zone: Record<string, ZoneEntry> = {};
  for (const server of servers) zone[server.host] = { A: [server.ip] };
  companyDomainNames(domains).forEach((domain, index) => {
    const server = servers[index % servers.length];
    if (server) zone[domain] = { MX: [{ preference: 10, exchange: server.host }], TXT: ['v=spf1 mx -all'] };
  });
  return zone;
}
