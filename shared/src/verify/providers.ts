// The provider registry: what rcpt knows about the mail providers and security gateways that
// answer for a large share of the world's addresses, as data. Every part of rcpt reads it:
// the verdict's `meta.provider`, the SMTP reply table (each provider's own reply rows), and the
// prober (whether an RCPT answer means anything, how many sessions a provider tolerates, the
// `provider` label of its metrics). A provider is recognised by the address's domain or by the
// domain's MX hosts, as Reacher's rules are (by domain, by MX suffix).
//
// The lookup (`findProvider`): the domain's own name decides first (gmail.com is Gmail whatever
// its MX says) — an exact domain of any entry, then a brand's country variant — and otherwise
// the first MX host, in the order given (preference order), whose name ends in an entry's MX
// suffix. So a gateway in front of Google Workspace is found as the gateway.
import { getPublicSuffix } from 'tldts';
import { isFreeProviderDomain } from './lists.ts';
import type { ReplyRule } from './reply-rule.ts';

/**
 * What an RCPT answer from the provider's MX says about a mailbox:
 * - `verifiable`: 250 for a mailbox that exists, a mailbox code for one that does not;
 * - `accepts_everything`: 250 for any local part, a bounce afterwards: a probe cannot tell a
 *   real mailbox from a made-up one, so the prober does not connect and the answer is
 *   `unknown / provider_unverifiable`;
 * - `unverifiable`: the provider refuses or ignores verification probes; treated like
 *   `accepts_everything` (no connection, `provider_unverifiable`).
 */
export type RcptTrust = 'verifiable' | 'accepts_everything' | 'unverifiable';

/**
 * What the prober keeps to so that the provider goes on answering. Per-MX-address limits come
 * from the prober's own configuration (PER_MX_CONCURRENCY) and what it learns from each host;
 * this is what a provider needs on top of them.
 */
export interface Politeness {
  /** Sessions open at once to all of the provider's MX hosts together. */
  readonly maxSessions?: number;
}

/** Where a provider's reply row sits in the reply table (smtp-reply.ts explains the order). */
export type ReplyQuirkSection =
  /** Before the policy vocabulary: documented replies that are not a mailbox verdict. */
  | 'provider'
  /** Among the mailbox rows at RCPT: the provider's own wording or code for a mailbox state. */
  | 'mailbox';

/** One row of the reply table that exists because of one provider. */
export interface ReplyQuirk extends ReplyRule {
  readonly section: ReplyQuirkSection;
  /** A reply the provider sends that this row is for, one line as the server wrote it. */
  readonly example: string;
}

/** A security gateway's relation to the mailbox hosts behind it. */
export interface GatewayFacts {
  /**
   * Ids of the mailbox providers whose tenants commonly sit behind this gateway (Microsoft 365,
   * Google Workspace), in the order tenant detection tries them. The gateway takes every RCPT
   * for its customers' domains, so the answer it gives is the gateway's; the tenant behind it,
   * found from DNS by each provider's `tenant` signals (shared/src/dns/mail-tenant.ts), answers
   * per mailbox.
   */
  readonly fronts: readonly string[];
}

/**
 * How a domain shows, in its own DNS, that it has a tenant at a mailbox provider, and where that
 * tenant takes mail directly. Each list is matched case-insensitively.
 */
export interface TenantSignals {
  /** `include:` targets of the domain's SPF record (RFC 7208 §5.2) that only the provider's customers publish. */
  readonly spfIncludes: readonly string[];
  /** Prefixes of the TXT records the provider has a customer publish to prove the domain is theirs. */
  readonly verificationTxtPrefixes: readonly string[];
  /** Where `autodiscover.<domain>` points (a CNAME) for the provider's customers. */
  readonly autodiscoverTargets: readonly string[];
  /**
   * The tenant's own inbound host: one `host` for every customer, or the domain with each '.'
   * turned into `replaceDotsWith`, followed by `suffix` (a host that exists only while the
   * provider serves the domain, so detection confirms it resolves before using it).
   */
  readonly inbound:
    | { readonly kind: 'fixed'; readonly host: string }
    | { readonly kind: 'from_domain'; readonly replaceDotsWith: string; readonly suffix: string };
}

/**
 * How the provider reads the local part of its own addresses (docs/money.md, "Free credits"):
 * which spellings reach one mailbox.
 */
export interface LocalPartRules {
  /** Dots in the local part are ignored: `j.smith` and `jsmith` are one mailbox. */
  readonly ignoresDots?: boolean;
  /**
   * The sub-address separator (RFC 5233: "ken+sieve" reaches the mailbox of "ken"): what follows
   * it reaches the same mailbox. Null: the provider has none. Default (not set): `+`.
   */
  readonly subaddressSeparator?: string | null;
}

export interface MailProvider {
  /** Stable key: the prober's session pool, its metrics' `provider` label, logs. */
  readonly id: string;
  /** Human name, for logs and messages. */
  readonly name: string;
  /** `meta.provider` for an address at one of the provider's own domains (or brand variants). */
  readonly family: string;
  /** `meta.provider` for another domain whose MX is the provider's; default `family`. */
  readonly hostedFamily?: string;
  /** The provider's own mail domains, exactly (the part after @, lower-case A-labels). */
  readonly domains: readonly string[];
  /**
   * Brand names whose country variants (yahoo.co.uk, hotmail.fr, gmx.at …) are the provider's.
   * A variant counts only when it is the registrable name and on the free-provider list, which
   * is what says the variant exists: "hotmail.co" is a misspelling, not Microsoft's.
   */
  readonly brands?: readonly string[];
  /** MX host name suffixes, matched at a label boundary ("notgoogle.com" is not google.com's). */
  readonly mxSuffixes: readonly string[];
  readonly rcpt: RcptTrust;
  readonly politeness?: Politeness;
  /** The provider's rows in the reply table. */
  readonly replyQuirks?: readonly ReplyQuirk[];
  /** Set for a security gateway in front of other providers' tenants; absent for a mailbox provider. */
  readonly gateway?: GatewayFacts;
  /** Set for a mailbox provider whose customers' tenants can be found from their DNS behind a gateway. */
  readonly tenant?: TenantSignals;
  /** How the provider's own domains read a local part; absent: the defaults of `LocalPartRules`. */
  readonly localPart?: LocalPartRules;
  /**
   * What the provider's receivers are known to check of a connecting client beyond the lists
   * most receivers use; the prober keeps an egress that fails them away from the provider
   * (docs/operations.md, "Egress addresses"). Absent: nothing known.
   */
  readonly clientChecks?: ClientChecks;
}

/** A receiver's checks of the client (the sending address) before it answers RCPT. */
export interface ClientChecks {
  /** Refuses a client without forward-confirmed reverse DNS (and a HELO name matching it). */
  readonly reverseDns: boolean;
  /** DNSBL zones (lower-case) it refuses a listed client on. */
  readonly blocklists: readonly string[];
}

const TEMPORARY = [400, 499] as const;
const FAILURE = [400, 599] as const;
const PERMANENT = [500, 599] as const;

/** The registry. Entry order matters only for reply rows: a section's rows are read in this order. */
export const PROVIDERS: readonly MailProvider[] = [
  {
    id: 'google',
    // "550 5.7.25 The IP address sending this message does not have a PTR record setup"
    // (support.google.com/mail/answer/81126).
    clientChecks: { reverseDns: true, blocklists: [] },
    name: 'Google (Gmail, Google Workspace)',
    family: 'gmail',
    hostedFamily: 'google_workspace',
    domains: ['gmail.com', 'googlemail.com'],
    // gmail-smtp-in.l.google.com, aspmx.l.google.com, smtp.google.com, aspmx2.googlemail.com
    mxSuffixes: ['google.com', 'googlemail.com'],
    rcpt: 'verifiable',
    // Gmail ignores dots in the local part of gmail.com addresses ("Dots don't matter in Gmail
    // addresses", support.google.com/mail/answer/7436150); a Google Workspace domain's dots do
    // matter, which is why this applies to the provider's own domains only.
    localPart: { ignoresDots: true, subaddressSeparator: '+' },
    // Gmail and Google Workspace MX hosts rate-limit with 421 4.7.28 when one client opens many
    // sessions; 20 at once across all of them keeps a prober clear of it.
    politeness: { maxSessions: 20 },
    // Google Workspace: SPF "v=spf1 include:_spf.google.com ~all" (support.google.com/a/answer/33786),
    // domain verification "google-site-verification=…" TXT (support.google.com/a/answer/183895),
    // inbound mail at aspmx.l.google.com for every customer domain (support.google.com/a/answer/140034).
    tenant: {
      spfIncludes: ['_spf.google.com'],
      verificationTxtPrefixes: ['google-site-verification='],
      autodiscoverTargets: [],
      inbound: { kind: 'fixed', host: 'aspmx.l.google.com' },
    },
    replyQuirks: [
      // Gmail 4.2.1: this recipient is receiving mail faster than Gmail will accept it.
      {
        id: 'gmail-receiving-rate',
        section: 'provider',
        code: TEMPORARY,
        enhanced: '4.2.1',
        text: /receiving mail (at a rate|too quickly)/i,
        subStatus: 'mail_server_temporary_error',
        retry: 'throttle',
        example:
          '450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered.',
      },
    ],
  },
  {
    id: 'microsoft',
    // Outlook.com requires valid reverse DNS of the connecting address
    // (sendersupport.olc.protection.outlook.com/pm/policies.aspx).
    clientChecks: { reverseDns: true, blocklists: [] },
    name: 'Microsoft (Outlook.com, Microsoft 365)',
    family: 'microsoft',
    domains: ['outlook.com', 'hotmail.com', 'live.com', 'msn.com', 'passport.com', 'windowslive.com'],
    brands: ['hotmail', 'outlook', 'live', 'msn'],
    // <tenant>.mail.protection.outlook.com (Microsoft 365), hotmail-com.olc.protection.outlook.com
    // (Outlook.com), mx1.hotmail.com
    mxSuffixes: ['outlook.com', 'hotmail.com'],
    rcpt: 'verifiable',
    // Plus addressing (learn.microsoft.com/exchange/recipients-in-exchange-online/plus-addressing-in-exchange-online).
    localPart: { subaddressSeparator: '+' },
    // Microsoft 365 (learn.microsoft.com/microsoft-365/admin/get-help-with-domains/create-dns-records-at-any-dns-hosting-provider):
    // the verification TXT "MS=ms<digits>", SPF "v=spf1 include:spf.protection.outlook.com -all",
    // the CNAME autodiscover.<domain> → autodiscover.outlook.com, and the MX
    // <domain with '.' → '-'>.mail.protection.outlook.com, which Exchange Online Protection
    // answers for the tenant's verified domains only. Domains provisioned on the newer
    // <domain>-<tld>.<id>.mx.microsoft names (for DNSSEC, since 2024) carry an id the domain's DNS
    // does not show: unless the older name resolves too, no tenant is found for them.
    tenant: {
      spfIncludes: ['spf.protection.outlook.com'],
      verificationTxtPrefixes: ['ms=ms'],
      autodiscoverTargets: ['autodiscover.outlook.com'],
      inbound: { kind: 'from_domain', replaceDotsWith: '-', suffix: 'mail.protection.outlook.com' },
    },
    replyQuirks: [
      // Microsoft: "451 4.7.500 Server busy. Please try again later from [ip]. (S77714)".
      {
        id: 'microsoft-server-busy',
        section: 'provider',
        code: TEMPORARY,
        text: /server busy/i,
        subStatus: 'mail_server_temporary_error',
        retry: 'throttle',
        example: '451 4.7.500 Server busy. Please try again later from [203.0.113.7]. (S77714)',
      },
      // Microsoft 365 Directory-Based Edge Blocking: the recipient is not in the tenant's
      // directory. The "Access denied" wording is Microsoft's, the meaning is "no such recipient".
      {
        id: 'microsoft-dbeb',
        section: 'mailbox',
        code: 550,
        enhanced: '5.4.1',
        text: /AS\(201806281\)|Recipient address rejected: Access denied/,
        stage: ['rcpt'],
        subStatus: 'mailbox_not_found',
        example: '550 5.4.1 Recipient address rejected: Access denied. AS(201806281)',
      },
      // Exchange and Microsoft 365: "5.1.10 RESOLVER.ADR.RecipientNotFound" (RFC 3463 defines
      // X.1.0–X.1.8; X.1.10 is Exchange's own).
      {
        id: 'mailbox-unknown-5.1.10',
        section: 'mailbox',
        code: PERMANENT,
        enhanced: '5.1.10',
        stage: ['rcpt'],
        subStatus: 'mailbox_not_found',
        example: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
      },
    ],
  },
  {
    id: 'yahoo',
    // Yahoo asks for valid reverse DNS of the sending address (senders.yahooinc.com/best-practices/).
    clientChecks: { reverseDns: true, blocklists: [] },
    name: 'Yahoo and AOL',
    family: 'yahoo',
    domains: ['yahoo.com', 'ymail.com', 'rocketmail.com', 'aol.com', 'aim.com'],
    brands: ['yahoo', 'aol'],
    mxSuffixes: ['yahoodns.net'], // mta5.am0.yahoodns.net, mx-aol.mail.gm0.yahoodns.net
    // Yahoo and AOL answer 250 to RCPT TO for any local part and bounce afterwards.
    rcpt: 'accepts_everything',
    replyQuirks: [
      // Yahoo: "[TSS04] Messages from … temporarily deferred due to unexpected volume or user
      // complaints" (postmaster.yahooinc.com/error-codes).
      {
        id: 'yahoo-tss-deferral',
        section: 'provider',
        code: TEMPORARY,
        text: /\[TSS?\d\d\]/,
        subStatus: 'antispam_blocked',
        blames: 'client',
        example:
          '421 4.7.0 [TSS04] Messages from 203.0.113.7 temporarily deferred due to unexpected volume or user complaints',
      },
      // Yahoo: "553 VS99-IP1 deferred" refuses the connection; "451 VS1-IP Excessive unknown
      // recipients" deprioritises it (help.yahoo.com, "Email sent to Yahoo Mail addresses is rejected").
      {
        id: 'yahoo-vs-refusal',
        section: 'provider',
        code: FAILURE,
        text: /\bVS\d+-(IP|MF)\d*\b/,
        subStatus: 'antispam_blocked',
        blames: 'client',
        example: '553 VS99-IP1 deferred',
      },
    ],
  },
  {
    id: 'apple',
    name: 'Apple iCloud Mail',
    family: 'apple',
    domains: ['icloud.com', 'me.com', 'mac.com'],
    mxSuffixes: ['icloud.com'], // mx01.mail.icloud.com
    rcpt: 'verifiable',
  },
  {
    id: 'proton',
    name: 'Proton Mail',
    family: 'proton',
    domains: ['proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me'],
    mxSuffixes: ['protonmail.ch'], // mail.protonmail.ch, mailsec.protonmail.ch
    rcpt: 'verifiable',
  },
  {
    id: 'zoho',
    name: 'Zoho Mail',
    family: 'zoho',
    domains: ['zoho.com', 'zohomail.com', 'zoho.eu', 'zohomail.eu'],
    mxSuffixes: ['zoho.com', 'zoho.eu', 'zoho.in', 'zoho.com.au', 'zoho.jp', 'zohomail.com'],
    rcpt: 'verifiable',
  },
  {
    id: 'yandex',
    name: 'Yandex Mail',
    family: 'yandex',
    domains: ['yandex.ru', 'yandex.com', 'ya.ru'],
    brands: ['yandex'],
    mxSuffixes: ['yandex.net', 'yandex.ru'],
    rcpt: 'verifiable',
  },
  {
    id: 'gmx',
    name: 'GMX and WEB.DE',
    family: 'gmx',
    domains: ['gmx.de', 'gmx.net', 'gmx.com', 'web.de'],
    brands: ['gmx'],
    mxSuffixes: ['gmx.net', 'gmx.com', 'web.de'], // mx00.gmx.net, mx-ha03.web.de
    rcpt: 'verifiable',
  },
  {
    id: 'mail_ru',
    name: 'Mail.ru',
    family: 'mail_ru',
    domains: ['mail.ru', 'inbox.ru', 'list.ru', 'bk.ru', 'internet.ru'],
    mxSuffixes: ['mail.ru'], // mxs.mail.ru
    rcpt: 'verifiable',
  },
  {
    id: 'fastmail',
    name: 'Fastmail',
    family: 'fastmail',
    domains: ['fastmail.com', 'fastmail.fm'],
    brands: ['fastmail'],
    mxSuffixes: ['messagingengine.com', 'fastmail.com'], // in1-smtp.messagingengine.com
    rcpt: 'verifiable',
  },

  // Security gateways: they take a company's mail first and pass it on to its mailbox host.
  {
    id: 'proofpoint',
    name: 'Proofpoint',
    family: 'proofpoint',
    domains: [],
    mxSuffixes: ['pphosted.com', 'ppe-hosted.com'], // mx0a-<id>.pphosted.com; Proofpoint Essentials
    rcpt: 'verifiable',
    gateway: { fronts: ['microsoft', 'google'] },
  },
  {
    id: 'mimecast',
    name: 'Mimecast',
    family: 'mimecast',
    domains: [],
    mxSuffixes: ['mimecast.com', 'mimecast.co.za'], // us-smtp-inbound-1.mimecast.com
    rcpt: 'verifiable',
    gateway: { fronts: ['microsoft', 'google'] },
    replyQuirks: [
      // Mimecast documents 451 "Internal resource(s) temporarily unavailable" as its
      // greylisting, holding a new (IP, sender, recipient) triplet for 60 seconds.
      {
        id: 'mimecast-greylisting',
        section: 'provider',
        code: 451,
        text: /internal resources? (is |are )?temporarily unavailable/i,
        subStatus: 'greylisted',
        retryAfterSeconds: 60,
        example: '451 Internal resources are temporarily unavailable. Please try again later.',
      },
    ],
  },
  {
    id: 'broadcom',
    name: 'Broadcom Email Security.cloud (Symantec, MessageLabs)',
    family: 'broadcom',
    domains: [],
    mxSuffixes: ['messagelabs.com'], // cluster1.eu.messagelabs.com
    rcpt: 'verifiable',
    gateway: { fronts: ['microsoft', 'google'] },
  },
  {
    id: 'barracuda',
    // The gateway refuses clients on Barracuda's own Reputation Block List
    // (barracudacentral.org/rbl).
    clientChecks: { reverseDns: false, blocklists: ['b.barracudacentral.org'] },
    name: 'Barracuda Email Security Service',
    family: 'barracuda',
    domains: [],
    mxSuffixes: ['barracudanetworks.com'], // <id>.ess.barracudanetworks.com
    rcpt: 'verifiable',
    gateway: { fronts: ['microsoft', 'google'] },
  },
  {
    id: 'cisco',
    name: 'Cisco Secure Email Cloud Gateway',
    family: 'cisco',
    domains: [],
    // Cisco's hosted gateway answers at mx1.<customer>.iphmx.com in every region.
    mxSuffixes: ['iphmx.com'],
    rcpt: 'verifiable',
    gateway: { fronts: ['microsoft', 'google'] },
  },
];

/** A provider and how it was recognised. */
export interface ProviderMatch {
  provider: MailProvider;
  /** `domain`: the address's own domain is the provider's; `mx`: the domain's MX host is. */
  by: 'domain' | 'mx';
}

export interface ProviderRegistry {
  readonly providers: readonly MailProvider[];
  /** The provider that answers for `domain`, whose MX hosts are `mxHosts`, or null. */
  find(domain: string, mxHosts?: readonly string[]): ProviderMatch | null;
  /** The entry with this id, or null. */
  byId(id: string): MailProvider | null;
}

/**
 * A registry over `providers`, checked once: ids, domains, brands and MX suffixes are each
 * claimed by one entry only, written lower-case, as are the blocklists of its client checks.
 * Throws on a bad table.
 */
export function createProviderRegistry(providers: readonly MailProvider[]): ProviderRegistry {
  // Maps, not records: a record would answer "constructor" from its prototype.
  const byId = new Map<string, MailProvider>();
  const byDomain = new Map<string, MailProvider>();
  const byBrand = new Map<string, MailProvider>();
  const bySuffix = new Map<string, MailProvider>();
  const claim = (table: Map<string, MailProvider>, what: string, key: string, provider: MailProvider) => {
    if (key !== normaliseHost(key) || key === '')
      throw new Error(`${provider.id}: ${what} ${key} is not lower-case`);
    const owner = table.get(key);
    if (owner) throw new Error(`${what} ${key} is claimed by ${owner.id} and ${provider.id}`);
    table.set(key, provider);
  };
  for (const provider of providers) {
    claim(byId, 'id', provider.id, provider);
    for (const domain of provider.domains) claim(byDomain, 'domain', domain, provider);
    for (const brand of provider.brands ?? []) claim(byBrand, 'brand', brand, provider);
    for (const suffix of provider.mxSuffixes) claim(bySuffix, 'MX suffix', suffix, provider);
    // The egress health check reports blocklist zones lower-case, as they are compared.
    for (const zone of provider.clientChecks?.blocklists ?? [])
      if (zone !== normaliseHost(zone) || zone === '')
        throw new Error(`${provider.id}: blocklist ${zone} is not lower-case`);
  }

  const ofDomain = (domain: string): MailProvider | null => {
    const named = byDomain.get(domain);
    if (named) return named;
    const dot = domain.indexOf('.');
    if (dot < 0) return null;
    const brand = byBrand.get(domain.slice(0, dot));
    if (!brand) return null;
    // The brand must be the registrable name (yahoo.co.uk, not yahoo.example.com).
    if (getPublicSuffix(domain) !== domain.slice(dot + 1) || !isFreeProviderDomain(domain)) return null;
    return brand;
  };

  const ofMxHost = (host: string): MailProvider | null => {
    // Each parent name of the host, longest first: the most specific suffix wins.
    for (let name = host; ; ) {
      const provider = bySuffix.get(name);
      if (provider) return provider;
      const dot = name.indexOf('.');
      if (dot < 0) return null;
      name = name.slice(dot + 1);
    }
  };

  return {
    providers,
    find(domain, mxHosts = []) {
      // An address literal ([192.0.2.1]) names no provider.
      if (domain.startsWith('[')) return null;
      const own = ofDomain(normaliseHost(domain));
      if (own) return { provider: own, by: 'domain' };
      for (const host of mxHosts) {
        const provider = ofMxHost(normaliseHost(host));
        if (provider) return { provider, by: 'mx' };
      }
      return null;
    },
    byId: (id) => byId.get(id) ?? null,
  };
}

/** The registry of `PROVIDERS`: what rcpt runs with. */
export const PROVIDER_REGISTRY: ProviderRegistry = createProviderRegistry(PROVIDERS);

/** `meta.provider` for `domain` with these MX hosts: the provider family, or null. */
export function providerFamilyOf(
  domain: string,
  mxHosts: readonly string[] = [],
  registry: ProviderRegistry = PROVIDER_REGISTRY,
): string | null {
  const match = registry.find(domain, mxHosts);
  if (!match) return null;
  return match.by === 'mx' ? (match.provider.hostedFamily ?? match.provider.family) : match.provider.family;
}

/** Whether a probe of the provider's MX can tell a real mailbox from a made-up one. */
export function rcptTells(provider: MailProvider): boolean {
  return provider.rcpt === 'verifiable';
}

/** Sessions open at once to all of a provider's MX hosts, by provider id, for the providers that set it. */
export function providerSessionLimits(registry: ProviderRegistry = PROVIDER_REGISTRY): Map<string, number> {
  const limits = new Map<string, number>();
  for (const provider of registry.providers) {
    const maxSessions = provider.politeness?.maxSessions;
    if (maxSessions !== undefined) limits.set(provider.id, maxSessions);
  }
  return limits;
}

/** Every provider's own mail domains: known names that are never "corrected" as typos. */
export const PROVIDER_DOMAINS: readonly string[] = PROVIDERS.flatMap((provider) => provider.domains);

/** The reply rows the providers add to one section of the reply table, in registry order. */
export function providerReplyRules(section: ReplyQuirkSection): readonly ReplyRule[] {
  return PROVIDERS.flatMap((provider) =>
    (provider.replyQuirks ?? [])
      .filter((quirk) => quirk.section === section)
      .map(({ section: _section, example: _example, ...rule }) => rule),
  );
}

// DNS names compare case-insensitively (RFC 4343), and a final dot only marks them absolute.
function normaliseHost(host: string): string {
  const lower = host.trim().toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}
