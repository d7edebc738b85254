// The cron trigger: retention, stuck-job recovery, watched jobs' domains, webhook retries and
// the operator's alerts,
// each independent so that one failing does not stop the others.
import { errorFields, log } from '../logger.ts';
import { watchDomains } from '../services/batch/watch.ts';
import { batchDepsOf } from '../services/batch-lifecycle.ts';
import { alertDepsOf, deliverDueAlerts } from '../services/fleet/alerts.ts';
import { sweepBalances, watchDepsOf } from '../services/money/balance-watch.ts';
import { retentionCutoffsOf } from '../services/money/storage-policy.ts';
import { retryDueDeliveries } from '../services/webhooks/delivery.ts';
import { deleteExpired } from '../storage/retention.ts';
import { recoverStuckJobs } from './recovery.ts';

export async function runScheduled(env: Env, ctx: ExecutionContext, now = Date.now()): Promise<void> {
  const deps = batchDepsOf(env, (task) => ctx.waitUntil(task));
  const { db, config } = deps;
  const tasks: [string, () => Promise<unknown>][] = [
    ['retention', () => deleteExpired(db, retentionCutoffsOf(config, now), now)],
    ['recovery', () => recoverStuckJobs(deps, now)],
    ['watch', () => watchDomains(deps, now)],
    ['webhooks', () => retryDueDeliveries(db, config, now)],
    ['balances', () => sweepBalances(watchDepsOf(db, config, env, now))],
    ['alerts', () => deliverDueAlerts(alertDepsOf(db, config, env), now)],
  ];
  const outcomes = await Promise.allSettled(tasks.map(([, task]) => task()));
  outcomes.forEach((outcome, index) => {
    const name = tasks[index]?.[0];
    if (outcome.status === 'fulfilled') log.info('cron task done', { cron: name, report: outcome.value });
    else log.error('cron task failed', { cron: name, ...errorFields(outcome.reason) });
  });
}
