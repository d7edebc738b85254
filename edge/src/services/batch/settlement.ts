// What happens to a batch probe's answer, wherever it lands (the hub as each probe finishes,
// the consumer for what DNS decided): verdicts; final answers recorded once (results.ts),
// completing and refunding the job with its last one; temporary answers asked again on their
// own schedule, or final when the job's deadline would come first. docs/architecture.md, "A batch".
import { storedVerificationResult } from '@rcpt/shared/contract/api';
import { isRecheckable, policyOf } from '@rcpt/shared/contract/sub-statuses';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { answerFromBounce } from '@rcpt/shared/verify/learnt';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { verdictFromFacts } from '@rcpt/shared/verify/verdict';
import { knowStore } from '../../storage/job-lists/index.ts';
import { unfinishedAddresses } from '../../storage/job-recovery.ts';
import { type AddressResult, recordProvisional } from '../../storage/job-results.ts';
import type { RecheckAnswer } from '../../storage/rechecks.ts';
import { domainFactsOf } from '../verify/deps.ts';
import type { DomainFactsStore } from '../verify/domain-facts.ts';
import { withLearntDomain } from '../verify/learnt-verdicts.ts';
import { addressResult } from './jobs.ts';
import { enqueueBatchWork, type WorkMessage } from './queue.ts';
import { recheckAnswerOf, recordFinals, recordRecheck } from './results.ts';
import { nextAttemptAt, retryPaceOf } from './retry.ts';
import type { SettleDeps, SettledTask } from './types.ts';

/** The least time a retry needs before the deadline to be worth sending. */
const MIN_PROBE_MS = 3_000;

interface JobWrites {
  /** The job's `recheck`, carried by its tasks when read with its row. */
  recheck: boolean | undefined;
  finals: AddressResult[];
  provisional: (AddressResult & { retryAt: number })[];
  retries: { message: WorkMessage; delaySeconds: number }[];
  rechecks: RecheckAnswer[];
}

/** Records what the probes of `settled` answered; see the file comment. */
export async function settleBatchWork(
  deps: SettleDeps,
  settled: readonly SettledTask[],
  now: number,
): Promise<void> {
  const byJob = new Map<string, JobWrites>();
  // What the probes learned of their domains goes into the facts every account shares, and a
  // probe without a catch-all answer gets the kept one (docs/architecture.md, "Domain facts").
  const facts = domainFactsOf(deps.db, deps.config);
  await facts.prefetch(settled.map(({ task }) => task.domain));
  for (const { task, probe: answered, tenant, final, bounces } of settled) {
    knowStore(task.jobId, task.store);
    const probe = await facts.observeProbe(task.domain, answered);
    await facts.observeProbeTime(task.domain, answered);
    const writes = byJob.get(task.jobId) ?? {
      recheck: task.recheck,
      finals: [],
      provisional: [],
      retries: [],
      rechecks: [],
    };
    byJob.set(task.jobId, writes);
    const retryGroups = new Map<string, { message: WorkMessage; delaySeconds: number }>();
    let passedGreylisting = false;
    for (const address of task.addresses) {
      const verdict = verdictFromFacts({
        address: checkSyntax(address.email),
        dns: task.dns,
        probe,
        tenant: tenant ?? null,
        verifiedAt: new Date(now).toISOString(),
        processingTimeMs: 0,
      });
      // What outcomes taught (docs/verdicts.md, "Learning from outcomes"): the account's own
      // bounce of the address, else what the domain facts learnt of its domain.
      const bounce = bounces?.get(address.email);
      const result = bounce
        ? answerFromBounce(verdict.result, bounce)
        : await withLearntDomain(facts, verdict.result, now);
      const policy = bounce ? policyOf(result.subStatus) : verdict.policy;
      passedGreylisting ||= policy.retry === 'none' && result.meta.verifiedVia === 'mx';
      if (task.recheckRound !== undefined) {
        writes.rechecks.push(recheckAnswerOf(address.idx, result, policy));
        continue;
      }
      const pace = final || task.attempt + 1 >= deps.config.BATCH_MAX_ATTEMPTS ? null : retryPaceOf(policy);
      // A change of pace starts its count, and its clock, again.
      const kept = task.retry?.schedule === pace ? task.retry : undefined;
      const count = kept?.count ?? 0;
      const at = pace
        ? nextAttemptAt({
            pace,
            count,
            ...(policy.retryAfterSeconds !== undefined
              ? { retryAfterSeconds: policy.retryAfterSeconds }
              : {}),
            now,
            deadlineAt: task.deadlineAt,
            probeMs: MIN_PROBE_MS,
            passedOn: answered.kind === 'unavailable' && answered.passedOn === true,
          })
        : null;
      const stored = addressResult(address.idx, result, policy.refundable);
      if (at === null || !pace) {
        writes.finals.push({ ...stored, recheckable: !final && isRecheckable(result.subStatus, policy) });
        continue;
      }
      writes.provisional.push({ ...stored, retryAt: at });
      const delaySeconds = Math.max(0, Math.ceil((at - now) / 1000));
      const key = `${pace} ${delaySeconds}`;
      const group = retryGroups.get(key) ?? {
        message: {
          kind: 'work',
          jobId: task.jobId,
          domain: task.domain,
          attempt: task.attempt + 1,
          retry: { schedule: pace, count: count + 1, since: kept?.since ?? now },
          addresses: [],
        },
        delaySeconds,
      };
      group.message.addresses.push(address);
      retryGroups.set(key, group);
    }
    writes.retries.push(...retryGroups.values());
    // Addresses that greylisting held back, answered by the server at last: how long that took
    // is what a single call's greylisted answer tells its caller to wait (docs/verdicts.md).
    const greylistedSince = task.retry?.schedule === 'greylist' ? task.retry.since : undefined;
    if (passedGreylisting && greylistedSince !== undefined) {
      await facts.observeGreylistDelay(task.domain, (now - greylistedSince) / 1000);
    }
  }

  for (const [jobId, writes] of byJob) {
    if (writes.provisional.length > 0) await recordProvisional(deps.db, jobId, writes.provisional, now);
    for (const { message, delaySeconds } of writes.retries) {
      await enqueueBatchWork(deps.queue, [message], delaySeconds);
    }
    if (writes.finals.length > 0) await recordFinals(deps, jobId, writes.finals, now, writes.recheck);
    if (writes.rechecks.length > 0) await recordRecheck(deps, jobId, writes.rechecks, now);
  }
}

/**
 * The job's deadline: every address without a final answer gets one now — its last temporary
 * answer, or `smtp_unavailable` (rcpt's own failure, refunded) when it was never probed. The
 * mail route of a never-probed address comes from the domain facts, as a probe's would: `facts`
 * of the caller's request or batch, else the deployment's.
 */
export async function finishAtDeadline(
  deps: SettleDeps & { facts?: DomainFactsStore },
  jobId: string,
  now: number,
  /** The job's `recheck`, when read with its row (`recordResults`). */
  jobRechecks?: boolean,
): Promise<void> {
  const unfinished = await unfinishedAddresses(deps.db, jobId);
  const facts = deps.facts ?? domainFactsOf(deps.db, deps.config);
  const routes = new Map<string, Promise<DnsOutcome>>();
  const finals = await Promise.all(
    unfinished.map(async (address): Promise<AddressResult> => {
      if (address.resultJson) {
        // A provisional answer is a temporary one: it was to be asked again.
        const result = storedVerificationResult(address.resultJson);
        const policy = policyOf(result.subStatus);
        return {
          ...addressResult(address.idx, result, policy.refundable),
          recheckable: isRecheckable(result.subStatus, policy),
        };
      }
      let route = routes.get(address.domain);
      if (!route) {
        route = facts.mailRoute(address.domain);
        routes.set(address.domain, route);
      }
      const { result, policy } = verdictFromFacts({
        address: checkSyntax(address.email),
        dns: await route,
        probe: { kind: 'unavailable', message: 'no prober reached the address before the job deadline' },
        verifiedAt: new Date(now).toISOString(),
        processingTimeMs: 0,
      });
      return {
        ...addressResult(address.idx, result, policy.refundable),
        recheckable: isRecheckable(result.subStatus, policy),
      };
    }),
  );
  await recordFinals(deps, jobId, finals, now, jobRechecks);
}
