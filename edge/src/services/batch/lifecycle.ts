// Where the ProberHub's batch answers go: the tenant behind a gateway is found through the
// shared domain facts, and finished probes are gathered for a moment so that their results
// share D1 calls, then settled (batch-results.ts). The hub knows this only as its `HubSink`.
import { type Config, configOf } from '../../config.ts';
import { errorFields, log } from '../../logger.ts';
import type { HubSink, HubWork } from '../../objects/prober-hub.ts';
import { createDb } from '../../storage/db.ts';
import { domainFactsOf } from '../verify/deps.ts';
import { verifyQueueOf } from './queue.ts';
import { type BatchTask, type SettledTask, settleBatchWork } from './settlement.ts';

/** How long finished batch probes are gathered before their results are written together. */
const SETTLE_GATHER_MS = 20;

/** The batch sink of one hub: `waitUntil` keeps its writes alive past the call that ended a probe. */
export function batchSinkOf(env: Env, waitUntil: (work: Promise<unknown>) => void): HubSink<BatchTask> {
  let settling: SettledTask[] = [];
  return {
    detectTenant: (domain, mxHosts) => domainFactsOf(createDb(env.DB), configOf(env)).tenant(domain, mxHosts),
    settle(task, answer) {
      settling.push({ task, probe: answer.probe, ...(answer.tenant ? { tenant: answer.tenant } : {}) });
      // The first answer of a gathering starts its clock.
      if (settling.length > 1) return;
      setTimeout(() => {
        const batch = settling;
        settling = [];
        const config = configOf(env);
        const db = createDb(env.DB);
        const written = settleBatchWork(
          { db, queue: verifyQueueOf(env), config, inBackground: waitUntil },
          batch,
          Date.now(),
        ).catch((error: unknown) =>
          // The addresses stay queued in D1: the job's deadline or lease recovers them.
          log.error('batch results not recorded', errorFields(error)),
        );
        waitUntil(written);
      }, SETTLE_GATHER_MS);
    },
  };
}

/** A task as the hub takes it: one probe of the domain's addresses, for the job's account. */
export function batchHubWork(task: BatchTask, config: Config): HubWork<BatchTask> {
  if (task.dns.kind !== 'mx') throw new Error(`${task.domain} has no MX to probe`);
  return {
    accountId: task.accountId,
    deadlineAt: task.deadlineAt,
    request: {
      emails: task.addresses.map((address) => address.email),
      domain: task.domain,
      mx: task.dns.mx,
      mailFrom: config.MAIL_FROM,
      helo: config.HELO_NAME,
      timeoutMs: config.BATCH_PROBE_TIMEOUT_MS,
      transcript: false,
      ...(task.evidence ? { evidence: true } : {}),
    },
    ticket: task,
  };
}
