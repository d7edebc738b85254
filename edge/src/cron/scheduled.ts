// The cron trigger: retention, stuck-job recovery, watched jobs' domains, webhook retries and
// the operator's alerts,
// each independent so that one failing does not stop the others.
import { configOf } from '../config.ts';
import { errorFields, log } from '../logger.ts';
import { watchDomains } from '../services/batch/watch.ts';
import { batchDepsOf } from '../services/batch-lifecycle.ts';
import { alertDepsOf, deliverDueAlerts } from '../services/fleet/alerts.ts';
import { sweepBalances, watchDepsOf } from '../services/money/balance-watch.ts';
import { retentionCutoffsOf } from '../services/money/storage-policy.ts';
import { retryDueDeliveries } from '../services/webhooks/delivery.ts';
import { deleteExpired } from '../storage/retention.ts';
import { shardsOf } from '../storage/shards.ts';
import { recoverStuckJobs } from './recovery.ts';

export async function runScheduled(env: Env, ctx: ExecutionContext, now = Date.now()): Promise<void> {
  const shards = shardsOf(env);
  const tasks: [string, () => Promise<unknown>][] = [];
  // What every account keeps is swept in each shard's database (storage/shards.ts).
  for (let shard = 0; shard < shards.count; shard++) {
    const deps = batchDepsOf(env, (task) => ctx.waitUntil(task), shard);
    const { db, config } = deps;
    const named = (name: string) => (shard === 0 ? name : `${name} (shard ${shard})`);
    tasks.push(
      [named('retention'), () => deleteExpired(db, retentionCutoffsOf(config, now), now)],
      [named('recovery'), () => recoverStuckJobs(deps, now)],
      [named('watch'), () => watchDomains(deps, now)],
      [named('webhooks'), () => retryDueDeliveries(db, config, now)],
      [named('balances'), () => sweepBalances(watchDepsOf(db, config, env, now))],
    );
  }
  // The fleet's alerts are the operator's, kept in the directory.
  tasks.push(['alerts', () => deliverDueAlerts(alertDepsOf(shards.directory, configOf(env), env), now)]);
  const outcomes = await Promise.allSettled(tasks.map(([, task]) => task()));
  outcomes.forEach((outcome, index) => {
    const name = tasks[index]?.[0];
    if (outcome.status === 'fulfilled') log.info('cron task done', { cron: name, report: outcome.value });
    else log.error('cron task failed', { cron: name, ...errorFields(outcome.reason) });
  });
}
