// Regions with failover through the whole system: PROBER_REGIONS=primary,secondary, a prober in
// each. The primary's only egress (127.0.0.2) is listed on Spamhaus's zone at half the company
// MX hosts, the secondary's (127.0.0.1) is not: the addresses there get their real verdicts,
// through the secondary. Then the primary's prober holds a job's probes and is stopped: nothing
// is lost, the job completes right through the secondary, and a single call made meanwhile gets
// its real verdict within its budget. How long the failover takes is a figure of
// `npm run bench -- fleet`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyList } from '../world/expected-verdicts.ts';
import { bulkDomainNames } from '../world/index.ts';
import { jobWhen, okJson, type System, startSystem, subStatusesOf } from './harness.ts';

const LISTED = '127.0.0.2';
let system: System;

beforeAll(async () => {
  system = await startSystem({
    credits: 1_000,
    vars: { PROBER_REGIONS: 'primary,secondary' },
    world: { companies: { domains: 8, hosts: 4, blocklisted: { clients: [LISTED], hosts: [1, 3] } } },
    proberEnv: { SOURCE_ADDRESSES: LISTED },
  });
  await system.stack.addProber({ region: 'secondary', env: { SOURCE_ADDRESSES: '127.0.0.1' } });
});

afterAll(async () => {
  await system?.close();
});

interface JobStatus {
  status: string;
  processedEmails: number;
  deliverableCount: number;
  creditsRefunded: number;
}

/** A single call's verdict for `email`, asked of the mail server (`fresh`). */
async function verdictOf(email: string): Promise<string> {
  const { data } = await okJson<{ data: { status: string; subStatus: string } }>(
    await system.api('/api/v1/verify', { json: { email, fresh: true } }),
  );
  return `${data.status} / ${data.subStatus}`;
}

/** The job's status once it is `status`. */
function jobIs(jobId: string, status: string, what: string): Promise<JobStatus> {
  return jobWhen<JobStatus>(system, jobId, (job) => job.status === status, { what });
}

describe('regions with failover', () => {
  it("answers addresses the primary's every egress is refused for through the secondary, with their real verdicts", async () => {
    const listing = system.world.companyMx.filter((mx) => mx.name === 'company1' || mx.name === 'company3');
    // company-001.test's MX is mx1.company.test, which refuses the primary's address.
    expect(await verdictOf('user00001@company-001.test')).toBe('deliverable / accepted_email');
    // The listing host refused the primary and accepted the address from the secondary's egress.
    const [mx1] = listing;
    expect(mx1?.stats().blocklisted).toBeGreaterThan(0);
    expect((mx1?.stats().rcpts ?? 0) - (mx1?.stats().rejectedRcpts ?? 0)).toBeGreaterThan(0);

    // A list over the four hosts: right verdicts everywhere, never antispam_blocked.
    const list = companyList({ count: 80, domains: 8 });
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { json: { emails: list.map((row) => row.address) } }),
    );
    await jobIs(jobId, 'completed', 'the list completes');
    const found = await subStatusesOf(system, jobId);
    const wrong = list.filter((row) => found.get(row.address) !== row.subStatus);
    expect(wrong.map((row) => `${row.address}: ${found.get(row.address)}`)).toEqual([]);
    // mx3.company.test was new to the primary: it asked, was refused, and passed the work on.
    expect(listing[1]?.stats().blocklisted).toBeGreaterThan(0);
  });

  it("completes a job through the next region when the primary's prober stops mid-job, and answers single calls meanwhile", async () => {
    expect(system.stack.regions).toEqual(['primary', 'secondary']);
    // The primary's prober takes the job's probes and sits on them (frozen), then is stopped.
    system.holdProber();
    const domains = bulkDomainNames(50);
    const emails = Array.from(
      { length: 300 },
      (_, index) => `user${index}@${domains[index % domains.length]}`,
    );
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { json: { emails } }),
    );
    await jobIs(jobId, 'processing', 'the job is out at the primary');
    await system.stack.stopProber('SIGKILL');

    expect(await verdictOf(`bob@${system.world.domains.accept}`)).toBe('deliverable / accepted_email');

    const job = await jobIs(jobId, 'completed', 'the job completes through the secondary region');
    expect(job).toMatchObject({ processedEmails: 300, deliverableCount: 300, creditsRefunded: 0 });
  });
});
