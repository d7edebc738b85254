// The verify-batch queue's messages and how they are sent within the Queues limits.
import { meter } from '../meter.ts';
import type { RetryState } from './batch-retry.ts';

/** Addresses of one domain of one job to verify (one SMTP session's worth). */
export interface WorkMessage {
  kind?: 'work';
  jobId: string;
  domain: string;
  /** How many times these addresses were already tried. */
  attempt: number;
  /** Set on a retry: the schedule of the answer being retried, and how many retries it had. */
  retry?: RetryState;
  addresses: { idx: number; email: string }[];
}

/** Sent at upload, delayed to the job's deadline: whatever is not final then becomes so. */
export interface DeadlineMessage {
  kind: 'deadline';
  jobId: string;
}

export type BatchMessage = WorkMessage | DeadlineMessage;

/**
 * The verify-batch producer binding with its message type: `wrangler types` declares queue
 * bindings as `Queue` of unknown messages, so the type is given here, once.
 */
export function verifyQueueOf(env: Env): Queue<BatchMessage> {
  return env.VERIFY_QUEUE as Queue<BatchMessage>;
}

/** Queues limits: 100 messages and 256 KB per sendBatch, 128 KB per message. */
const MAX_MESSAGES_PER_SEND = 100;
const MAX_SEND_BYTES = 200_000;
const MAX_MESSAGE_BYTES = 120_000;

export async function enqueueBatchWork(
  queue: Queue<BatchMessage>,
  messages: readonly BatchMessage[],
  delaySeconds = 0,
): Promise<void> {
  let batch: MessageSendRequest<BatchMessage>[] = [];
  let bytes = 0;
  for (const body of messages) {
    const size = JSON.stringify(body).length;
    // The local queue only says "Unknown Internal Error" for an oversized message: say what was too big.
    if (size > MAX_MESSAGE_BYTES)
      throw new Error(`queue message of ${size} bytes for job ${body.jobId} exceeds ${MAX_MESSAGE_BYTES}`);
    if (batch.length === MAX_MESSAGES_PER_SEND || bytes + size > MAX_SEND_BYTES) {
      await sendCounted(queue, batch);
      batch = [];
      bytes = 0;
    }
    batch.push({ body, contentType: 'json', ...(delaySeconds > 0 ? { delaySeconds } : {}) });
    bytes += size;
  }
  if (batch.length > 0) await sendCounted(queue, batch);
}

async function sendCounted(
  queue: Queue<BatchMessage>,
  batch: MessageSendRequest<BatchMessage>[],
): Promise<void> {
  await queue.sendBatch(batch);
  meter({ queueWrites: batch.length });
}
