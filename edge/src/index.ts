// Worker entry: the HTTP app, the verify-batch queue consumer, the cron, and the Durable
// Object classes.
import { createApp } from './app.ts';
import { runScheduled } from './cron/scheduled.ts';
import { type MeterVars, meter, meteredBatch, meteredEnv, meterFrom } from './meter.ts';
import { JobStore as JobStoreObject } from './objects/job-store.ts';
import { ProberHub as HubObject } from './objects/prober-hub.ts';
import { consumeVerifyBatch } from './queues/verify-batch.ts';
import type { BatchMessage } from './services/batch/queue.ts';
import type { BatchTask } from './services/batch/types.ts';
import { batchSinkOf, jobStoreSinkOf } from './services/batch-lifecycle.ts';

export { AccountDesk } from './objects/account-desk.ts';
export { KeyLimiter } from './objects/key-limiter.ts';

/** A region's hub as deployed: its batch answers settle into their jobs and the domain facts. */
export class ProberHub extends HubObject<BatchTask> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(
      ctx,
      env,
      batchSinkOf(env, (work) => ctx.waitUntil(work)),
    );
  }
}

/** A job's lists as deployed: its clock's work goes to the batch lifecycle. */
export class JobStore extends JobStoreObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(
      ctx,
      env,
      jobStoreSinkOf(env, (work) => ctx.waitUntil(work)),
    );
  }
}

const app = createApp();

/** Each invocation is one billed Worker request; with the meter on, its bindings count their calls. */
function metered(env: Env, counts: Parameters<typeof meter>[0]): Env {
  meterFrom(env as MeterVars);
  meter(counts);
  return meteredEnv(env);
}

export default {
  fetch: (request, env, ctx) => app.fetch(request, metered(env, { workerRequests: 1 }), ctx),
  queue: async (batch, env, ctx) => {
    const counted = metered(env, { workerRequests: 1, queueBatches: 1, queueReads: batch.messages.length });
    const consumer = meteredBatch(batch);
    try {
      await consumeVerifyBatch(consumer.batch, counted, ctx);
      consumer.settle(false);
    } catch (error) {
      consumer.settle(true);
      throw error;
    }
  },
  scheduled: (_controller, env, ctx) => runScheduled(metered(env, { workerRequests: 1 }), ctx),
} satisfies ExportedHandler<Env, BatchMessage>;
