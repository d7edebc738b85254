// The cron trigger: retention, stuck-job recovery, watched jobs' domains and webhook retries,
// each independent so that one failing does not stop the others.
import { configOf } from '../config.ts';
import { errorFields, log } from '../logger.ts';
import { verifyQueueOf } from '../services/batch-queue.ts';
import { watchDomains } from '../services/job-watch.ts';
import { sweepBalances, watchDepsOf } from '../services/purchases.ts';
import { retentionCutoffsOf } from '../services/storage-policy.ts';
import { retryDueDeliveries } from '../services/webhooks.ts';
import { createDb } from '../storage/db.ts';
import { deleteExpired } from '../storage/retention.ts';
import { recoverStuckJobs } from './recovery.ts';

export async function runScheduled(env: Env, ctx: ExecutionContext, now = Date.now()): Promise<void> {
  const config = configOf(env);
  const db = createDb(env.DB);
  const tasks: [string, () => Promise<unknown>][] = [
    ['retention', () => deleteExpired(db, retentionCutoffsOf(config, now), now)],
    [
      'recovery',
      () =>
        recoverStuckJobs(
          { db, queue: verifyQueueOf(env), config, inBackground: (task) => ctx.waitUntil(task) },
          now,
        ),
    ],
    [
      'watch',
      () =>
        watchDomains(
          { db, queue: verifyQueueOf(env), config, inBackground: (task) => ctx.waitUntil(task) },
          now,
        ),
    ],
    ['webhooks', () => retryDueDeliveries(db, config, now)],
    ['balances', () => sweepBalances(watchDepsOf(db, config, env, now))],
  ];
  const outcomes = await Promise.allSettled(tasks.map(([, task]) => task()));
  outcomes.forEach((outcome, index) => {
    const name = tasks[index]?.[0];
    if (outcome.status === 'fulfilled') log.info('cron task done', { cron: name, report: outcome.value });
    else log.error('cron task failed', { cron: name, ...errorFields(outcome.reason) });
  });
}
