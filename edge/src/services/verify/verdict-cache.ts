// Each account's verdicts, answered again while they last (docs/verdicts.md, "Cached answers"):
// the same address asked twice within a day gets the same answer. The account's desk keeps every
// verdict answered through it (objects/account-desk.ts); D1's history keeps the rest, each
// answered single verification a row keyed by account and normalised address, and the key's mode
// (test or live) picks which rows are seen. Which verdict still holds is kept-verdicts.ts.
import { VERDICT_LIFETIME_MS } from '@rcpt/shared/contract/verdict-lifetime';
import type { MailboxBounce } from '@rcpt/shared/verify/learnt';
import type { DataMode } from '../../storage/api-keys.ts';
import type { Db } from '../../storage/db.ts';
import { latestVerdict, latestVerdictAndFacts } from '../../storage/verifications.ts';
import type { DomainFactsStore } from './domain-facts.ts';
import type { KeptVerdictTerms, VerdictCacheKey } from './kept-verdicts.ts';

/** What D1 holds: the account's latest verdict for the address as stored, and when asked, its bounce of it. */
export interface KeptRead {
  resultJson: string | null;
  bounce: MailboxBounce | null;
}

/** Verdicts reached before this are past any lifetime: none is looked for. */
export function keptSince(now: number): number {
  return now - VERDICT_LIFETIME_MS;
}

/**
 * The account's latest verdict for `key` in D1. `facts` is null for test keys, whose answers
 * come from no DNS; with facts, the domain's row is read in the same round trip and given to
 * them, and with `withBounce` the account's latest mailbox bounce of the address too
 * (docs/verdicts.md, "Learning from outcomes").
 */
export async function readKeptVerdict(input: {
  db: Db;
  facts: DomainFactsStore | null;
  accountId: string;
  mode: DataMode;
  key: VerdictCacheKey;
  now: number;
  withBounce: boolean;
}): Promise<KeptRead> {
  const { facts, key } = input;
  const lookup = {
    accountId: input.accountId,
    mode: input.mode,
    address: key.address,
    since: keptSince(input.now),
  };
  if (!facts) return { resultJson: await latestVerdict(input.db, lookup), bounce: null };
  // The answer needs both: one round trip to D1 instead of two.
  const read = await latestVerdictAndFacts(input.db, lookup, key.domain, input.withBounce);
  facts.know(key.domain, read.facts);
  return { resultJson: read.resultJson, bounce: read.bounce };
}

/**
 * What a kept verdict of `key` is answered against now: the domain's facts as they stand (an
 * expired route asked of DNS again), unless `facts` is null (a test key's call).
 */
export async function keptVerdictTerms(
  facts: DomainFactsStore | null,
  key: VerdictCacheKey,
  call: Omit<KeptVerdictTerms, 'factsChangedAt'>,
): Promise<KeptVerdictTerms> {
  return facts ? { ...call, factsChangedAt: await facts.verdictsHoldSince(key.domain) } : call;
}
