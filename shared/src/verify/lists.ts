// What maintained lists say about an address: disposable domain, free mailbox provider, role
// mailbox. (Which provider runs the mail is the provider registry's: providers.ts.) Every set
// is built once at module load; a lookup is a handful of Set probes.
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
import { subaddressUser } from './subaddress.ts';

/** The list facts; the provider is the provider registry's (providers.ts). */
export type ListMatches = Omit<ListFacts, 'provider'>;

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
  name = subaddressUser(name).toLowerCase();
  return ROLE_LOCAL_PARTS.has(name) || ROLE_LOCAL_PARTS.has(name.replace(ROLE_SEPARATORS, ''));
}

function normaliseHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** What the lists say about an address; `domain` is lower-case A-label form (from checkSyntax). */
export function lookupLists(localPart: string, domain: string): ListMatches {
  const isRoleBased = isRoleLocalPart(localPart);
  // An address literal ([192.0.2.1]) is on no domain list.
  if (domain.startsWith('[')) return { isDisposable: false, isRoleBased, isFreeProvider: false };
  const name = normaliseHost(domain);
  const isDisposable = isDisposableDomain(name);
  return { isDisposable, isRoleBased, isFreeProvider: !isDisposable && isOnFreeList(name) };
}
