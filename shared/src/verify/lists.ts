// What maintained lists say about an address: disposable domain, free mailbox provider,
// role mailbox, and which provider family runs the mail. Every set is built once at module
// load; a lookup is a handful of Set probes.
//
// Sources (bundled npm packages, no network):
//   disposable  mailchecker 6.0.21 (MIT) ∪ disposable-email-domains-js 1.26.0 (CC0-1.0, the
//               disposable-email-domains project's list)
//   free        company-email-validator 1.2.7 (Unlicense), minus the corrections below
//   public suffixes  tldts 7.5.4 (MIT), only to stop a parent-domain match at a public suffix
import { isCompanyDomain } from 'company-email-validator';
import { disposableEmailBlocklist } from 'disposable-email-domains-js';
import mailchecker from 'mailchecker';
import { getPublicSuffix } from 'tldts';
import type { ListFacts } from './inputs.ts';

/**
 * Both disposable lists as one set. Their entries are already lower-case A-label names, as
 * checkSyntax's domains are (lists.test.ts checks that for every entry).
 */
const DISPOSABLE_DOMAINS: ReadonlySet<string> = new Set([
  ...mailchecker.blacklist(),
  ...disposableEmailBlocklist(),
]);

/**
 * Entries of the free-provider list that are no mailbox provider: misspellings of a provider's
 * domain, which the list carries so that its users treat them as "not a company" (rcpt
 * suggests the intended domain for them instead), and example.com, reserved by RFC 2606 §3.
 */
export const FREE_LIST_CORRECTIONS: ReadonlySet<string> = new Set([
  'ayahoo.com',
  'comast.net',
  'example.com',
  'gmail.cm',
  'gmail.co',
  'gmail.om',
  'hitmail.com',
  'hotmail.cm',
  'hotmail.co',
  'hotmail.con',
  'lyahoo.com',
  'outloook.com',
  'pyahoo.com',
  'sbcglbal.net',
  'vahoo.com',
  'yaboo.com',
  'yahho.co.uk',
  'yahhoo.com',
  'yahon.com',
  'yahoo.cm',
  'yahoo.co',
  'yahoo.om',
  'yaoo.com',
  'yayoo.com',
  'yhoo.com',
]);

// The private section of the Public Suffix List counts too: ddns.net, pp.ua or dns.army hand
// out names to unrelated people, and the lists name the throwaway ones among them one by one.
const PUBLIC_SUFFIX_OPTIONS = { allowPrivateDomains: true };

/**
 * Whether the domain, or a parent of it, is on a disposable list: subdomains of a throwaway
 * service (x.mailinator.com) are as disposable as the service, but a listed parent that is a
 * public suffix ("ddns.net", "nom.za") does not taint the names registered under it.
 */
export function isDisposableDomain(domain: string): boolean {
  if (DISPOSABLE_DOMAINS.has(domain)) return true;
  let dot = domain.indexOf('.');
  while (dot >= 0) {
    const parent = domain.slice(dot + 1);
    const next = parent.indexOf('.');
    if (next < 0) return false; // a bare top-level domain is never a list entry
    if (DISPOSABLE_DOMAINS.has(parent)) return getPublicSuffix(parent, PUBLIC_SUFFIX_OPTIONS) !== parent;
    dot = dot + 1 + next;
  }
  return false;
}

/** Whether the domain is a free mailbox provider's; a disposable domain is disposable first. */
export function isFreeProviderDomain(domain: string): boolean {
  return isOnFreeList(domain) && !isDisposableDomain(domain);
}

function isOnFreeList(domain: string): boolean {
  return !isCompanyDomain(domain) && !FREE_LIST_CORRECTIONS.has(domain);
}

// ---------------------------------------------------------------------------------------------
// Role mailboxes. The rule: lower-case the local part, drop a "+tag" (RFC 5233 subaddress),
// drop the separators '.', '-' and '_', and compare the rest whole with ROLE_LOCAL_PARTS.
// So "No-Reply", "no_reply", "no.reply+x" and "noreply" match; "info.uk" ("infouk") and
// "sales2" do not: a person's address that merely starts with a role word is not a role.
// ---------------------------------------------------------------------------------------------

/** Role local parts, written without separators. RFC 2142 names come first. */
export const ROLE_LOCAL_PARTS: ReadonlySet<string> = new Set([
  // RFC 2142 §3–§5: business, network operations and service mailboxes.
  'info',
  'marketing',
  'sales',
  'support',
  'abuse',
  'noc',
  'security',
  'postmaster',
  'hostmaster',
  'usenet',
  'news',
  'webmaster',
  'www',
  'uucp',
  'ftp',
  // Mail system and automated senders.
  'mailerdaemon',
  'noreply',
  'donotreply',
  'nobody',
  'devnull',
  'bounce',
  'bounces',
  'notifications',
  'notification',
  'alerts',
  'listserv',
  'majordomo',
  'root',
  'sysadmin',
  'dns',
  // Administration and IT.
  'admin',
  'administrator',
  'it',
  'tech',
  'techsupport',
  'helpdesk',
  'help',
  'spam',
  // Contact points.
  'contact',
  'contactus',
  'hello',
  'hi',
  'enquiries',
  'enquiry',
  'inquiries',
  'inquiry',
  'information',
  'feedback',
  'office',
  'reception',
  'team',
  'staff',
  'all',
  'everyone',
  'mail',
  'email',
  // Customers and orders.
  'service',
  'services',
  'customerservice',
  'customersupport',
  'customercare',
  'care',
  'orders',
  'order',
  'shop',
  'store',
  'bookings',
  'booking',
  'reservations',
  'returns',
  'refunds',
  // Money and legal.
  'billing',
  'accounts',
  'accounting',
  'accountspayable',
  'invoices',
  'invoice',
  'payments',
  'finance',
  'purchasing',
  'procurement',
  'legal',
  'compliance',
  'privacy',
  'gdpr',
  'dpo',
  'dataprotection',
  'investors',
  'ir',
  // People and outreach.
  'jobs',
  'careers',
  'hr',
  'recruiting',
  'recruitment',
  'hiring',
  'press',
  'media',
  'pr',
  'newsletter',
  'events',
  'partners',
  'community',
  'social',
  'subscribe',
  'unsubscribe',
]);

const ROLE_SEPARATORS = /[.\-_]/g;

/** Whether the local part names a role rather than a person (the rule is above). */
export function isRoleLocalPart(localPart: string): boolean {
  let name = localPart;
  // A quoted local part ("info"@…) names the same mailbox as the unquoted one.
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1);
  const plus = name.indexOf('+');
  if (plus >= 0) name = name.slice(0, plus);
  name = name.toLowerCase();
  return ROLE_LOCAL_PARTS.has(name) || ROLE_LOCAL_PARTS.has(name.replace(ROLE_SEPARATORS, ''));
}

// ---------------------------------------------------------------------------------------------
// Provider families. A domain's own name decides first (gmail.com is gmail whatever its MX
// says); otherwise the first MX host, in the order given, whose name ends in a known suffix.
// ---------------------------------------------------------------------------------------------

/** Mailbox domains and the family that runs them. */
export const PROVIDER_BY_DOMAIN: Readonly<Record<string, string>> = {
  'gmail.com': 'gmail',
  'googlemail.com': 'gmail',
  'outlook.com': 'microsoft',
  'hotmail.com': 'microsoft',
  'live.com': 'microsoft',
  'msn.com': 'microsoft',
  'passport.com': 'microsoft',
  'windowslive.com': 'microsoft',
  'yahoo.com': 'yahoo',
  'ymail.com': 'yahoo',
  'rocketmail.com': 'yahoo',
  'aol.com': 'yahoo',
  'aim.com': 'yahoo',
  'icloud.com': 'apple',
  'me.com': 'apple',
  'mac.com': 'apple',
  'proton.me': 'proton',
  'protonmail.com': 'proton',
  'protonmail.ch': 'proton',
  'pm.me': 'proton',
  'zoho.com': 'zoho',
  'zohomail.com': 'zoho',
  'zoho.eu': 'zoho',
  'zohomail.eu': 'zoho',
  'yandex.ru': 'yandex',
  'yandex.com': 'yandex',
  'ya.ru': 'yandex',
  'gmx.de': 'gmx',
  'gmx.net': 'gmx',
  'gmx.com': 'gmx',
  'web.de': 'gmx',
  'mail.ru': 'mail_ru',
  'inbox.ru': 'mail_ru',
  'list.ru': 'mail_ru',
  'bk.ru': 'mail_ru',
  'internet.ru': 'mail_ru',
  'fastmail.com': 'fastmail',
  'fastmail.fm': 'fastmail',
};

/**
 * Brand names whose country variants (yahoo.co.uk, hotmail.fr, gmx.at …) belong to the same
 * family. A variant counts only when it is on the free-provider list, which is what says the
 * variant exists: "hotmail.co" is a misspelling, not Microsoft's.
 */
export const PROVIDER_BY_BRAND: Readonly<Record<string, string>> = {
  yahoo: 'yahoo',
  aol: 'yahoo',
  hotmail: 'microsoft',
  outlook: 'microsoft',
  live: 'microsoft',
  msn: 'microsoft',
  yandex: 'yandex',
  gmx: 'gmx',
  fastmail: 'fastmail',
};

/** MX host suffixes and the family (or the filtering gateway) that answers for them. */
export const PROVIDER_BY_MX_SUFFIX: readonly (readonly [suffix: string, provider: string])[] = [
  ['google.com', 'google_workspace'], // aspmx.l.google.com, smtp.google.com
  ['googlemail.com', 'google_workspace'], // aspmx2.googlemail.com
  ['protection.outlook.com', 'microsoft'], // <tenant>.mail.protection.outlook.com, Outlook.com's olc
  ['outlook.com', 'microsoft'],
  ['hotmail.com', 'microsoft'],
  ['yahoodns.net', 'yahoo'], // Yahoo and AOL: mta5.am0.yahoodns.net
  ['icloud.com', 'apple'], // mx01.mail.icloud.com
  ['protonmail.ch', 'proton'], // mail.protonmail.ch, mailsec.protonmail.ch
  ['zoho.com', 'zoho'],
  ['zoho.eu', 'zoho'],
  ['zoho.in', 'zoho'],
  ['zoho.com.au', 'zoho'],
  ['zoho.jp', 'zoho'],
  ['zohomail.com', 'zoho'],
  ['yandex.net', 'yandex'],
  ['yandex.ru', 'yandex'],
  ['mail.ru', 'mail_ru'],
  ['gmx.net', 'gmx'],
  ['gmx.com', 'gmx'],
  ['web.de', 'gmx'],
  ['messagingengine.com', 'fastmail'], // in1-smtp.messagingengine.com
  ['fastmail.com', 'fastmail'],
  ['pphosted.com', 'proofpoint'], // mx0a-<id>.pphosted.com
  ['ppe-hosted.com', 'proofpoint'], // Proofpoint Essentials
  ['mimecast.com', 'mimecast'],
  ['mimecast.co.za', 'mimecast'],
  ['messagelabs.com', 'broadcom'], // Symantec Email Security.cloud
  ['barracudanetworks.com', 'barracuda'], // <id>.ess.barracudanetworks.com
];

// Maps, not the records themselves: a record would answer "constructor" from its prototype.
const DOMAIN_PROVIDERS: ReadonlyMap<string, string> = new Map(Object.entries(PROVIDER_BY_DOMAIN));
const BRAND_PROVIDERS: ReadonlyMap<string, string> = new Map(Object.entries(PROVIDER_BY_BRAND));

/** The provider family a domain's own name shows, or null. */
export function providerOfDomain(domain: string): string | null {
  const named = DOMAIN_PROVIDERS.get(domain);
  if (named !== undefined) return named;
  const dot = domain.indexOf('.');
  if (dot < 0) return null;
  const brand = BRAND_PROVIDERS.get(domain.slice(0, dot));
  if (brand === undefined) return null;
  // The brand must be the registrable name (yahoo.co.uk, not yahoo.example.com).
  if (getPublicSuffix(domain) !== domain.slice(dot + 1) || !isFreeProviderDomain(domain)) return null;
  return brand;
}

/** The provider family behind the first recognised MX host, or null. */
export function providerOfMxHosts(mxHosts: readonly string[]): string | null {
  for (const rawHost of mxHosts) {
    const host = normaliseHost(rawHost);
    for (const [suffix, provider] of PROVIDER_BY_MX_SUFFIX) {
      // A suffix matches whole labels only: "notgoogle.com" is not google.com's.
      if (
        host.endsWith(suffix) &&
        (host.length === suffix.length || host[host.length - suffix.length - 1] === '.')
      ) {
        return provider;
      }
    }
  }
  return null;
}

function normaliseHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** What the lists say about an address; `domain` is lower-case A-label form (from checkSyntax). */
export function lookupLists(localPart: string, domain: string, mxHosts: readonly string[] = []): ListFacts {
  const isRoleBased = isRoleLocalPart(localPart);
  // An address literal ([192.0.2.1]) is on no domain list and names no provider.
  if (domain.startsWith('[')) {
    return { isDisposable: false, isRoleBased, isFreeProvider: false, provider: null };
  }
  const name = normaliseHost(domain);
  const isDisposable = isDisposableDomain(name);
  return {
    isDisposable,
    isRoleBased,
    isFreeProvider: !isDisposable && isOnFreeList(name),
    provider: providerOfDomain(name) ?? providerOfMxHosts(mxHosts),
  };
}
