// The verify-batch consumer. It never waits for a mail server: per consumer batch, the mail
// route once per message (one domain each, from the shared domain facts), then what DNS or the
// account's own bounces decided is recorded at once and the rest is handed to the ProberHub in
// one call, which probes it and records each answer as it comes (so a slow domain holds up
// nobody). Deadline messages finish their job; recheck messages start a completed job's
// follow-up round, whose work then comes through here like any other (docs/architecture.md,
// "Greylist follow-up").
// DNS stays within the plan's subrequest limit (docs/operations.md, "Subrequests"): work whose
// route does not fit in this invocation goes back on the queue for the next.
// A replayed message changes nothing: writes are once-only upserts.
import { type Config, configOf, proberRegionsOf } from '../config.ts';
import { SubrequestBudget } from '../dns/subrequest-budget.ts';
import { answerBounced } from '../services/batch/bounced.ts';
import { batchHubWork, dispatchToRegions } from '../services/batch/hub-work.ts';
import { defaultDeadlineAt } from '../services/batch/jobs.ts';
import { type BatchMessage, shardOfMessage, type WorkMessage } from '../services/batch/queue.ts';
import { startRecheckRound } from '../services/batch/recheck.ts';
import { finishAtDeadline, settleBatchWork } from '../services/batch/settlement.ts';
import type { BatchTask, SettleDeps, SettledTask } from '../services/batch/types.ts';
import { batchDepsOf } from '../services/batch-lifecycle.ts';
import { domainFactsOf } from '../services/verify/deps.ts';
import { type DomainFactsStore, routeFetchesAtMost, routesWithin } from '../services/verify/domain-facts.ts';
import type { JobStoreKind } from '../storage/job-lists/index.ts';
import { processingJobs } from '../storage/jobs.ts';
import { ownProbersOnlyAccounts } from '../storage/prober-tokens.ts';
import { recheckingJobs } from '../storage/rechecks.ts';
import { shardsOf } from '../storage/shards.ts';

export async function consumeVerifyBatch(
  batch: MessageBatch<BatchMessage>,
  env: Env,
  ctx: ExecutionContext,
): Promise<void> {
  const inBackground = (task: Promise<unknown>) => ctx.waitUntil(task);
  const config = configOf(env);
  // Routes from the domain facts every account shares (in the directory's database), resolved
  // over DNS when they expired, every DoH fetch counted against this invocation's share of the
  // plan's subrequest limit.
  const budget = new SubrequestBudget(dohBudgetOf(config));
  const facts = domainFactsOf(shardsOf(env).directory, config, budget);
  // Each job's rows are in its shard's database (storage/shards.ts): the messages are read and
  // settled shard by shard.
  const byShard = new Map<number, BatchMessage[]>();
  for (const { body } of batch.messages) {
    const shard = shardOfMessage(body);
    byShard.set(shard, [...(byShard.get(shard) ?? []), body]);
  }
  for (const [shard, messages] of byShard)
    await consumeShardMessages(messages, env, { ...batchDepsOf(env, inBackground, shard), facts, budget });
  batch.ackAll();
}

/** The messages of one shard's jobs, with that shard's deps and the invocation's facts and budget. */
async function consumeShardMessages(
  messages: readonly BatchMessage[],
  env: Env,
  deps: SettleDeps & { facts: DomainFactsStore; budget: SubrequestBudget },
): Promise<void> {
  const { db, config, facts, budget } = deps;
  const jobIds = [...new Set(messages.map((body) => body.jobId))];
  const live = await processingJobs(db, jobIds);
  const rechecking = messages.some(
    (body) => body.kind !== 'deadline' && body.kind !== 'recheck' && body.recheckRound !== undefined,
  )
    ? await recheckingJobs(db, jobIds)
    : new Map();

  const work: {
    body: WorkMessage;
    accountId: string;
    deadlineAt: number;
    evidence: boolean;
    store: JobStoreKind;
    /** The job's `recheck`, read with its row (a round's answers go to the round instead). */
    recheck?: boolean;
  }[] = [];
  for (const body of messages) {
    if (body.kind === 'recheck') {
      await startRecheckRound(deps, body, Date.now());
      continue;
    }
    if (body.kind !== 'deadline' && body.recheckRound !== undefined) {
      // A round's work: only while that round runs (a late or replayed one probes nothing).
      const round = rechecking.get(body.jobId);
      if (round?.round === body.recheckRound)
        work.push({
          body,
          accountId: round.accountId,
          deadlineAt: round.roundEndsAt,
          evidence: round.evidence === 1,
          store: round.store,
        });
      continue;
    }
    const job = live.get(body.jobId);
    if (!job) continue; // completed, failed or deleted: nothing left to do
    if (body.kind === 'deadline') {
      await finishAtDeadline(deps, body.jobId, Date.now(), job.recheck === 1);
      continue;
    }
    work.push({
      body,
      accountId: job.accountId,
      deadlineAt: job.deadlineAt ?? defaultDeadlineAt(body.addresses.length, Date.now()),
      evidence: job.evidence === 1,
      store: job.store,
      recheck: job.recheck === 1,
    });
  }

  await facts.prefetch(work.map(({ body }) => body.domain));
  const routes = await routesWithin(
    budget,
    facts,
    work.map(({ body }) => body.domain),
    routeFetchesAtMost(config),
  );
  // Work whose route did not fit in this invocation goes back on the queue, as it was.
  const postponed = work.filter(({ body }) => !routes.has(body.domain));
  if (postponed.length > 0) await deps.queue.sendBatch(postponed.map(({ body }) => ({ body })));
  const tasks: BatchTask[] = work.flatMap(({ body, accountId, deadlineAt, evidence, store, recheck }) => {
    const dns = routes.get(body.domain);
    if (!dns) return [];
    return [
      {
        jobId: body.jobId,
        accountId,
        store,
        ...(body.shard ? { shard: body.shard } : {}),
        domain: body.domain,
        deadlineAt,
        attempt: body.attempt,
        ...(body.retry ? { retry: body.retry } : {}),
        ...(body.recheckRound !== undefined ? { recheckRound: body.recheckRound } : {}),
        addresses: body.addresses,
        dns,
        ...(evidence ? { evidence } : {}),
        ...(recheck === undefined ? {} : { recheck }),
      },
    ];
  });
  const decided: SettledTask[] = [];
  const probing: BatchTask[] = [];
  for (const task of tasks) {
    if (task.dns.kind !== 'mx') decided.push({ task, probe: { kind: 'skipped' } });
    else if (!config.SMTP_ENABLED)
      decided.push({
        task,
        probe: { kind: 'unavailable', message: 'SMTP probing is disabled' },
        final: true,
      });
    else probing.push(task);
  }
  // Addresses the account's own bounces answer are not probed.
  const { answered, toProbe } = await answerBounced(db, probing);
  decided.push(...answered);
  if (toProbe.length > 0) {
    // Work no region takes (no prober linked where its egresses are not all blocked): rcpt's own
    // failure, asked again on its schedule until the deadline. So is the work of an account that
    // allows only its own probers while none of them is linked.
    const ownOnly = await ownProbersOnlyAccounts(db, [...new Set(toProbe.map((task) => task.accountId))]);
    const refused = await dispatchToRegions(
      env.PROBER_HUB,
      proberRegionsOf(config),
      toProbe.map((task) => batchHubWork(task, config, ownOnly.has(task.accountId))),
    );
    for (const { ticket } of refused)
      decided.push({ task: ticket, probe: { kind: 'unavailable', message: 'no prober connected' } });
  }
  await settleBatchWork(deps, decided, Date.now());
}

/**
 * The DoH fetches one invocation may make: most of the plan's subrequest limit. The rest is left
 * for the webhook deliveries of the jobs it completes and, on Workers Paid, where they count as
 * well, for its D1, Durable Object and Queue calls (a few per message).
 */
export function dohBudgetOf(config: Config): number {
  return Math.floor(config.SUBREQUEST_LIMIT * 0.8);
}
