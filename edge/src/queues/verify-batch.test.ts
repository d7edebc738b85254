import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  waitOnExecutionContext,
} from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { until, untilValue } from '../../../test/eventually.ts';
import { answerQuery } from '../../../test/world/dns-answer.ts';
import { ZONE } from '../../../test/world/zone.ts';
import { failingD1 } from '../../test/failing-d1.ts';
import { reportFor, startFakeProber, withEvidence } from '../../test/fake-prober.ts';
import {
  balanceOf,
  call,
  createJobAs,
  db,
  ledgerOf,
  listsCountOf,
  listsRows,
  newCaller,
  recordAcceptRoute,
} from '../../test/fixtures.ts';
import { configOf } from '../config.ts';
import { SAMPLE_WAIT_MS } from '../services/batch/pace-sample.ts';
import type { BatchMessage, WorkMessage } from '../services/batch/queue.ts';
import { routeFetchesAtMost } from '../services/verify/domain-facts.ts';
import { recordCatchAll, recordMailRoute } from '../storage/domain-facts.ts';
import { consumeVerifyBatch, dohBudgetOf } from './verify-batch.ts';

/** The messages upload would have sent, rebuilt from the job's addresses (one per domain). */
async function messagesOf(jobId: string): Promise<WorkMessage[]> {
  const results = await listsRows<{ idx: number; email: string; domain: string }>(
    'SELECT idx, email, domain FROM job_addresses WHERE job_id = ? ORDER BY idx',
    jobId,
  );
  const byDomain = new Map<string, WorkMessage>();
  for (const row of results) {
    const message = byDomain.get(row.domain) ?? { jobId, domain: row.domain, attempt: 0, addresses: [] };
    message.addresses.push({ idx: row.idx, email: row.email });
    byDomain.set(row.domain, message);
  }
  return [...byDomain.values()];
}

/** Runs the consumer over `messages`, with `bindings` over the test env's (e.g. a failing D1). */
async function consume(messages: BatchMessage[], bindings: Partial<Env> = {}): Promise<void> {
  const batch = createMessageBatch<BatchMessage>(
    'verify-batch',
    messages.map((body, index) => ({ id: `m${index}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await consumeVerifyBatch(batch, { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
  const result = await getQueueResult(batch, ctx);
  expect(result.ackAll).toBe(true);
}

/** Each result of a completed job as [email, subStatus], in upload order. */
async function subStatusesOf(jobId: string, apiKey: string): Promise<[string, string][]> {
  const body = await (await call(`/api/v1/bulk/results/${jobId}`, { key: apiKey })).json<{
    results: { email: string; subStatus: string }[];
  }>();
  return body.results.map((result) => [result.email, result.subStatus]);
}

/** Waits until `count` addresses of the job have an answer, final or provisional. */
async function untilAnswered(jobId: string, count: number): Promise<void> {
  await until(async () => {
    const answered = await listsCountOf(
      'SELECT COUNT(*) AS n FROM job_addresses WHERE job_id = ? AND sub_status IS NOT NULL',
      jobId,
    );
    return answered >= count;
  }, `job ${jobId} has ${count} answers`);
}

/** The job's status once it is no longer processing (polled: the hub records results in the background). */
async function jobOnceSettled(key: string, jobId: string): Promise<Record<string, unknown>> {
  return untilValue(async () => {
    const { job } = await (await call(`/api/v1/bulk/status/${jobId}`, { key })).json<{
      job: Record<string, unknown>;
    }>();
    return job.status === 'processing' ? undefined : job;
  }, `job ${jobId} is no longer processing`);
}

describe('verify-batch consumer', () => {
  it('asks a greylisted answer again in a recheck round after completion: deliverable, charged then, only its own round', async () => {
    let greylisting = true;
    const prober = await startFakeProber('default', (probe) =>
      greylisting && probe.emails.some((email) => email.startsWith('bob'))
        ? reportFor(
            probe,
            450,
            '4.2.0',
            'Recipient address rejected: Greylisted, see http://postgrey.example/',
            450,
          )
        : reportFor(probe, 250, '2.1.5', 'OK', 550),
    );
    await recordAcceptRoute('recheck-accept.test');
    await recordAcceptRoute('recheck-grey.test');
    const caller = await newCaller({ credits: 10 });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: {
        emails: ['alice@recheck-accept.test', 'bob@recheck-grey.test'],
        recheck: true,
        maxWaitSeconds: 30,
      },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    // The greylist pace's first retry would not finish by the 30 s deadline: final at once.
    await consume(await messagesOf(jobId));
    expect(await jobOnceSettled(caller.apiKey, jobId)).toMatchObject({
      status: 'completed',
      deliverableCount: 1,
      unknownCount: 1,
      creditsRefunded: 1,
      recheck: true,
      recheckedAt: null,
    });
    expect(await balanceOf(caller.accountId)).toBe(9);

    // The round's time has come (the schedule counts from completion), and the server lets bob in.
    greylisting = false;
    await env.DB.prepare('UPDATE jobs SET recheck_due_at = ?2 WHERE id = ?1')
      .bind(jobId, Date.now() - 1)
      .run();
    await consume([{ kind: 'recheck', jobId, round: 0, dueAt: Date.now() - 1 }]);
    // Work of another round (a late or replayed message) is not probed.
    const before = prober.probes.length;
    const bob = { idx: 1, email: 'bob@recheck-grey.test' };
    await consume([
      { kind: 'work', jobId, domain: 'recheck-grey.test', attempt: 0, recheckRound: 7, addresses: [bob] },
    ]);
    expect(prober.probes.length).toBe(before);
    await consume([
      { kind: 'work', jobId, domain: 'recheck-grey.test', attempt: 0, recheckRound: 1, addresses: [bob] },
    ]);
    const updated = await untilValue(async () => {
      const { job } = await (await call(`/api/v1/bulk/status/${jobId}`, { key: caller.apiKey })).json<{
        job: Record<string, unknown>;
      }>();
      return job.recheckedAt ? job : undefined;
    }, `job ${jobId} was rechecked`);
    expect(updated).toMatchObject({
      status: 'completed',
      deliverableCount: 2,
      unknownCount: 0,
      creditsCharged: 3,
      creditsRefunded: 1,
    });
    expect(await subStatusesOf(jobId, caller.apiKey)).toEqual([
      ['alice@recheck-accept.test', 'accepted_email'],
      ['bob@recheck-grey.test', 'accepted_email'],
    ]);
    // bob was refunded at completion; his known answer is charged now (docs/money.md).
    expect(await balanceOf(caller.accountId)).toBe(8);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reference.startsWith(jobId))).toEqual([
      { delta: -2, reason: 'bulk_charge', reference: jobId },
      { delta: 1, reason: 'bulk_refund', reference: jobId },
      { delta: -1, reason: 'recheck_charge', reference: `${jobId}:round-1` },
    ]);
    prober.close();
  });

  it('writes verdicts, completes the job, refunds policy blocks once, and ignores a replay', async () => {
    const prober = await startFakeProber('default', (probe) => {
      const local = probe.emails[0]?.split('@')[0] ?? '';
      if (probe.domain === 'rbl.test')
        return reportFor(probe, 554, '5.7.1', 'Service unavailable; blocked using zen.spamhaus.org');
      return {
        ...reportFor(probe, 250, '2.1.5', 'OK', 550),
        perAddress: probe.emails.map((email) => ({
          email,
          reply: email.startsWith('alice')
            ? { code: 250, enhanced: '2.1.5', text: 'OK' }
            : { code: 550, enhanced: '5.1.1', text: 'User unknown' },
          failure: null,
        })),
        catchAllReply: local ? { code: 550, enhanced: '5.1.1', text: 'User unknown' } : null,
      };
    });
    const caller = await newCaller({ credits: 10 });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: {
        emails: [
          'alice@accept.test',
          'nobody@accept.test',
          'x@rbl.test',
          'y@rbl.test',
          'z@nonexistent.test',
          'alice@accept.test',
        ],
      },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    expect(await balanceOf(caller.accountId)).toBe(5);

    const messages = await messagesOf(jobId);
    await consume(messages);
    // The consumer hands the probes to the hub and returns; the hub records them as they finish.
    const status = { job: await jobOnceSettled(caller.apiKey, jobId) };
    expect(status.job).toMatchObject({
      status: 'completed',
      progress: 100,
      totalEmails: 5,
      processedEmails: 5,
      deliverableCount: 1,
      undeliverableCount: 2,
      unknownCount: 2,
      creditsCharged: 5,
      creditsRefunded: 2,
    });
    expect(await balanceOf(caller.accountId)).toBe(7);

    // The queue may deliver a message twice: nothing changes.
    await consume(messages);
    expect(await balanceOf(caller.accountId)).toBe(7);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reference === jobId)).toEqual([
      { delta: -5, reason: 'bulk_charge', reference: jobId },
      { delta: 2, reason: 'bulk_refund', reference: jobId },
    ]);

    expect(await subStatusesOf(jobId, caller.apiKey)).toEqual([
      ['alice@accept.test', 'accepted_email'],
      ['nobody@accept.test', 'mailbox_not_found'],
      ['x@rbl.test', 'antispam_blocked'],
      ['y@rbl.test', 'antispam_blocked'],
      ['z@nonexistent.test', 'invalid_domain'],
      ['alice@accept.test', 'accepted_email'],
    ]);
    prober.close();
  });

  it('refunds by the policy table: relay denial, a deferral, a DNS failure; charges a mailbox answer', async () => {
    const prober = await startFakeProber('default', (probe) => {
      if (probe.domain === 'accept.test') return reportFor(probe, 554, '5.7.1', 'Relay access denied');
      if (probe.domain === 'greylist.test')
        return reportFor(
          probe,
          421,
          '4.7.0',
          '[TSS04] Messages from 203.0.113.7 temporarily deferred due to unexpected volume or user complaints',
        );
      return reportFor(probe, 550, '5.1.1', 'User unknown');
    });
    const caller = await newCaller({ credits: 10 });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['a@accept.test', 'b@greylist.test', 'c@servfail.test', 'd@full.test'] },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    expect(await balanceOf(caller.accountId)).toBe(6);

    // Every address answered (finally, or for now), then the deadline makes the answers final.
    await consume(await messagesOf(jobId));
    await untilAnswered(jobId, 4);
    await consume([{ kind: 'deadline', jobId }]);
    await jobOnceSettled(caller.apiKey, jobId);
    expect(await subStatusesOf(jobId, caller.apiKey)).toEqual([
      ['a@accept.test', 'provider_unverifiable'],
      ['b@greylist.test', 'antispam_blocked'],
      ['c@servfail.test', 'dns_error'],
      ['d@full.test', 'mailbox_not_found'],
    ]);
    expect(await balanceOf(caller.accountId)).toBe(9);
    prober.close();
  });

  it('takes the mail route and the catch-all answer from the domain facts every account shares', async () => {
    // Facts another verification left: DNS does not know this domain, the facts do.
    const domain = 'facts-only.test';
    const now = Date.now();
    const route = {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: `mx.${domain}`, preference: 10, ips: ['127.0.0.2'] }],
    };
    await recordMailRoute(db(), {
      domain,
      route: JSON.stringify(route),
      routeKey: `mx|MX|10 mx.${domain}`,
      provider: null,
      expiresAt: now + 3600_000,
      now,
    });
    const accepted = { code: 250, enhanced: '2.1.5', text: 'OK' };
    await recordCatchAll(db(), {
      domain,
      reply: JSON.stringify(accepted),
      catchAll: true,
      expiresAt: now + 3600_000,
      now,
    });
    // A prober that has not tested a made-up address of the domain.
    const prober = await startFakeProber('default', (probe) => reportFor(probe, 250, '2.1.5', 'OK'));
    try {
      const caller = await newCaller({ credits: 10 });
      const upload = await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: [`alice@${domain}`] },
      });
      const { jobId } = await upload.json<{ jobId: string }>();
      await consume(await messagesOf(jobId));
      await jobOnceSettled(caller.apiKey, jobId);
      expect(await subStatusesOf(jobId, caller.apiKey)).toEqual([[`alice@${domain}`, 'catch_all']]);
      // The upload's own queue message may have been consumed as well: every probe used the facts' route.
      const routes = prober.probes.filter((probe) => probe.domain === domain).map((probe) => probe.mx);
      expect(routes.length).toBeGreaterThan(0);
      expect(new Set(routes.map((mx) => mx.map((host) => host.host).join(' ')))).toEqual(
        new Set([`mx.${domain}`]),
      );
    } finally {
      prober.close();
    }
  });

  it('skips messages of jobs that are no longer processing', async () => {
    const caller = await newCaller({ mode: 'test' });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['deliverable@x.test'] },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    const resultsOf = () => listsRows('SELECT result_json FROM job_addresses WHERE job_id = ?', jobId);
    const before = await resultsOf();
    expect(before).toHaveLength(1);
    await consume([
      { jobId, domain: 'x.test', attempt: 0, addresses: [{ idx: 0, email: 'deliverable@x.test' }] },
    ]);
    expect(await resultsOf()).toEqual(before);
  });

  it('asks a greylisted address again, and at the deadline makes its last answer final, refunds it and plans its follow-up', async () => {
    const prober = await startFakeProber('default', (probe) =>
      probe.domain === 'greylist.test'
        ? reportFor(
            probe,
            450,
            '4.2.0',
            'Recipient address rejected: Greylisted, see http://postgrey.example/help',
          )
        : reportFor(probe, 250, '2.1.5', 'OK', 550),
    );
    const caller = await newCaller({ credits: 10 });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['alice@accept.test', 'bob@greylist.test'], maxWaitSeconds: 300, recheck: true },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    await consume(await messagesOf(jobId));
    // The accepted address is final; the greylisted one waits for its retry with its answer so far.
    const provisional = () =>
      listsRows<{ state: string; subStatus: string }>(
        'SELECT state, sub_status AS subStatus FROM job_addresses WHERE job_id = ? ORDER BY idx',
        jobId,
      );
    await until(
      async () => (await provisional())[1]?.subStatus === 'greylisted',
      'the greylisted answer is recorded',
    );
    expect(await provisional()).toEqual([
      { state: 'done', subStatus: 'accepted_email' },
      { state: 'queued', subStatus: 'greylisted' },
    ]);

    // The consumer read the job's recheck with its row: the results write asks D1 nothing of it.
    await consume([{ kind: 'deadline', jobId }], { DB: failingD1(env.DB, /^\s*SELECT recheck FROM jobs/) });
    const job = await jobOnceSettled(caller.apiKey, jobId);
    expect(job).toMatchObject({
      status: 'completed',
      deliverableCount: 1,
      unknownCount: 1,
      creditsCharged: 2,
      creditsRefunded: 1,
      recheck: true,
    });
    expect(typeof job.deadlineAt).toBe('string');
    // The deadline's final answer is recheckable: the follow-up is planned in the same transaction.
    expect(typeof job.nextRecheckAt).toBe('string');
    const [bob] = await listsRows<{ recheck: string | null }>(
      'SELECT recheck FROM job_addresses WHERE job_id = ? AND idx = 1',
      jobId,
    );
    expect(bob?.recheck).toBe('due');
    const results = await (await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey })).json<{
      results: { subStatus: string }[];
    }>();
    expect(results.results.map((result) => result.subStatus)).toEqual(['accepted_email', 'greylisted']);
    expect(await balanceOf(caller.accountId)).toBe(9);
    prober.close();
  });

  it('keeps the evidence behind each answer of a job uploaded with evidence, each with only its own address', async () => {
    const userUnknown = { code: 550, enhanced: '5.1.1', text: 'User unknown' };
    const prober = await startFakeProber('default', (probe) => {
      const report = reportFor(probe, 250, '2.1.5', 'OK', 550);
      const perAddress = report.perAddress.map((outcome) =>
        outcome.email.startsWith('nobody') ? { ...outcome, reply: userUnknown } : outcome,
      );
      return withEvidence(probe, { ...report, perAddress });
    });
    await recordAcceptRoute('proof.test');
    const caller = await newCaller({ credits: 10 });
    const emails = ['alice@proof.test', 'nobody@proof.test', 'carol@proof.test'];
    const { jobId } = await (
      await call('/api/v1/bulk/upload', { key: caller.apiKey, json: { emails, evidence: true } })
    ).json<{ jobId: string }>();
    await consume(await messagesOf(jobId));
    expect(await jobOnceSettled(caller.apiKey, jobId)).toMatchObject({ status: 'completed', evidence: true });
    expect(prober.probes.at(-1)?.evidence).toBe(true);

    const { results } = await (await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey })).json<{
      results: { email: string; evidence?: { dialogue: { command: string | null }[] } }[];
    }>();
    for (const result of results) {
      const shown = JSON.stringify(result.evidence);
      expect(result.evidence?.dialogue.map((step) => step.command)).toContain(`RCPT TO:<${result.email}>`);
      for (const other of emails.filter((email) => email !== result.email))
        expect(shown).not.toContain(other.slice(0, other.indexOf('@')));
    }
    const csv = await (await call(`/api/v1/bulk/results/${jobId}?format=csv`, { key: caller.apiKey })).text();
    expect((parse(csv) as string[][]).map((row) => row.at(-1))).toEqual([
      'rcpt_smtp_reply',
      '250 2.1.5 <alice@proof.test>: OK',
      '550 5.1.1 <nobody@proof.test>: User unknown',
      '250 2.1.5 <carol@proof.test>: OK',
    ]);
    prober.close();
  });

  it('asks for no evidence, and exports no rcpt_smtp_reply, for a job uploaded without it', async () => {
    const prober = await startFakeProber('default', (probe) =>
      withEvidence(probe, reportFor(probe, 250, '2.1.5', 'OK', 550)),
    );
    await recordAcceptRoute('no-proof.test');
    const caller = await newCaller({ credits: 10 });
    const { jobId } = await (
      await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        body: 'email\nalice@no-proof.test\n',
        headers: { 'content-type': 'text/csv' },
      })
    ).json<{ jobId: string }>();
    await consume(await messagesOf(jobId));
    expect(await jobOnceSettled(caller.apiKey, jobId)).toMatchObject({
      status: 'completed',
      evidence: false,
    });
    expect(prober.probes.at(-1)?.evidence).toBeUndefined();
    const csv = await (await call(`/api/v1/bulk/results/${jobId}?format=csv`, { key: caller.apiKey })).text();
    expect(csv).not.toContain('rcpt_smtp_reply');
    const { results } = await (await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey })).json<{
      results: { evidence?: unknown }[];
    }>();
    expect(results[0]?.evidence).toBeUndefined();
    prober.close();
  });

  it('takes evidence as a CSV upload field and refuses a value that is not true or false', async () => {
    // The job's messages may be consumed in the background: its route needs no DNS.
    await recordAcceptRoute('form-proof.test');
    const caller = await newCaller({ credits: 10 });
    const form = (evidence: string) => {
      const body = new FormData();
      body.set('file', new File(['email\nalice@form-proof.test\n'], 'list.csv', { type: 'text/csv' }));
      body.set('evidence', evidence);
      return call('/api/v1/bulk/upload', { key: caller.apiKey, body });
    };
    const refused = await form('yes');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(await balanceOf(caller.accountId)).toBe(10);
    const { jobId } = await (await form('true')).json<{ jobId: string }>();
    const { job } = await (await call(`/api/v1/bulk/status/${jobId}`, { key: caller.apiKey })).json<{
      job: { evidence: boolean };
    }>();
    expect(job.evidence).toBe(true);
  });

  it('measures how long greylisting held an address back, and a single call then says to wait that long', async () => {
    const domain = 'greylist-measured.test';
    let greylisting = true;
    let namesDelay = false;
    const prober = await startFakeProber('default', (probe) =>
      probe.domain !== domain || !greylisting
        ? reportFor(probe, 250, '2.1.5', 'OK', 550)
        : namesDelay
          ? reportFor(probe, 451, '4.7.1', 'Greylisted, please try again in 180 seconds', 451)
          : reportFor(
              probe,
              450,
              '4.2.0',
              'Recipient address rejected: Greylisted, see http://postgrey.example/',
              450,
            ),
    );
    await recordAcceptRoute(domain);
    const caller = await newCaller({ credits: 10 });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: [`bob@${domain}`], maxWaitSeconds: 3600 },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    const bob = { idx: 0, email: `bob@${domain}` };
    const measured = async () =>
      (
        await env.DB.prepare('SELECT greylist_delay_s AS seconds FROM domain_facts WHERE domain = ?')
          .bind(domain)
          .first<{ seconds: number | null }>()
      )?.seconds ?? null;
    const since = Date.now() - 240_000;
    // A retry still greylisted measures nothing.
    await consume([
      { jobId, domain, attempt: 1, retry: { schedule: 'greylist', count: 1, since }, addresses: [bob] },
    ]);
    await untilAnswered(jobId, 1);
    expect(await measured()).toBeNull();

    // The server lets the retry through: it held bob back for the time since the first answer.
    greylisting = false;
    await consume([
      { jobId, domain, attempt: 2, retry: { schedule: 'greylist', count: 2, since }, addresses: [bob] },
    ]);
    const seconds = await untilValue(
      async () => (await measured()) ?? undefined,
      'the greylisting delay is measured',
    );
    expect(seconds).toBeGreaterThanOrEqual(240);
    expect(seconds).toBeLessThan(300);

    // Another address of the domain, greylisted on a single call, is told to wait the measured time
    // (not postgrey's usual 300 s), and its answer is kept no longer than that.
    greylisting = true;
    const verify = async (email: string) =>
      (
        await (
          await call('/api/v1/verify', { key: caller.apiKey, json: { email } })
        ).json<{
          data: { subStatus: string; retryAfterSeconds?: number };
        }>()
      ).data;
    expect(await verify(`carol@${domain}`)).toMatchObject({
      subStatus: 'greylisted',
      retryAfterSeconds: seconds,
    });
    // A delay the server names is the one it means.
    namesDelay = true;
    expect(await verify(`dave@${domain}`)).toMatchObject({ subStatus: 'greylisted', retryAfterSeconds: 180 });
    prober.close();
  });

  it('refuses a maxWaitSeconds outside its bounds', async () => {
    const caller = await newCaller({ credits: 10 });
    for (const maxWaitSeconds of [5, 100_000, 'soon']) {
      const response = await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['alice@accept.test'], maxWaitSeconds },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    expect(await balanceOf(caller.accountId)).toBe(10);
  });
});

describe('verify-batch consumer within the subrequest limit', () => {
  afterEach(() => vi.restoreAllMocks());

  it('resolves only the routes that fit in its share of the plan limit, and puts the rest back on the queue', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    // 100 domains of one job, none in the facts or the DNS cache: each needs DoH (NXDOMAIN here).
    const emails = Array.from({ length: 100 }, (_, index) => `user@d${index}-${run}.budget.test`);
    const caller = await newCaller({ credits: 100 });
    const { jobId } = await createJobAs(caller, 'live', emails);
    const dohOrigin = new URL(env.DOH_URL).origin;
    let dohFetches = 0;
    const passThrough = globalThis.fetch.bind(globalThis);
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const request = new Request(input, init);
      if (!request.url.startsWith(dohOrigin)) return passThrough(input, init);
      dohFetches++;
      // The world's resolver answers here, in this process: what is counted is the fetches, and
      // a lookup slowed past its timeout on a busy machine would turn into a retry, not a count.
      const answer = answerQuery(new Uint8Array(await request.arrayBuffer()), ZONE);
      if (answer === null) throw new Error('the world has no silent names under budget.test');
      return new Response(new Uint8Array(answer), { headers: { 'content-type': 'application/dns-message' } });
    });
    const requeued: BatchMessage[] = [];
    const queue = {
      send: async () => {},
      sendBatch: async (batch: { body: BatchMessage }[]) =>
        void requeued.push(...batch.map(({ body }) => body)),
    } as unknown as Queue<BatchMessage>;
    // A plan of 100 subrequests: DoH may take 80 of them, and a route up to 21 (MX, then A and
    // AAAA of up to 10 hosts), so one invocation resolves routes only while 21 fetches are left.
    const plan = { ...env, SUBREQUEST_LIMIT: '100', VERIFY_QUEUE: queue };
    const budget = dohBudgetOf(configOf(plan));
    expect(budget).toBe(80);
    expect(routeFetchesAtMost(configOf(plan))).toBe(21);

    let messages: BatchMessage[] = await messagesOf(jobId);
    const invocations: { fetches: number; resolved: number; requeued: number }[] = [];
    while (messages.length > 0 && invocations.length < 10) {
      dohFetches = 0;
      requeued.length = 0;
      const batch = createMessageBatch<BatchMessage>(
        'verify-batch',
        messages.map((body, index) => ({ id: `b${index}`, timestamp: new Date(), attempts: 1, body })),
      );
      const ctx = createExecutionContext();
      await consumeVerifyBatch(batch, plan, ctx);
      await waitOnExecutionContext(ctx);
      expect((await getQueueResult(batch, ctx)).ackAll).toBe(true);
      invocations.push({
        fetches: dohFetches,
        resolved: messages.length - requeued.length,
        requeued: requeued.length,
      });
      // What went back is work not done, unchanged.
      for (const message of requeued) expect(messages).toContainEqual(message);
      messages = [...requeued];
    }
    // Each NXDOMAIN took one fetch: the first invocation resolved routes while 21 were left
    // (60 of them), the next one the other 40. Neither went past its 80.
    expect(invocations).toEqual([
      { fetches: 60, resolved: 60, requeued: 40 },
      { fetches: 40, resolved: 40, requeued: 0 },
    ]);
    for (const { fetches } of invocations) expect(fetches).toBeLessThanOrEqual(budget);
    await untilAnswered(jobId, 100);
    const results = await listsRows<{ subStatus: string }>(
      'SELECT DISTINCT sub_status AS subStatus FROM job_addresses WHERE job_id = ?',
      jobId,
    );
    expect(results).toEqual([{ subStatus: 'invalid_domain' }]);
  });
});

describe('verify-batch consumer for an account with probers of its own', () => {
  it("sends the account's work to its own prober, and with the fallback off never to the shared fleet", async () => {
    const domain = 'own-probers.test';
    await recordAcceptRoute(domain);
    const accept = (probe: Parameters<typeof reportFor>[0]) => reportFor(probe, 250, '2.1.5', 'OK', 550);
    const caller = await newCaller({ credits: 10 });
    await env.DB.prepare('UPDATE accounts SET shared_fleet_fallback = 0 WHERE id = ?1')
      .bind(caller.accountId)
      .run();
    const shared = await startFakeProber('default', accept);
    let own: Awaited<ReturnType<typeof startFakeProber>> | null = null;
    try {
      const upload = await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: [`alice@${domain}`, `bob@${domain}`] },
      });
      const { jobId } = await upload.json<{ jobId: string }>();
      // No prober of its own yet: the work is refused, to be asked again on its schedule.
      await consume(await messagesOf(jobId));
      own = await startFakeProber('default', accept, 10, 5, undefined, caller.accountId);
      await consume(await messagesOf(jobId));
      await untilAnswered(jobId, 2);
      expect(own.probes.filter((probe) => probe.domain === domain).length).toBeGreaterThan(0);
      expect(shared.probes.filter((probe) => probe.domain === domain)).toEqual([]);
    } finally {
      own?.close();
      shared.close();
    }
  });
});

describe("verify-batch consumer and the account's own bounces", () => {
  it("answers a list's address the account's send hard-bounced from the bounce, probing the rest and another account's", async () => {
    const domain = 'learnt-batch.test';
    await recordAcceptRoute(domain);
    const prober = await startFakeProber('default', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    const [bounced, fresh, redelivered] = ['ann', 'bob', 'dan'].map((local) => `${local}@${domain}`) as [
      string,
      string,
      string,
    ];
    const unknown = (email: string) =>
      `smtp; 550 5.1.1 <${email}>: Recipient address rejected: User unknown in virtual mailbox table`;
    const hour = 3_600_000;
    const bouncedAt = new Date(Date.now() - hour).toISOString();
    try {
      const [owner, stranger] = [await newCaller({ credits: 10 }), await newCaller({ credits: 10 })];
      const reported = await call('/api/v1/outcomes', {
        key: owner.apiKey,
        json: {
          outcomes: [
            { email: bounced, outcome: 'hard_bounce', at: bouncedAt, diagnostic: unknown(bounced) },
            // A delivery after the bounce: the mailbox takes mail again, and is asked.
            {
              email: redelivered,
              outcome: 'hard_bounce',
              at: new Date(Date.now() - 2 * hour).toISOString(),
              diagnostic: unknown(redelivered),
            },
            { email: redelivered, outcome: 'delivered', at: bouncedAt },
          ],
        },
      });
      expect(reported.status).toBe(200);

      const upload = await call('/api/v1/bulk/upload', {
        key: owner.apiKey,
        json: { emails: [bounced, fresh, redelivered] },
      });
      const { jobId } = await upload.json<{ jobId: string }>();
      await consume(await messagesOf(jobId));
      expect(await jobOnceSettled(owner.apiKey, jobId)).toMatchObject({
        status: 'completed',
        deliverableCount: 2,
        undeliverableCount: 1,
        creditsCharged: 3,
        creditsRefunded: 0,
      });
      const { results } = await (await call(`/api/v1/bulk/results/${jobId}`, { key: owner.apiKey })).json<{
        results: {
          email: string;
          subStatus: string;
          meta: { learnt?: unknown; verifiedVia: string | null };
        }[];
      }>();
      expect(results.map(({ email, subStatus }) => [email, subStatus])).toEqual([
        [bounced, 'mailbox_not_found'],
        [fresh, 'accepted_email'],
        [redelivered, 'accepted_email'],
      ]);
      expect(results[0]?.meta).toMatchObject({
        verifiedVia: null,
        learnt: { kind: 'mailbox_bounce', bouncedAt, diagnostic: unknown(bounced) },
      });
      expect(results[2]?.meta.learnt).toBeUndefined();
      // Which addresses the jobs' probes asked about (the hub may ask one more than once); the
      // upload's sample of the domain rcpt had not met (pace-sample.ts) is the estimate's, not the job's.
      const probedFor = () => [
        ...new Set(
          prober.probes
            .filter((probe) => probe.domain === domain && probe.timeoutMs > SAMPLE_WAIT_MS)
            .flatMap((probe) => probe.emails),
        ),
      ];
      expect(probedFor().sort()).toEqual([fresh, redelivered]);

      // Another account's list of the same address gets the mail server's answer.
      const other = await call('/api/v1/bulk/upload', { key: stranger.apiKey, json: { emails: [bounced] } });
      const otherJob = (await other.json<{ jobId: string }>()).jobId;
      await consume(await messagesOf(otherJob));
      await jobOnceSettled(stranger.apiKey, otherJob);
      expect(await subStatusesOf(otherJob, stranger.apiKey)).toEqual([[bounced, 'accepted_email']]);
      expect(probedFor().sort()).toEqual([bounced, fresh, redelivered]);
    } finally {
      prober.close();
    }
  });
});
