// Batch verification against mail servers that defend themselves: company domains on
// Postfix-default MX hosts (error limits, connection cap, 20–80 ms RTT), unreachable and
// greylisting domains within a job deadline, three probers sharing the per-MX limit, and a
// single call beside a 10,000-address job.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyList, type ExpectedVerdict } from '../world/expected-verdicts.ts';
import { DOMAINS } from '../world/index.ts';
import { jobWhen, okJson, type System, startSystem, subStatusesOf } from './harness.ts';

let system: System;

/** Probes one prober has out to one MX host at once (the prober's PER_MX_CONCURRENCY default). */
const PER_MX_LIMIT = 5;

beforeAll(async () => {
  system = await startSystem({ greylistDelayMs: 1500, credits: 20_000 });
});

afterAll(async () => {
  await system?.close();
});

interface Job {
  status: string;
  processedEmails: number;
  creditsCharged: number;
  creditsRefunded: number;
  completedAt: string | null;
  deadlineAt: string | null;
}

async function uploaded(
  emails: string[],
  extra: Record<string, unknown> = {},
): Promise<{ jobId: string; estimatedTimeSeconds: number }> {
  return okJson(await system.api('/api/v1/bulk/upload', { json: { emails, ...extra } }));
}

async function upload(emails: string[], extra: Record<string, unknown> = {}): Promise<string> {
  return (await uploaded(emails, extra)).jobId;
}

/** The job once it is no longer processing. */
function settled(jobId: string): Promise<Job> {
  return jobWhen<Job>(system, jobId, (job) => job.status !== 'processing', { limitMs: 900_000 });
}

function expectVerdicts(found: Map<string, string>, expected: readonly ExpectedVerdict[]): void {
  const wrong = expected
    .filter((entry) => found.get(entry.address) !== entry.subStatus)
    .map((entry) => `${entry.address}: ${found.get(entry.address)} (expected ${entry.subStatus})`);
  expect(wrong).toEqual([]);
}

function companyStats() {
  return system.world.companyMx.map((mx) => mx.stats());
}

describe('batch against defended mail servers', () => {
  it('verifies 2,000 addresses over 40 Postfix-default domains, 40 % unknown, every verdict right, no hang-up', async () => {
    for (const mx of system.world.companyMx) mx.resetStats();
    const list = companyList({ count: 2000, domains: 40 });
    const jobId = await upload(list.map((entry) => entry.address));
    const job = await settled(jobId);
    expect(job).toMatchObject({ status: 'completed', processedEmails: 2000, creditsRefunded: 0 });
    expectVerdicts(await subStatusesOf(system, jobId), list);
    const stats = companyStats();
    expect(stats.map((mx) => mx.hardLimitHangups)).toEqual(stats.map(() => 0));
    expect(stats.map((mx) => mx.connectionCapRefusals)).toEqual(stats.map(() => 0));
  });

  it('finishes a list with a tarpit, a refused, a 421 and a greylisting domain by its deadline, refunding per policy', async () => {
    const domains = DOMAINS;
    const expected: ExpectedVerdict[] = [];
    const add = (domain: string, subStatus: string) => {
      for (let index = 0; index < 3; index++)
        expected.push({ address: `user${index}@${domain}`, status: 'unknown', subStatus, because: '' });
    };
    add(domains.tarpit, 'smtp_timeout');
    add(domains.ipv6, 'smtp_connection_failed');
    add(domains.banner421, 'mail_server_temporary_error');
    // Greylisted at first; asked again on the greylist schedule, after the server's delay.
    add(domains.greylist, 'accepted_email');
    add(domains.accept, 'accepted_email');
    const { jobId, estimatedTimeSeconds } = await uploaded(
      expected.map((entry) => entry.address),
      { maxWaitSeconds: 90 },
    );
    // Rcpt has met none of these domains: the upload's sample found the tarpit (two tries, each
    // to the 60 s probe timeout) and the greylister, which outlast the deadline. Counted as
    // ordinary domains, the list would have been estimated a few seconds.
    expect(estimatedTimeSeconds).toBe(90);
    const job = await settled(jobId);
    expect(job.status).toBe('completed');
    // The deadline is the job's contract: the last answers are made final when it comes.
    expect(Date.parse(job.completedAt ?? '')).toBeLessThanOrEqual(Date.parse(job.deadlineAt ?? '') + 5_000);
    expectVerdicts(await subStatusesOf(system, jobId), expected);
    // The policy table refunds the 421 deferrals; timeouts and refused connections are charged.
    expect(job).toMatchObject({ creditsCharged: 15, creditsRefunded: 3 });
  });

  it("with three probers linked, keeps every MX host within one prober's session limit", async () => {
    await system.stack.addProber();
    await system.stack.addProber();
    for (const mx of system.world.companyMx) mx.resetStats();
    const list = companyList({ count: 1200, domains: 40 });
    const jobId = await upload(list.map((entry) => entry.address));
    expect((await settled(jobId)).status).toBe('completed');
    expectVerdicts(await subStatusesOf(system, jobId), list);
    const stats = companyStats();
    expect(stats.every((mx) => mx.sessionsOpened > 0)).toBe(true);
    expect(Math.max(...stats.map((mx) => mx.maxConcurrentSessions))).toBeLessThanOrEqual(PER_MX_LIMIT);
  });

  it('answers a single call made while a 10,000-address job runs', async () => {
    const list = companyList({ count: 10_000, domains: 200 });
    const jobId = await upload(list.map((entry) => entry.address));
    const { job } = await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${jobId}`));
    expect(job.status).toBe('processing');
    const single = await okJson<{ data: { subStatus: string } }>(
      await system.api('/api/v1/verify', { json: { email: `alice@${DOMAINS.accept}` } }),
    );
    expect(single.data.subStatus).toBe('accepted_email');
    expect((await settled(jobId)).status).toBe('completed');
  });
});
