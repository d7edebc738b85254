// The batch lifecycle assembled: upload (batch/jobs.ts) → queue (batch/queue.ts,
// queues/verify-batch.ts) → hub (batch/hub-work.ts, objects/prober-hub.ts) → settlement
// (batch/settlement.ts) → results (batch/results.ts) → recheck (batch/recheck.ts) | watch
// (batch/watch.ts) | webhook (webhooks/). Each step imports only the steps before it and the types
// of batch/types.ts; this module, above them all, wires the later steps into the earlier ones:
// the deps every step after the hub is given (with the webhooks as their `announce`), and the
// hub's sink, where its batch answers go — the tenant behind a gateway found through the shared
// domain facts, finished probes gathered for a moment so that their results share D1 calls, then
// settled. The hub knows the sink only as its `HubSink`.
import { type Config, configOf } from '../config.ts';
import { errorFields, log } from '../logger.ts';
import type { JobStoreSink } from '../objects/job-store.ts';
import type { HubSink } from '../objects/prober-hub.ts';
import type { Db } from '../storage/db.ts';
import { shardsOf } from '../storage/shards.ts';
import { type BatchMessage, enqueueBatchWork, verifyQueueOf, workMessages } from './batch/queue.ts';
import { reapplyReport } from './batch/results.ts';
import { settleBatchWork } from './batch/settlement.ts';
import type { BatchTask, SettleDeps, SettledTask } from './batch/types.ts';
import { domainFactsOf } from './verify/deps.ts';
import { deliverJobWebhook } from './webhooks/delivery.ts';

/** How long finished batch probes are gathered before their results are written together. */
const SETTLE_GATHER_MS = 20;

/** The deps of the steps after the hub, the webhooks announcing what they record. */
export function settleDepsOf(parts: {
  db: Db;
  queue: Queue<BatchMessage>;
  config: Config;
  inBackground: (task: Promise<unknown>) => void;
}): SettleDeps {
  return {
    ...parts,
    announce: (jobId, now) => parts.inBackground(deliverJobWebhook(parts.db, jobId, parts.config, now)),
  };
}

/**
 * The deps of the steps after the hub for one invocation of the Worker (consumer, cron, hub), for
 * the jobs of one shard (storage/shards.ts): its database, and the queue that stamps it.
 */
export function batchDepsOf(env: Env, inBackground: (task: Promise<unknown>) => void, shard = 0): SettleDeps {
  return settleDepsOf({
    db: shardsOf(env).db(shard),
    queue: verifyQueueOf(env, shard),
    config: configOf(env),
    inBackground,
  });
}

/** The batch sink of one hub: `waitUntil` keeps its writes alive past the call that ended a probe. */
export function batchSinkOf(env: Env, waitUntil: (work: Promise<unknown>) => void): HubSink<BatchTask> {
  let settling: SettledTask[] = [];
  return {
    detectTenant: (domain, mxHosts) =>
      domainFactsOf(shardsOf(env).directory, configOf(env)).tenant(domain, mxHosts),
    settle(task, answer) {
      settling.push({ task, probe: answer.probe, ...(answer.tenant ? { tenant: answer.tenant } : {}) });
      // The first answer of a gathering starts its clock.
      if (settling.length > 1) return;
      setTimeout(() => {
        const batch = settling;
        settling = [];
        for (const [shard, tasks] of byShard(batch)) {
          const written = settleBatchWork(batchDepsOf(env, waitUntil, shard), tasks, Date.now()).catch(
            (error: unknown) =>
              // The addresses stay queued in D1: the job's deadline or lease recovers them.
              log.error('batch results not recorded', errorFields(error)),
          );
          waitUntil(written);
        }
      }, SETTLE_GATHER_MS);
    },
  };
}

/** Settled tasks by the shard of their job. */
function byShard(settled: readonly SettledTask[]): Map<number, SettledTask[]> {
  const groups = new Map<number, SettledTask[]>();
  for (const each of settled) {
    const shard = each.task.shard ?? 0;
    groups.set(shard, [...(groups.get(shard) ?? []), each]);
  }
  return groups;
}

/** A job's object's clock: its stale work enqueued again, its reports applied again (objects/job-store.ts). */
export function jobStoreSinkOf(env: Env, waitUntil: (work: Promise<unknown>) => void): JobStoreSink {
  return {
    requeue: (job, addresses) =>
      enqueueBatchWork(verifyQueueOf(env, job.shard), workMessages(job.id, addresses)),
    report: (job, report, lists, now) =>
      reapplyReport(batchDepsOf(env, waitUntil, job.shard), job.id, report, lists, now),
  };
}
