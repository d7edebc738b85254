// An egress's health before any server refuses it (docs/operations.md, "Egress addresses"):
// what receivers look up about the address a session comes from. Checked when the prober
// starts and every hour after: forward-confirmed reverse DNS, whether the HELO name is that
// PTR name, listings on DNS blocklists, and whether outbound port 25 gets through. The router
// (egress-router.ts) keeps an unhealthy egress away from the receivers that check what it fails.
//
// This file holds the pure part: names to ask and the reading of the answers. The lookups
// themselves run in egress-health-checker.ts.
import { isIP } from 'node:net';
import type { EgressHealthInfo } from '@rcpt/shared/contract/prober';
import type { LookupOutcome } from '@rcpt/shared/dns/lookup';
import type { ClientChecks } from '@rcpt/shared/verify/providers';
import { expandIpv6 } from '../dns/reverse-names.ts';

/** An egress's health as the hub receives it (the egress-state message). */
export type EgressHealth = EgressHealthInfo;
export type BlocklistListing = EgressHealth['listings'][number];
type CheckResult = EgressHealth['fcrdns'];

/** EGRESS_BLOCKLISTS' default. */
export const DEFAULT_BLOCKLISTS = ['zen.spamhaus.org', 'b.barracudacentral.org', 'bl.spamcop.net'] as const;

interface KnownBlocklist {
  /**
   * Most receivers refuse a client it lists: an egress listed there carries no probe at all
   * while another egress is open. Listings elsewhere keep an egress only from the providers
   * known to use that list (egress-router.ts).
   */
  usedByMostReceivers: boolean;
  /** What each return code means; a code missing here is read as a listing of unknown kind. */
  codes: Readonly<Record<string, string>>;
}

// Spamhaus ZEN's return codes (https://www.spamhaus.org/faqs/dnsbl-usage/ and
// https://docs.spamhaus.com/datasets/docs/source/40-real-world-usage/PublicMirrors/MTAs/020-Postfix.html).
// The PBL lists addresses that should not send mail directly: a prober egress listed there is
// refused like any other listed client.
const ZEN_CODES: Readonly<Record<string, string>> = {
  '127.0.0.2': 'SBL: Spamhaus SBL data',
  '127.0.0.3': 'SBL CSS: Spamhaus CSS data (snowshoe and low-reputation senders)',
  '127.0.0.4': 'XBL: exploited or infected host',
  '127.0.0.5': 'XBL: exploited or infected host',
  '127.0.0.6': 'XBL: exploited or infected host',
  '127.0.0.7': 'XBL: exploited or infected host',
  '127.0.0.9': 'SBL DROP: hijacked or criminal network',
  '127.0.0.10': 'PBL: policy (ISP-maintained), should not send mail directly',
  '127.0.0.11': 'PBL: policy (Spamhaus-maintained), should not send mail directly',
};

/** The blocklists rcpt knows how to read. Any other zone of EGRESS_BLOCKLISTS is read by RFC 5782 alone. */
export const KNOWN_BLOCKLISTS: Readonly<Record<string, KnownBlocklist>> = {
  'zen.spamhaus.org': { usedByMostReceivers: true, codes: ZEN_CODES },
  // The Barracuda Reputation Block List and SpamCop answer 127.0.0.2 for a listed address.
  'b.barracudacentral.org': {
    usedByMostReceivers: false,
    codes: { '127.0.0.2': 'listed on the Barracuda BRBL' },
  },
  'bl.spamcop.net': { usedByMostReceivers: false, codes: { '127.0.0.2': 'listed on the SpamCop BL' } },
};

// Answers a DNSBL gives that are not listings: Spamhaus answers 127.255.255.252 (a typing error
// in the zone name), .254 (a query through a public or open resolver) and .255 (too many
// queries) — the check did not run (https://www.spamhaus.org/faqs/dnsbl-usage/).
const ERROR_CODES: Readonly<Record<string, string>> = {
  '127.255.255.252': 'the zone name was mistyped (127.255.255.252)',
  '127.255.255.254': 'the list refuses queries through a public or open resolver (127.255.255.254)',
  '127.255.255.255': 'the list refuses this resolver: too many queries (127.255.255.255)',
};

/** Whether a listing on `zone` is one most receivers refuse (KNOWN_BLOCKLISTS). */
export function usedByMostReceivers(zone: string): boolean {
  return KNOWN_BLOCKLISTS[zone.toLowerCase()]?.usedByMostReceivers ?? false;
}

/** What the checker found for one egress: the answers the health is read from. */
export interface HealthAnswers {
  egress: string;
  address: string | null;
  /** The HELO name the egress sends, when the prober knows it (per egress, or HELO_NAME). */
  helo: string | null;
  /** The PTR lookup of the address. */
  ptr: LookupOutcome<string> | null;
  /** The A (IPv4) or AAAA (IPv6) lookup of each PTR name, by name. */
  forward: ReadonlyMap<string, LookupOutcome<string>>;
  /** The A lookup of the address's name on each blocklist. */
  blocklists: readonly { zone: string; outcome: LookupOutcome<string> }[];
  port25: EgressHealth['port25'];
  checkedAt: number;
}

/** The health an egress's answers say it has. */
export function readHealth(answers: HealthAnswers): EgressHealth {
  const { address } = answers;
  const base = {
    egress: answers.egress,
    address,
    port25: answers.port25,
    checkedAt: answers.checkedAt,
  };
  if (address === null) {
    return { ...base, ptr: null, fcrdns: 'unknown', heloMatches: null, listings: [], unchecked: [] };
  }
  const { ptr, fcrdns } = readReverseDns(address, answers.ptr, answers.forward);
  const listings: BlocklistListing[] = [];
  const unchecked: { zone: string; why: string }[] = [];
  for (const { zone, outcome } of answers.blocklists) {
    const read = readBlocklist(zone, outcome);
    if (read.kind === 'listed') listings.push(read.listing);
    else if (read.kind === 'unchecked') unchecked.push({ zone, why: read.why.slice(0, 500) });
  }
  return {
    ...base,
    ptr,
    fcrdns,
    heloMatches: answers.helo === null || ptr === null ? null : sameName(answers.helo, ptr),
    listings,
    unchecked,
  };
}

/**
 * Forward-confirmed reverse DNS as RFC 8601 §2.7.3 ("iprev") has it
 * (https://www.rfc-editor.org/rfc/rfc8601#section-2.7.3): one of the address's PTR names has an
 * A or AAAA record equal to the address. No PTR record, or none that resolves back, fails; a
 * lookup that got no answer leaves it unknown (iprev's temperror).
 */
function readReverseDns(
  address: string,
  ptr: LookupOutcome<string> | null,
  forward: ReadonlyMap<string, LookupOutcome<string>>,
): { ptr: string | null; fcrdns: CheckResult } {
  if (ptr === null || ptr.kind === 'failure') return { ptr: null, fcrdns: 'unknown' };
  const names = ptr.kind === 'answer' ? ptr.records.map(withoutFinalDot) : [];
  if (names.length === 0) return { ptr: null, fcrdns: 'fail' };
  let settled = true;
  for (const name of names) {
    const outcome = forward.get(name) ?? forward.get(`${name}.`);
    if (outcome === undefined || outcome.kind === 'failure') {
      settled = false;
      continue;
    }
    if (outcome.kind === 'answer' && outcome.records.some((record) => sameAddress(record, address))) {
      return { ptr: name, fcrdns: 'pass' };
    }
  }
  return { ptr: names[0] ?? null, fcrdns: settled ? 'fail' : 'unknown' };
}

type BlocklistReading =
  | { kind: 'clean' }
  | { kind: 'listed'; listing: BlocklistListing }
  | { kind: 'unchecked'; why: string };

/**
 * One blocklist's answer (RFC 5782 §2.1): NXDOMAIN (or no A record) is not listed; an A record
 * in 127.0.0.0/24 is listed, its code saying why. Anything else — a list's error code, an
 * address outside 127.0.0.0/24 such as a resolver's own "no such name" page — is no listing.
 */
function readBlocklist(zone: string, outcome: LookupOutcome<string>): BlocklistReading {
  if (outcome.kind === 'nxdomain') return { kind: 'clean' };
  if (outcome.kind === 'failure') return { kind: 'unchecked', why: `${outcome.failure}: ${outcome.detail}` };
  if (outcome.records.length === 0) return { kind: 'clean' };
  const error = outcome.records.map((record) => ERROR_CODES[record]).find((why) => why !== undefined);
  if (error) return { kind: 'unchecked', why: error };
  const codes = [...new Set(outcome.records.filter((record) => /^127\.0\.0\.\d{1,3}$/.test(record)))].sort(
    (a, b) => Number(a.split('.')[3]) - Number(b.split('.')[3]),
  );
  if (codes.length === 0) {
    return {
      kind: 'unchecked',
      why: `answered ${outcome.records.join(', ')}, not a listing code (127.0.0.x)`,
    };
  }
  const known = KNOWN_BLOCKLISTS[zone.toLowerCase()]?.codes ?? {};
  const meaning = [...new Set(codes.map((code) => known[code] ?? `listed (${code})`))].join('; ');
  // Within the egress-state message's bounds (shared/src/contract/prober.ts).
  return { kind: 'listed', listing: { zone, codes: codes.slice(0, 32), meaning: meaning.slice(0, 1_000) } };
}

function withoutFinalDot(name: string): string {
  return name.replace(/\.$/, '').toLowerCase();
}

function sameName(a: string, b: string): boolean {
  return withoutFinalDot(a) === withoutFinalDot(b);
}

function sameAddress(a: string, b: string): boolean {
  const family = isIP(a);
  if (family !== isIP(b) || family === 0) return false;
  return family === 4 ? a === b : expandIpv6(a) === expandIpv6(b);
}

/**
 * How bad an egress is for a session to MX hosts whose provider checks `checks` of a client
 * (the registry's `clientChecks`; undefined for a host outside the registry or a provider that
 * checks nothing known): 0 clean; 1 failing something that provider checks; 2 listed on a list
 * most receivers use; 3 both. An egress never checked, or whose checks are unknown, is clean.
 */
export function healthPenalty(health: EgressHealth | undefined, checks: ClientChecks | undefined): number {
  if (!health) return 0;
  const listedEverywhere = health.listings.some((listing) => usedByMostReceivers(listing.zone));
  const failsProvider =
    checks !== undefined &&
    ((checks.reverseDns && (health.fcrdns === 'fail' || health.heloMatches === false)) ||
      health.listings.some((listing) => checks.blocklists.includes(listing.zone.toLowerCase())));
  return (listedEverywhere ? 2 : 0) + (failsProvider ? 1 : 0);
}
