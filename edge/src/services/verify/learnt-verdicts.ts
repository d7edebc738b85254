// Verdicts that outcomes decide (docs/verdicts.md, "Learning from outcomes"): the account's own
// hard bounce of the mailbox answers for that account alone, and a domain the facts learnt
// accepts then bounces turns an accepted mailbox risky for everyone. The rules are
// shared/src/verify/learnt.ts; this reads the facts they apply to.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { SyntaxResult } from '@rcpt/shared/verify/inputs';
import { answerFromBounce, type MailboxBounce, withAcceptsThenBounces } from '@rcpt/shared/verify/learnt';
import { verdictFromFacts } from '@rcpt/shared/verify/verdict';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import type { Db } from '../../storage/db.ts';
import { latestMailboxBounce } from '../../storage/outcomes.ts';
import type { DomainFactsStore } from './domain-facts.ts';

/** The account's live hard bounce of the address on a mailbox reason, not delivered since; or null. */
export function accountBounce(db: Db, accountId: string, address: string): Promise<MailboxBounce | null> {
  return latestMailboxBounce(db, { accountId, mode: 'live', email: address });
}

/**
 * The answer from the account's bounce: the address's syntax, lists and mail route as any
 * verdict has them (the route from the domain facts), the mailbox as the bounce said, no SMTP.
 */
export async function bounceAnswer(
  deps: Pick<VerifyDeps, 'mailRoute'>,
  address: SyntaxResult,
  bounce: MailboxBounce,
  now: () => number,
): Promise<VerificationResult> {
  const startedAt = now();
  const dns = address.valid ? await deps.mailRoute(address.domain) : null;
  const { result } = verdictFromFacts({
    address,
    dns,
    probe: { kind: 'skipped' },
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: Math.max(0, now() - startedAt),
  });
  return answerFromBounce(result, bounce);
}

/** `result` with what the domain facts learnt of its domain from outcomes applied. */
export async function withLearntDomain(
  facts: DomainFactsStore,
  result: VerificationResult,
  now: number,
): Promise<VerificationResult> {
  if (result.status !== 'deliverable') return result;
  return withAcceptsThenBounces(result, await facts.acceptedBounces(result.meta.domain), now);
}
