// Worker entry: the HTTP app, the verify-batch queue consumer, the cron, and the Durable
// Object classes.
import { createApp } from './app.ts';
import { runScheduled } from './cron/scheduled.ts';
import { consumeVerifyBatch } from './queues/verify-batch.ts';
import type { BatchMessage } from './services/batch-queue.ts';

export { KeyLimiter } from './objects/key-limiter.ts';
export { ProberHub } from './objects/prober-hub.ts';

const app = createApp();

export default {
  fetch: app.fetch,
  queue: (batch, env, ctx) => consumeVerifyBatch(batch, env, ctx),
  scheduled: (_controller, env, ctx) => runScheduled(env, ctx),
} satisfies ExportedHandler<Env, BatchMessage>;
