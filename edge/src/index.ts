// Worker entry: the HTTP app, the verify-batch queue consumer, the cron, and the Durable
// Object classes.
import { createApp } from './app.ts';
import { runScheduled } from './cron/scheduled.ts';
import { meter, meterFrom } from './meter.ts';
import { ProberHub as ProbeScheduler } from './objects/prober-hub.ts';
import { consumeVerifyBatch } from './queues/verify-batch.ts';
import type { BatchMessage } from './services/batch-queue.ts';
import type { BatchTask } from './services/batch-results.ts';
import { batchSinkOf } from './services/batch-sink.ts';

export { KeyLimiter } from './objects/key-limiter.ts';

/** A region's hub as deployed: its batch answers settle into their jobs and the domain facts. */
export class ProberHub extends ProbeScheduler<BatchTask> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(
      ctx,
      env,
      batchSinkOf(env, (work) => ctx.waitUntil(work)),
    );
  }
}

const app = createApp();

/** Each invocation is one billed Worker request; a queue batch reads and deletes its messages. */
function metered(env: Env, counts: Parameters<typeof meter>[0]): void {
  meterFrom(env as { RCPT_METER?: string });
  meter(counts);
}

export default {
  fetch: (request, env, ctx) => {
    metered(env, { workerRequests: 1 });
    return app.fetch(request, env, ctx);
  },
  queue: (batch, env, ctx) => {
    const messages = batch.messages.length;
    metered(env, { workerRequests: 1, queueReads: messages, queueDeletes: messages });
    return consumeVerifyBatch(batch, env, ctx);
  },
  scheduled: (_controller, env, ctx) => {
    metered(env, { workerRequests: 1 });
    return runScheduled(env, ctx);
  },
} satisfies ExportedHandler<Env, BatchMessage>;
