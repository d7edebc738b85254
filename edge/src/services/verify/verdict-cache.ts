// Each account's verdicts, answered again while they last (docs/verdicts.md, "Cached answers"):
// the same address asked twice within a day gets the same answer. The store is the account's
// history: every answered single verification is a row keyed by account and normalised
// address, and the key's mode (test or live) picks which rows are seen. A verdict lasts its
// status's lifetime from the moment it was reached — not from when it was last answered, so
// answering it again never extends it — and only while the domain's facts it was reached on
// still hold.
import { storedVerificationResult, type VerificationResult } from '@rcpt/shared/contract/api';
import { VERDICT_LIFETIME_MS, verdictLifetimeMs } from '@rcpt/shared/contract/verdict-lifetime';
import type { SyntaxResult } from '@rcpt/shared/verify/inputs';
import type { MailboxBounce } from '@rcpt/shared/verify/learnt';
import type { DataMode } from '../../storage/api-keys.ts';
import type { Db } from '../../storage/db.ts';
import { latestVerdict, latestVerdictAndFacts } from '../../storage/verifications.ts';
import type { AccountDeskStub } from '../money/account-desk.ts';
import type { DomainFactsStore } from './domain-facts.ts';

export interface VerdictCacheKey {
  /** Normalised: trimmed, the domain in lower-case A-labels, the local part as given (RFC 5321 §2.4). */
  address: string;
  domain: string;
}

/**
 * The cache key of a parsed address, or null for one whose verdict needs no DNS or SMTP (invalid
 * syntax, an IP literal): those are reached locally in no time and never change.
 */
export function verdictCacheKey(address: SyntaxResult): VerdictCacheKey | null {
  return address.valid && !address.ipLiteral ? { address: address.email, domain: address.domain } : null;
}

/**
 * The key under which `result` is kept, or null when it is not kept: the policy table says how
 * long each answer is remembered, and rcpt's own failures are not (a repeat asks again, and an
 * earlier verdict still within its lifetime stays the one answered).
 */
export function keptUnder(key: VerdictCacheKey | null, result: VerificationResult): VerdictCacheKey | null {
  return key && verdictLifetimeMs(result) > 0 ? key : null;
}

/** What the cache read found: the account's live verdict, and when asked, its bounce of the address. */
export interface CacheRead {
  verdict: VerificationResult | null;
  bounce: MailboxBounce | null;
}

/**
 * The account's live verdict for `key`, marked cached, or null. `facts` is null for test keys,
 * whose answers come from no DNS. With `withBounce` (and facts), the account's latest mailbox
 * bounce of the address is read in the same round trip (docs/verdicts.md, "Learning from outcomes").
 */
export async function cachedVerdict(input: {
  db: Db;
  facts: DomainFactsStore | null;
  accountId: string;
  mode: DataMode;
  key: VerdictCacheKey;
  now: number;
  /**
   * The account's desk, which keeps every verdict answered through it: asked first, and D1 only
   * when it holds none for the address (a verdict from before the desk kept them). A reported
   * outcome of the address has the desk forget it (record.ts), so a verdict the desk holds has no
   * bounce after it.
   */
  desk?: AccountDeskStub;
  withBounce?: boolean;
}): Promise<CacheRead> {
  const { facts, key, now } = input;
  const lookup = {
    accountId: input.accountId,
    mode: input.mode,
    address: key.address,
    since: now - VERDICT_LIFETIME_MS,
  };
  // The desk's verdict needs no round trip; the domain's facts are then read by `verdictHolds`.
  let resultJson = input.desk ? await input.desk.lookup(lookup) : null;
  let bounce: MailboxBounce | null = null;
  if (resultJson === null && facts) {
    // The answer needs both: one round trip to D1 instead of two.
    const read = await latestVerdictAndFacts(input.db, lookup, key.domain, input.withBounce ?? false);
    facts.know(key.domain, read.facts);
    resultJson = read.resultJson;
    bounce = read.bounce;
  } else if (resultJson === null) {
    resultJson = await latestVerdict(input.db, lookup);
  }
  return { verdict: await stillHolds(resultJson, facts, key, now), bounce };
}

async function stillHolds(
  resultJson: string | null,
  facts: DomainFactsStore | null,
  key: VerdictCacheKey,
  now: number,
): Promise<VerificationResult | null> {
  if (resultJson === null) return null;
  const result = storedVerificationResult(resultJson);
  const verifiedAt = Date.parse(result.meta.verifiedAt);
  if (!(now - verifiedAt < verdictLifetimeMs(result))) return null;
  if (facts && !(await facts.verdictHolds(key.domain, verifiedAt))) return null;
  return { ...result, meta: { ...result.meta, cached: true } };
}
