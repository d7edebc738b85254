// The fake mail world every test of rcpt runs against: one fake MX per server behaviour, each
// on its own 127.0.0.x address and all on one SMTP port, and a DNS-over-HTTPS stub that routes
// the world's domains to them. Nothing in it leaves the loopback interface.
import { createBehaviours, MAILBOXES, type SmtpBehaviourName } from './behaviours.ts';
import { EXCHANGE_TARPIT, type MxDefences, POSTFIX_DEFAULTS, POSTGREY_DELAY_MS } from './defences.ts';
import { startUdpDns } from './dns-udp.ts';
import { startDohStub } from './doh-stub.ts';
import { type FakeMx, type FakeMxSpec, type RunningMx, startSmtpMx, startTarpitMx } from './fake-mx.ts';
import { startFastMx } from './fast-mx.ts';
import { isAddressInUse } from './loopback.ts';
import { hasDistance, type RoundTrip, startNetworkPath } from './network-path.ts';
import { createSelfSignedCertificate } from './self-signed-certificate.ts';
import {
  bulkZone,
  companyDomainNames,
  companyHosts,
  companyZone,
  DEFENDED_DOMAINS,
  DOMAINS,
  dnsblZone,
  MX_HOSTS,
  MX_IPS,
  PROVIDER_HOSTS,
  tarpitZone,
  ZONE,
  type ZoneEntry,
} from './zone.ts';

export type { MxDefences, MxStats } from './defences.ts';
export {
  BLOCKLIST_ZONE,
  blocklistReply,
  EXCHANGE_TARPIT,
  POSTFIX_DEFAULTS,
  POSTGREY_DELAY_MS,
} from './defences.ts';
export {
  type CompanyListOptions,
  companyList,
  EXPECTED_VERDICTS,
  type ExpectedVerdict,
} from './expected-verdicts.ts';
export type { RoundTrip } from './network-path.ts';
export {
  bulkDomainNames,
  companyDomainNames,
  DEFENDED_DOMAINS,
  DOMAINS,
  EGRESS_PTR,
  PROVIDER_DOMAINS,
  PROVIDER_HOSTS,
  tarpitDomainNames,
  ZONE,
} from './zone.ts';
export type { FakeMx, ZoneEntry };

/**
 * The company scenario: Postfix's defaults on every host, except the connection count limit,
 * which is 20 sessions per client (Postfix's default is 50; many sites set fewer).
 */
export const COMPANY_DEFENCES: Readonly<MxDefences> = Object.freeze({
  ...POSTFIX_DEFAULTS,
  connectionCountLimit: 20,
});

/** The round trips a prober sees to mail servers across the internet (WorldOptions.roundTripMs). */
export const INTERNET_ROUND_TRIP: Readonly<RoundTrip> = Object.freeze({ min: 20, max: 80 });

export interface CompanyWorldOptions {
  /** company-001.test onwards; default 200. */
  domains?: number;
  /** MX hosts the domains are spread over, mx1.company.test onwards; default 4. */
  hosts?: number;
  /** Default COMPANY_DEFENCES. */
  defences?: MxDefences;
  /**
   * Client addresses on the block list of some company hosts (`hosts`, 1-based: mx1 is 1): those
   * hosts refuse them at every RCPT with Postfix's block-list reply and serve every other client.
   */
  blocklisted?: { clients: readonly string[]; hosts: readonly number[] };
}

export interface WorldOptions {
  /** One port shared by all fake MX addresses; default: a free one. */
  smtpPort?: number;
  /** Port of the DoH stub on 127.0.0.1; default: a free one. */
  dohPort?: number;
  /** Port of the plain UDP DNS server on 127.0.0.1 (for the system resolver); default: free port. */
  dnsPort?: number;
  /** How long a greylisted triplet must wait before it is accepted; default 1000. */
  greylistDelayMs?: number;
  /** How many bulk-NN.test domains to serve, all on the `bulk` server; default 50. */
  bulkDomains?: number;
  /** Defences of the `bulk` server; default none: instant and patient, for throughput figures. */
  bulkDefences?: MxDefences;
  /** How long the `slowgreylist` server defers a new triplet; default postgrey's 300 s. */
  slowGreylistDelayMs?: number;
  /** The company domains and their defended MX hosts. */
  companies?: CompanyWorldOptions;
  /**
   * Client addresses the world's Spamhaus ZEN zone lists (dnsblZone), as a prober's health check
   * looks them up (DNS_SERVERS = dnsServer); default none. The MX hosts refuse only the clients
   * `companies.blocklisted` and `blocklistedAtProvider` name.
   */
  zenListed?: readonly string[];
  /** Client addresses both of the provider family's MX hosts (PROVIDER_HOSTS) list; default none. */
  blocklistedAtProvider?: readonly string[];
  /** How many pit-NNN.test tarpit domains to serve (tarpitZone); default 100. */
  tarpitDomains?: number;
  /**
   * The round-trip time between the clients and every MX host (network-path.ts); default none:
   * loopback, where a server answers in microseconds.
   */
  roundTripMs?: RoundTrip;
}

export interface MailWorld {
  /** RFC 8484 endpoint: GET ?dns= (base64url) and POST application/dns-message. */
  dohUrl: string;
  smtpPort: number;
  /** The UDP DNS server as host:port (DNS_SERVERS for `rcpt-prober verify`). */
  dnsServer: string;
  /**
   * By behaviour name: accept, catchall, greylist, …, fallbackSecondary, utf8, bulk. With a
   * round trip, each server's own `port` is not `smtpPort`: that one reaches it over the path.
   */
  mx: Record<string, FakeMx>;
  /** Behaviour name → the domain to use for it. */
  domains: Record<string, string>;
  /** The defended servers' domains: postfix, exchange, onercpt, slowgreylist (also in `mx`). */
  defendedDomains: Record<keyof typeof DEFENDED_DOMAINS, string>;
  /** The company domains, company-001.test onwards. */
  companyDomains: string[];
  /** The company MX hosts (also in `mx` as company1, company2, …). */
  companyMx: FakeMx[];
  /** Local parts that exist on the servers that check mailboxes (`user…` ones exist too). */
  mailboxes: readonly string[];
  /** The DoH stub's counters. */
  doh: { queries(): number; resetStats(): void };
  /**
   * Changes the DNS of `name` from now on (null: the name no longer exists), as its owner would:
   * a moved MX, a domain let go. Both resolvers answer the new records at once.
   */
  setZone(name: string, entry: ZoneEntry | null): void;
  close(): Promise<void>;
}

// Names the STARTTLS servers' certificate is for; clients of the world do not verify it.
const CERTIFICATE_NAMES = [MX_HOSTS.starttls, MX_HOSTS.tlsrequired, '*.test'];
// How often to draw another free port when one of the 127.0.0.x addresses already uses it.
const PORT_ATTEMPTS = 5;

/** Starts the whole world; it is ready when the promise resolves. */
export async function startWorld(options: WorldOptions = {}): Promise<MailWorld> {
  const behaviours = createBehaviours({ greylistDelayMs: options.greylistDelayMs ?? 1000 });
  const companies = {
    domains: options.companies?.domains ?? 200,
    hosts: options.companies?.hosts ?? 4,
    defences: options.companies?.defences ?? COMPANY_DEFENCES,
  };
  const certificate = createSelfSignedCertificate(CERTIFICATE_NAMES);

  const starters: ((port: number) => Promise<RunningMx>)[] = [
    ...(Object.keys(behaviours) as SmtpBehaviourName[]).map(
      (name) => (port: number) => startSmtpMx(specOf(name), behaviours[name], port, certificate),
    ),
    (port: number) => startTarpitMx(specOf('tarpit'), port),
    (port: number) => startFastMx(specOf('bulk'), port, options.bulkDefences),
    (port: number) => startFastMx(specOf('postfix'), port, POSTFIX_DEFAULTS),
    (port: number) => startFastMx(specOf('exchange'), port, EXCHANGE_TARPIT),
    // A server that takes one recipient per transaction (smtpd_recipient_limit = 1).
    (port: number) => startFastMx(specOf('onercpt'), port, { recipientsPerTransaction: 1 }),
    (port: number) =>
      startFastMx(specOf('slowgreylist'), port, {
        greylistDelayMs: options.slowGreylistDelayMs ?? POSTGREY_DELAY_MS,
      }),
    ...companyHosts(companies.hosts).map((spec, index) => (port: number) => {
      const blocklisted = options.companies?.blocklisted;
      const listing = blocklisted?.hosts.includes(index + 1)
        ? { blocklistedClients: blocklisted.clients }
        : {};
      return startFastMx(spec, port, { ...companies.defences, ...listing });
    }),
    ...PROVIDER_HOSTS.map(
      (spec) => (port: number) =>
        startFastMx(spec, port, { blocklistedClients: options.blocklistedAtProvider ?? [] }),
    ),
  ];
  const roundTrip = hasDistance(options.roundTripMs) ? options.roundTripMs : null;
  const servers = await startOnOnePort(starters, roundTrip ? undefined : options.smtpPort);
  // With distance, the clients dial each server's address on the path's port, the server's own
  // port being another.
  const paths = roundTrip
    ? await startOnOnePort(
        servers.map(
          (server) => (port: number) =>
            startNetworkPath({ ip: server.ip, serverPort: server.port, roundTripMs: roundTrip }, port),
        ),
        options.smtpPort,
      ).catch(async (error: unknown) => {
        await Promise.all(servers.map((server) => server.close()));
        throw error;
      })
    : [];
  const listeners = [...servers, ...paths];
  const smtpPort = (paths[0] ?? servers[0])?.port ?? 0;

  const zone: Record<string, ZoneEntry> = {
    ...ZONE,
    ...bulkZone(options.bulkDomains ?? 50),
    ...companyZone(companies.domains, companies.hosts),
    ...tarpitZone(options.tarpitDomains ?? 100),
    ...dnsblZone(options.zenListed ?? []),
  };
  const doh = await startDohStub(zone, options.dohPort ?? 0).catch(async (error: unknown) => {
    await Promise.all(listeners.map((listener) => listener.close()));
    throw error;
  });

  const udpDns = await startUdpDns(zone, options.dnsPort ?? 0).catch(async (error: unknown) => {
    await Promise.all([doh.close(), ...listeners.map((listener) => listener.close())]);
    throw error;
  });

  let closing: Promise<void> | undefined;
  return {
    dohUrl: doh.url,
    smtpPort,
    dnsServer: udpDns.server,
    mx: Object.fromEntries(servers.map((server) => [server.name, server])),
    domains: { ...DOMAINS },
    defendedDomains: { ...DEFENDED_DOMAINS },
    companyDomains: companyDomainNames(companies.domains),
    companyMx: servers.filter((server) => server.name.startsWith('company')),
    mailboxes: MAILBOXES,
    doh: { queries: doh.queries, resetStats: doh.resetStats },
    setZone(name, entry) {
      if (entry === null) delete zone[name];
      else zone[name] = entry;
      doh.zoneChanged();
      udpDns.zoneChanged();
    },
    close() {
      closing ??= Promise.all([
        doh.close(),
        udpDns.close(),
        ...listeners.map((listener) => listener.close()),
      ]).then(() => {});
      return closing;
    },
  };
}

function specOf(name: keyof typeof MX_IPS): FakeMxSpec {
  return { name, host: MX_HOSTS[name], ip: MX_IPS[name] };
}

/**
 * Starts every server on `requestedPort`, or else on a free port: the first server binds port
 * 0 and the rest take the port it got. That port was only known free on the first address, so
 * if another address has it in use, everything is closed and a new port drawn.
 */
async function startOnOnePort<Listener extends { port: number; close(): Promise<void> }>(
  starters: readonly ((port: number) => Promise<Listener>)[],
  requestedPort: number | undefined,
): Promise<Listener[]> {
  const [startFirst, ...startRest] = starters;
  if (startFirst === undefined) return [];
  for (let attempt = 1; ; attempt++) {
    const started: Listener[] = [];
    try {
      const first = await startFirst(requestedPort ?? 0);
      started.push(first);
      const rest = await Promise.allSettled(startRest.map((start) => start(first.port)));
      for (const result of rest) if (result.status === 'fulfilled') started.push(result.value);
      const failure = rest.find((result) => result.status === 'rejected');
      if (failure) throw failure.reason;
      return started;
    } catch (error) {
      await Promise.all(started.map((server) => server.close()));
      if (requestedPort !== undefined || !isAddressInUse(error) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}
