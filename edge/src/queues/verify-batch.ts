// The verify-batch consumer. Per consumer batch: DNS once per message (one domain each, with
// the isolate's TTL cache across messages), every probe in one ProberHub call, verdicts,
// then results written per job in one transaction each. Temporary answers are sent again
// with a growing delay; a replayed message changes nothing (writes are once-only upserts).
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { assessVerdict } from '@rcpt/shared/verify/assess';
import type { DnsOutcome, ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { Verdict } from '@rcpt/shared/verify/verdict';
import { type Config, configOf } from '../config.ts';
import { resolveMailRoute } from '../dns/mail-route.ts';
import { addressResult } from '../services/batch-jobs.ts';
import { type BatchMessage, enqueueBatchWork } from '../services/batch-queue.ts';
import { dohClientFor } from '../services/verify-deps.ts';
import { deliverJobWebhook } from '../services/webhooks.ts';
import { createDb } from '../storage/db.ts';
import { type AddressResult, markRequeued, processingJobIds, recordResults } from '../storage/jobs.ts';

interface Work {
  message: Message<BatchMessage>;
  dns: DnsOutcome;
  probe: ProbeOutcome;
}

export async function consumeVerifyBatch(
  batch: MessageBatch<BatchMessage>,
  env: Env,
  ctx: ExecutionContext,
): Promise<void> {
  const config = configOf(env);
  const db = createDb(env.DB);
  const now = Date.now();
  const live = await processingJobIds(db, [...new Set(batch.messages.map((message) => message.body.jobId))]);
  const messages = batch.messages.filter((message) => live.has(message.body.jobId));

  const doh = dohClientFor(config);
  const routes = await Promise.all(
    messages.map((message) =>
      resolveMailRoute(message.body.domain, { doh, allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS }),
    ),
  );
  const probes = await probeAll(env, config, messages, routes);
  const work: Work[] = messages.map((message, index) => ({
    message,
    dns: routes[index] ?? { kind: 'error', message: 'not resolved' },
    probe: probes[index] ?? { kind: 'skipped' },
  }));

  const finals = new Map<string, AddressResult[]>();
  const retries: BatchMessage[] = [];
  for (const { message, dns, probe } of work) {
    const { jobId, domain, attempt, addresses } = message.body;
    const again: BatchMessage['addresses'] = [];
    for (const address of addresses) {
      const { result, policy } = verdictFor(address.email, dns, probe, now);
      if (policy.retry !== 'none' && attempt + 1 < config.BATCH_MAX_ATTEMPTS) {
        again.push(address);
        continue;
      }
      const list = finals.get(jobId) ?? [];
      list.push(addressResult(address.idx, result, policy.refundable));
      finals.set(jobId, list);
    }
    if (again.length > 0) retries.push({ jobId, domain, attempt: attempt + 1, addresses: again });
  }

  for (const retry of retries) {
    await markRequeued(
      db,
      retry.jobId,
      retry.addresses.map((address) => address.idx),
      now,
    );
    await enqueueBatchWork(
      env.VERIFY_QUEUE as Queue<BatchMessage>,
      [retry],
      retryDelaySeconds(config, retry.attempt),
    );
  }
  for (const [jobId, results] of finals) {
    const { completed } = await recordResults(db, jobId, results, Date.now());
    if (completed) ctx.waitUntil(deliverJobWebhook(db, jobId, config, Date.now()));
  }
  batch.ackAll();
}

/** Exponential: base, 2×base, 4×base … capped at 15 minutes. */
export function retryDelaySeconds(config: Config, attempt: number): number {
  return Math.min(900, config.BATCH_RETRY_BASE_SECONDS * 2 ** Math.max(0, attempt - 1));
}

async function probeAll(
  env: Env,
  config: Config,
  messages: Message<BatchMessage>[],
  routes: DnsOutcome[],
): Promise<ProbeOutcome[]> {
  const requests: ProbeRequest[] = [];
  const positions: number[] = [];
  routes.forEach((route, index) => {
    const message = messages[index];
    if (route.kind !== 'mx' || !message) return;
    positions.push(index);
    requests.push({
      emails: message.body.addresses.map((address) => address.email),
      domain: message.body.domain,
      mx: route.mx,
      mailFrom: config.MAIL_FROM,
      helo: config.HELO_NAME,
      timeoutMs: config.BATCH_PROBE_TIMEOUT_MS,
      transcript: false,
    });
  });
  const outcomes: ProbeOutcome[] = routes.map(() => ({ kind: 'skipped' }));
  if (requests.length === 0) return outcomes;
  let answers: ProbeOutcome[];
  if (!config.SMTP_ENABLED) {
    answers = requests.map(() => ({ kind: 'unavailable', message: 'SMTP probing is disabled' }));
  } else {
    const hub = env.PROBER_HUB.get(env.PROBER_HUB.idFromName(config.PROBER_REGION));
    answers = await hub.probeMany(requests, config.BATCH_PROBE_TIMEOUT_MS + 5_000);
  }
  positions.forEach((position, index) => {
    outcomes[position] = answers[index] ?? { kind: 'unavailable', message: 'no answer' };
  });
  return outcomes;
}

function verdictFor(email: string, dns: DnsOutcome, probe: ProbeOutcome, now: number): Verdict {
  return assessVerdict({
    email,
    dns,
    probe,
    verifiedAt: new Date(now).toISOString(),
    processingTimeMs: Math.max(0, Date.now() - now),
  });
}
