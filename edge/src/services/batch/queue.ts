// The verify-batch queue's messages and how they are sent within the Queues limits. Its
// consumer is queues/verify-batch.ts.
import { meteredQueue } from '../../meter.ts';
import { groupByDomain } from './plan.ts';
import type { RetryState } from './retry.ts';

/**
 * Every message names the shard whose database holds its job (storage/shards.ts), stamped by the
 * queue it was sent through (`verifyQueueOf`); absent: shard 0.
 */
interface ShardMessage {
  shard?: number;
}

/** Addresses of one domain of one job to verify (one SMTP session's worth). */
export interface WorkMessage extends ShardMessage {
  kind?: 'work';
  jobId: string;
  domain: string;
  /** How many times these addresses were already tried. */
  attempt: number;
  /** Set on a retry: the schedule of the answer being retried, and how many retries it had. */
  retry?: RetryState;
  /** Set on a recheck round's work (greylist follow-up): the round's number. */
  recheckRound?: number;
  addresses: { idx: number; email: string }[];
}

/** Sent at upload, delayed to the job's deadline: whatever is not final then becomes so. */
export interface DeadlineMessage extends ShardMessage {
  kind: 'deadline';
  jobId: string;
}

/**
 * Starts a completed job's recheck round `round + 1` at `dueAt` (greylist follow-up). Sent
 * delayed; a delay longer than Queues allows arrives early and is sent on again.
 */
export interface RecheckMessage extends ShardMessage {
  kind: 'recheck';
  jobId: string;
  /** Rounds the job had started when this one was planned. */
  round: number;
  dueAt: number;
}

export type BatchMessage = WorkMessage | DeadlineMessage | RecheckMessage;

/**
 * Addresses of one domain per queue message, one probe: fewer than Postfix's hard error limit
 * (smtpd_hard_error_limit = 20, postconf(5)) even when every one and the catch-all test are
 * rejected, so no session is ever cut for "too many errors", and with 40 % unknown mailboxes
 * (6 rejections) below its soft limit of 10 as well. Small probes also spread a domain over
 * parallel sessions.
 */
export const ADDRESSES_PER_MESSAGE = 15;

/**
 * The work messages for addresses of one job: each domain's addresses in groups of
 * ADDRESSES_PER_MESSAGE. A group's attempt is the fewest its addresses had; `recheckRound` marks
 * a follow-up round's work.
 */
export function workMessages(
  jobId: string,
  addresses: readonly { idx: number; email: string; domain: string; attempts?: number }[],
  recheckRound?: number,
): WorkMessage[] {
  return groupByDomain(addresses, ADDRESSES_PER_MESSAGE).map((group) => ({
    kind: 'work',
    jobId,
    domain: group[0]?.domain ?? '',
    attempt: Math.min(...group.map((address) => address.attempts ?? 0)),
    ...(recheckRound !== undefined ? { recheckRound } : {}),
    addresses: group.map(({ idx, email }) => ({ idx, email })),
  }));
}

/** The longest delay of a queue message: 12 hours (Cloudflare Queues, "Batching, Retries and Delays"). */
export const MAX_QUEUE_DELAY_SECONDS = 43_200;

/**
 * The verify-batch producer binding with its message type: `wrangler types` declares queue
 * bindings as `Queue` of unknown messages, so the type is given here, once. With the meter on,
 * it counts what it sends.
 */
export function verifyQueueOf(env: Env, shard = 0): Queue<BatchMessage> {
  const queue = meteredQueue(env.VERIFY_QUEUE as Queue<BatchMessage>);
  return shard === 0 ? queue : shardStamped(queue, shard);
}

/** The queue with each message it sends stamped with the shard of the job it is about. */
function shardStamped(queue: Queue<BatchMessage>, shard: number): Queue<BatchMessage> {
  return {
    send: (body, options) => queue.send({ ...body, shard }, options),
    sendBatch: (messages, options) =>
      queue.sendBatch(
        [...messages].map((message) => ({ ...message, body: { ...message.body, shard } })),
        options,
      ),
  } as Queue<BatchMessage>;
}

/** The shard of the job a message is about. */
export function shardOfMessage(message: BatchMessage): number {
  return message.shard ?? 0;
}

/** Queues limits: 100 messages and 256 KB per sendBatch, 128 KB per message. */
const MAX_MESSAGES_PER_SEND = 100;
const MAX_SEND_BYTES = 200_000;
const MAX_MESSAGE_BYTES = 120_000;

/** Sends the message that starts a round at its time, at most Queues' longest delay ahead. */
export async function sendRecheckMessage(
  queue: Queue<BatchMessage>,
  message: RecheckMessage,
  now: number,
): Promise<void> {
  const delaySeconds = Math.min(
    MAX_QUEUE_DELAY_SECONDS,
    Math.max(0, Math.ceil((message.dueAt - now) / 1000)),
  );
  await enqueueBatchWork(queue, [message], delaySeconds);
}

export async function enqueueBatchWork(
  queue: Queue<BatchMessage>,
  messages: readonly BatchMessage[],
  delaySeconds = 0,
): Promise<void> {
  if (delaySeconds > MAX_QUEUE_DELAY_SECONDS)
    throw new Error(`a queue delay of ${delaySeconds} s exceeds ${MAX_QUEUE_DELAY_SECONDS} s`);
  let batch: MessageSendRequest<BatchMessage>[] = [];
  let bytes = 0;
  for (const body of messages) {
    const size = JSON.stringify(body).length;
    // The local queue only says "Unknown Internal Error" for an oversized message: say what was too big.
    if (size > MAX_MESSAGE_BYTES)
      throw new Error(`queue message of ${size} bytes for job ${body.jobId} exceeds ${MAX_MESSAGE_BYTES}`);
    if (batch.length === MAX_MESSAGES_PER_SEND || bytes + size > MAX_SEND_BYTES) {
      await queue.sendBatch(batch);
      batch = [];
      bytes = 0;
    }
    batch.push({ body, contentType: 'json', ...(delaySeconds > 0 ? { delaySeconds } : {}) });
    bytes += size;
  }
  if (batch.length > 0) await queue.sendBatch(batch);
}
