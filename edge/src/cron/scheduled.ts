// The cron trigger: retention, stuck-job recovery and webhook retries, each independent so
// that one failing does not stop the others.
import { configOf } from '../config.ts';
import type { BatchMessage } from '../services/batch-queue.ts';
import { mailRouteResolver } from '../services/verify-deps.ts';
import { retryDueDeliveries } from '../services/webhooks.ts';
import { createDb } from '../storage/db.ts';
import { deleteExpired } from '../storage/retention.ts';
import { recoverStuckJobs } from './recovery.ts';

export async function runScheduled(env: Env, ctx: ExecutionContext, now = Date.now()): Promise<void> {
  const config = configOf(env);
  const db = createDb(env.DB);
  const tasks: [string, () => Promise<unknown>][] = [
    ['retention', () => deleteExpired(db, now - config.RETENTION_DAYS * 86_400_000, now)],
    [
      'recovery',
      () =>
        recoverStuckJobs(
          db,
          env.VERIFY_QUEUE as Queue<BatchMessage>,
          config,
          now,
          (task) => ctx.waitUntil(task),
          mailRouteResolver(config),
        ),
    ],
    ['webhooks', () => retryDueDeliveries(db, config, now)],
  ];
  const outcomes = await Promise.allSettled(tasks.map(([, task]) => task()));
  outcomes.forEach((outcome, index) => {
    const name = tasks[index]?.[0];
    if (outcome.status === 'fulfilled')
      console.log(JSON.stringify({ level: 'info', cron: name, report: outcome.value }));
    else console.error(JSON.stringify({ level: 'error', cron: name, error: String(outcome.reason) }));
  });
}
