// What the domain facts learn from outcomes (docs/verdicts.md, "Learning from outcomes"): a hard
// bounce on a mailbox reason of an address the domain's server had accepted (a `deliverable`
// verdict) counts for the domain, per account. Only a count per account is shared — never an
// address — and one account alone never changes a domain's verdicts (shared/src/verify/learnt.ts).
import {
  ACCEPTED_BOUNCES_WINDOW_MS,
  MIN_ACCEPTED_BOUNCES,
  MIN_BOUNCE_ACCOUNTS,
} from '@rcpt/shared/verify/learnt';
import type { DataMode } from '../../storage/api-keys.ts';
import type { Db } from '../../storage/db.ts';
import { recordAcceptedBounces } from '../../storage/domain-facts.ts';
import type { OutcomeRow } from '../../storage/outcomes.ts';

/** Whether the outcome says the domain accepted an address it bounced afterwards. */
function acceptedThenBounced(row: OutcomeRow): boolean {
  return row.outcome === 'hard_bounce' && row.bounceKind === 'mailbox' && row.verdictStatus === 'deliverable';
}

/**
 * Counts the outcomes just recorded (`fresh`: each stored by this request) in their domains'
 * facts. Test keys' outcomes are matched to sandbox verdicts, which no mail server reached:
 * only live ones count.
 */
export async function learnFromOutcomes(
  db: Db,
  mode: DataMode,
  fresh: readonly OutcomeRow[],
  now: number,
): Promise<void> {
  if (mode !== 'live') return;
  const byDomain = new Map<string, { accountId: string; bounces: number; lastAt: number }>();
  for (const row of fresh.filter(acceptedThenBounced)) {
    const domain = row.email.slice(row.email.lastIndexOf('@') + 1);
    const kept = byDomain.get(domain);
    byDomain.set(domain, {
      accountId: row.accountId,
      bounces: (kept?.bounces ?? 0) + 1,
      lastAt: Math.max(kept?.lastAt ?? 0, row.at),
    });
  }
  await recordAcceptedBounces(
    db,
    [...byDomain].map(([domain, learnt]) => ({ domain, ...learnt })),
    {
      start: now - ACCEPTED_BOUNCES_WINDOW_MS,
      minAccounts: MIN_BOUNCE_ACCOUNTS,
      minBounces: MIN_ACCEPTED_BOUNCES,
      now,
    },
  );
}
