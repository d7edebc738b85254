// Watched jobs (docs/architecture.md, "Watched jobs"): a completed job with `watch` keeps its
// verdicts in step with its domains. Each cron run looks at up to WATCH_DOMAINS_PER_RUN watched
// domains, fair across accounts: it reads their shared domain facts, asks DNS for a route only
// when the kept one expired (at most hourly: MAIL_ROUTE_MAX_TTL_SECONDS, within a share of the
// invocation's subrequests), and compares them with the facts each job's verdicts rest on. A job
// whose domain changed gets a follow-up round — the greylist follow-up's rounds
// (recheck.ts, results.ts), which record, charge, count and announce — for its addresses there. A
// domain that does not change costs no probe and no credit.

import type { WatchedDomainState } from '@rcpt/shared/contract/api';
import { DOMAIN_MAIL_STATES, type WatchChangeKind } from '@rcpt/shared/contract/api';
import type { z } from 'zod';
import { SubrequestBudget } from '../../dns/subrequest-budget.ts';
import { readManyDomainFacts } from '../../storage/domain-facts.ts';
import { findJobById } from '../../storage/jobs.ts';
import {
  claimWatchRound,
  type DomainWatcher,
  domainsToLookAt,
  recordLook,
  type SeenFacts,
  watchersOf,
} from '../../storage/watches.ts';
import { domainFactsOf } from '../verify/deps.ts';
import {
  type FactsKey,
  factsKeyOf,
  mailOfRouteKey,
  routeFetchesAtMost,
  routesWithin,
} from '../verify/domain-facts.ts';
import type { SeenChange } from './domain-changes.ts';
import { defaultMaxWaitSeconds } from './jobs.ts';
import { enqueueRoundWork } from './results.ts';
import type { SettleDeps } from './types.ts';

/** Most watched domains one cron run looks at; the others wait for the next run, oldest look first. */
export const WATCH_DOMAINS_PER_RUN = 200;
/** The share of the cron invocation's subrequests its route lookups may take (webhooks need the rest). */
const WATCH_SUBREQUEST_SHARE = 0.2;

type DomainState = z.infer<typeof WatchedDomainState>;

export interface WatchReport {
  /** Domains whose facts were looked at. */
  looked: number;
  /** Jobs that got a round for a changed domain. */
  rounds: number;
  /** Jobs with a changed domain whose round waits for the running one. */
  waiting: number;
}

/** The cron's look at watched domains; see the file comment. */
export async function watchDomains(deps: SettleDeps, now: number): Promise<WatchReport> {
  const { db, config } = deps;
  const domains = await domainsToLookAt(db, now, WATCH_DOMAINS_PER_RUN);
  const budget = new SubrequestBudget(
    Math.max(1, Math.floor(config.SUBREQUEST_LIMIT * WATCH_SUBREQUEST_SHARE)),
  );
  const facts = domainFactsOf(db, config, budget);
  await facts.prefetch(domains);
  // Routes kept in the facts cost nothing; expired ones are asked of DNS while the budget lasts.
  const routed = [...(await routesWithin(budget, facts, domains, routeFetchesAtMost(config))).keys()];
  const rows = new Map((await readManyDomainFacts(db, routed)).map((row) => [row.domain, row]));
  const watchers = await watchersOf(db, routed, now);

  const unchanged: (SeenFacts & { jobId: string })[] = [];
  const changedByJob = new Map<string, SeenFacts[]>();
  for (const watcher of watchers) {
    const row = rows.get(watcher.domain);
    if (!row || row.changedAt <= watcher.factsChangedAt) continue;
    const after = factsKeyOf(row);
    const seen = { domain: watcher.domain, factsChangedAt: row.changedAt, factsKey: JSON.stringify(after) };
    const change = changeOf(parseFactsKey(watcher), after);
    if (change === null) unchanged.push({ ...seen, jobId: watcher.jobId });
    else
      changedByJob.set(watcher.jobId, [
        ...(changedByJob.get(watcher.jobId) ?? []),
        { ...seen, change: JSON.stringify(change) },
      ]);
  }

  let rounds = 0;
  const waitingJobs = new Set<string>();
  for (const [jobId, changed] of changedByJob) {
    if (await startWatchRound(deps, jobId, changed, now)) rounds++;
    else waitingJobs.add(jobId);
  }
  // A job whose round has to wait is looked at again first next run.
  const looked = watchers.filter((watcher) => !waitingJobs.has(watcher.jobId));
  await recordLook(db, looked, unchanged, now);
  return { looked: routed.length, rounds, waiting: waitingJobs.size };
}

async function startWatchRound(
  deps: SettleDeps,
  jobId: string,
  changed: readonly SeenFacts[],
  now: number,
): Promise<boolean> {
  const job = await findJobById(deps.db, jobId);
  if (!job) return false;
  const started = await claimWatchRound(deps.db, {
    jobId,
    round: job.recheckRound,
    changed,
    now,
    // The round's probes get the time a job of this size gets before its deadline.
    endsAt: now + defaultMaxWaitSeconds(job.totalEmails) * 1000,
  });
  if (!started) return false;
  await enqueueRoundWork(deps, jobId, started.round, started.addresses, now);
  return true;
}

function parseFactsKey(watcher: DomainWatcher): FactsKey | null {
  return watcher.factsKey === null ? null : (JSON.parse(watcher.factsKey) as FactsKey);
}

/** The domain as a watch reports it, from the facts' key. */
export function domainStateOf(key: FactsKey | null): DomainState {
  if (key === null || key[0] === null)
    return { mail: null, mxHosts: [], catchAll: key ? catchAllOf(key) : null };
  const { kind, mxHosts } = mailOfRouteKey(key[0]);
  const mail = (DOMAIN_MAIL_STATES as readonly string[]).includes(kind)
    ? (kind as DomainState['mail'])
    : null;
  return { mail, mxHosts, catchAll: catchAllOf(key) };
}

function catchAllOf(key: FactsKey): boolean | null {
  return key[1] === null ? null : key[1] === 1;
}

/**
 * What changed between the facts a job's verdicts rest on and the domain's facts now, or null
 * when nothing a verdict depends on did: a fact learned for the first time is not a change
 * (rcpt's domain facts count it so too), except a mail route where there was none.
 */
export function changeOf(before: FactsKey | null, after: FactsKey): SeenChange | null {
  const was = domainStateOf(before);
  const is = domainStateOf(after);
  const changes: WatchChangeKind[] = [];
  if (is.mail !== null && (was.mail !== is.mail || was.mxHosts.join(' ') !== is.mxHosts.join(' '))) {
    if (was.mail === 'mx' && is.mail === 'mx') changes.push('mx_moved');
    else if (is.mail === 'mx') changes.push('mail_resumed');
    else changes.push('mail_stopped');
  }
  if (was.catchAll !== null && is.catchAll !== null && was.catchAll !== is.catchAll)
    changes.push(is.catchAll ? 'catch_all_on' : 'catch_all_off');
  const [tenantBefore, tenantAfter] = [before?.[2] ?? null, after[2]];
  if (tenantBefore !== null && tenantAfter !== null && tenantBefore !== tenantAfter)
    changes.push('tenant_changed');
  return changes.length === 0 ? null : { changes, before: was, after: is };
}
