// The verdict rcpt must give each address of the world (docs/verdicts.md),
// for `npm run world`, the demo, and end-to-end tests. A deployment of the world allows private
// targets (ALLOW_PRIVATE_TARGETS), so its 127.0.0.x MX hosts are probed, not `unroutable_ip_address`.
import { companyDomainNames, DOMAINS } from './zone.ts';

export interface ExpectedVerdict {
  address: string;
  status: 'deliverable' | 'undeliverable' | 'risky' | 'unknown';
  subStatus: string;
  /** What the world does that leads there. */
  because: string;
  /** `meta.verifiedVia` and `checks.isCatchAll`, where the row is about them. */
  verifiedVia?: 'mx' | 'tenant';
  isCatchAll?: boolean;
}

export const EXPECTED_VERDICTS: readonly ExpectedVerdict[] = [
  {
    address: `alice@${DOMAINS.accept}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'RCPT 250, random address 550 5.1.1',
  },
  {
    address: `nobody@${DOMAINS.accept}`,
    status: 'undeliverable',
    subStatus: 'mailbox_not_found',
    because: 'RCPT 550 5.1.1 user unknown',
  },
  {
    address: `info@${DOMAINS.accept}`,
    status: 'risky',
    subStatus: 'role_based',
    because: 'accepted, but a role address',
  },
  {
    address: `anyone@${DOMAINS.catchall}`,
    status: 'risky',
    subStatus: 'catch_all',
    because: 'every RCPT 250, the random one too',
  },
  {
    address: `alice@${DOMAINS.greylist}`,
    status: 'unknown',
    subStatus: 'greylisted',
    because: 'RCPT 450 4.2.0 until the greylist delay passed (a batch retry then gets deliverable)',
  },
  {
    address: `alice@${DOMAINS.greylistMilter}`,
    status: 'unknown',
    subStatus: 'greylisted',
    because: 'RCPT 451 4.7.1 "Greylisting in action" until the delay passed (milter-greylist\'s wording)',
  },
  {
    address: `alice@${DOMAINS.full}`,
    status: 'risky',
    subStatus: 'mailbox_full',
    because: 'RCPT 552 5.2.2 mailbox full',
  },
  {
    address: `alice@${DOMAINS.disabled}`,
    status: 'undeliverable',
    subStatus: 'mailbox_disabled',
    because: 'RCPT 550 5.2.1 account disabled',
  },
  {
    address: `alice@${DOMAINS.rbl}`,
    status: 'unknown',
    subStatus: 'antispam_blocked',
    because: 'RCPT 554 5.7.1 client blocked using zen.spamhaus.org',
  },
  {
    address: `alice@${DOMAINS.policy}`,
    status: 'unknown',
    subStatus: 'antispam_blocked',
    because: 'RCPT 550 5.7.1 local policy',
  },
  {
    address: `alice@${DOMAINS.banner421}`,
    status: 'unknown',
    subStatus: 'mail_server_temporary_error',
    because: '421 4.7.0 at the greeting, then the server hangs up',
  },
  {
    address: `alice@${DOMAINS.tarpit}`,
    status: 'unknown',
    subStatus: 'smtp_timeout',
    because: 'TCP accepted, no greeting ever',
  },
  {
    address: `alice@${DOMAINS.starttls}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'STARTTLS offered (self-signed), RCPT 250',
  },
  {
    address: `alice@${DOMAINS.tlsrequired}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: '530 5.7.0 before STARTTLS, RCPT 250 after',
  },
  {
    address: `alice@${DOMAINS.connlimit}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'RCPT 250; a 4th concurrent connection gets 421 4.7.0 at the greeting',
  },
  {
    address: `alice@${DOMAINS.fallback}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'MX 10 refuses the connection, MX 20 answers RCPT 250',
  },
  {
    address: `anyone@${DOMAINS.utf8}`,
    status: 'risky',
    subStatus: 'catch_all',
    because: 'SMTPUTF8 advertised, every RCPT 250',
  },
  {
    address: `alice@${DOMAINS.disposable}`,
    status: 'risky',
    subStatus: 'disposable',
    because: 'a disposable provider; its MX is the catch-all server',
  },
  {
    address: `user1@${DOMAINS.bulk}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'the bulk server takes user… and the mailboxes',
  },
  {
    address: `nobody@${DOMAINS.bulk}`,
    status: 'undeliverable',
    subStatus: 'mailbox_not_found',
    because: 'the bulk server answers 550 5.1.1 to the rest',
  },
  {
    address: `alice@${DOMAINS.nullmx}`,
    status: 'undeliverable',
    subStatus: 'does_not_accept_mail',
    because: 'MX 0 . (RFC 7505 null MX)',
  },
  {
    address: `alice@${DOMAINS.implicit}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'no MX, A record of the accept server (RFC 5321 §5.1 implicit MX)',
  },
  {
    address: `alice@${DOMAINS.ipv6}`,
    status: 'unknown',
    subStatus: 'smtp_connection_failed',
    because: 'no MX, AAAA ::1 where nothing listens',
  },
  {
    address: `alice@${DOMAINS.nomail}`,
    status: 'undeliverable',
    subStatus: 'no_mx_record',
    because: 'the name exists with no MX, A or AAAA',
  },
  {
    address: `alice@${DOMAINS.servfail}`,
    status: 'unknown',
    subStatus: 'dns_error',
    because: 'the resolver answers SERVFAIL',
  },
  {
    address: `alice@${DOMAINS.nxdomain}`,
    status: 'undeliverable',
    subStatus: 'invalid_domain',
    because: 'NXDOMAIN',
  },
  {
    address: `alice@${DOMAINS.typo}`,
    status: 'undeliverable',
    subStatus: 'possible_typo',
    because: 'NXDOMAIN, and a typo of gmail.com',
  },
  {
    address: `alice@${DOMAINS.gateway}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'the Proofpoint MX takes every RCPT; the Microsoft 365 tenant (SPF, MS=ms TXT) answers 250',
    verifiedVia: 'tenant',
    isCatchAll: true,
  },
  {
    address: `nobody@${DOMAINS.gateway}`,
    status: 'undeliverable',
    subStatus: 'mailbox_not_found',
    because: 'the gateway takes it; the tenant answers 550 5.1.10 RecipientNotFound',
    verifiedVia: 'tenant',
    isCatchAll: true,
  },
  {
    address: `alice@${DOMAINS.relayGateway}`,
    status: 'deliverable',
    subStatus: 'accepted_email',
    because: 'a relay no registry names takes every RCPT; the Microsoft 365 tenant its DNS names answers 250',
    verifiedVia: 'tenant',
    isCatchAll: true,
  },
  {
    address: `nobody@${DOMAINS.relayGateway}`,
    status: 'undeliverable',
    subStatus: 'mailbox_not_found',
    because: 'the relay takes it; the tenant answers 550 5.1.10 RecipientNotFound',
    verifiedVia: 'tenant',
    isCatchAll: true,
  },
  {
    address: `alice@${DOMAINS.gatewayNoTenant}`,
    status: 'risky',
    subStatus: 'catch_all',
    because: 'the gateway takes every RCPT and DNS names no tenant behind it',
    verifiedVia: 'mx',
    isCatchAll: true,
  },
  {
    address: `alice@${DOMAINS.gatewayTenantRefuses}`,
    status: 'risky',
    subStatus: 'catch_all',
    because: 'the gateway takes every RCPT; the tenant answers 550 5.7.64 Relay Access Denied',
    verifiedVia: 'mx',
    isCatchAll: true,
  },
];

export interface CompanyListOptions {
  /** Addresses in the list; default 10,000. */
  count?: number;
  /** Company domains the list spreads over (company-001.test onwards); default 200. */
  domains?: number;
  /** Share of addresses whose mailbox does not exist; default 0.4. */
  unknownShare?: number;
}

/**
 * A list over the company domains as a customer would upload one: each domain gets an equal
 * block of addresses, and `unknownShare` of every block has no mailbox (left… local parts get
 * 550 5.1.1 on every company host; user… ones exist). Deterministic, with each address's verdict.
 */
export function companyList(options: CompanyListOptions = {}): ExpectedVerdict[] {
  const count = options.count ?? 10_000;
  const domains = companyDomainNames(options.domains ?? 200);
  const unknownShare = options.unknownShare ?? 0.4;
  const perDomain = Math.ceil(count / domains.length);
  return Array.from({ length: count }, (_, index): ExpectedVerdict => {
    const domain = domains[Math.floor(index / perDomain)] ?? domains[0];
    const position = index % perDomain;
    // Spreads the unknown ones evenly through each block: position p is unknown when the
    // running count of unknowns steps up at p.
    const unknown = Math.floor((position + 1) * unknownShare) > Math.floor(position * unknownShare);
    const number = String(index + 1).padStart(5, '0');
    return unknown
      ? {
          address: `left${number}@${domain}`,
          status: 'undeliverable',
          subStatus: 'mailbox_not_found',
          because:
            'RCPT 550 5.1.1 user unknown (Postfix defaults: error sleep and hang-up if asked carelessly)',
        }
      : {
          address: `user${number}@${domain}`,
          status: 'deliverable',
          subStatus: 'accepted_email',
          because: 'RCPT 250, random address 550 5.1.1',
        };
  });
}
