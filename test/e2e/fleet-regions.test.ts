// Regions with failover through the whole system: PROBER_REGIONS=primary,secondary, a prober in
// each. The primary's prober holds a job's probes and is then stopped: nothing is lost, the job
// completes right through the secondary, and a single call made meanwhile gets its real verdict
// within its budget. How long the failover takes is a figure of `npm run bench -- fleet`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilValue } from '../eventually.ts';
import { bulkDomainNames } from '../world/index.ts';
import { okJson, type System, startSystem } from './harness.ts';

let system: System;

beforeAll(async () => {
  system = await startSystem({ credits: 1_000, vars: { PROBER_REGIONS: 'primary,secondary' } });
  await system.stack.addProber({ region: 'secondary' });
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

describe('regions with failover', () => {
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
    await untilValue(
      async () => {
        const { job } = await okJson<{ job: JobStatus }>(await system.api(`/api/v1/bulk/status/${jobId}`));
        return job.status === 'processing' ? job : undefined;
      },
      'the job is out at the primary',
      50_000,
      250,
    );
    await system.stack.stopProber('SIGKILL');

    const { data } = await okJson<{ data: { status: string; subStatus: string } }>(
      await system.api('/api/v1/verify', {
        json: { email: `bob@${system.world.domains.accept}`, fresh: true },
      }),
    );
    expect({ status: data.status, subStatus: data.subStatus }).toEqual({
      status: 'deliverable',
      subStatus: 'accepted_email',
    });

    const job = await untilValue(
      async () => {
        const { job } = await okJson<{ job: JobStatus }>(await system.api(`/api/v1/bulk/status/${jobId}`));
        return job.status === 'completed' ? job : undefined;
      },
      'the job completes through the secondary region',
      100_000,
      1_000,
    );
    expect(job).toMatchObject({ processedEmails: 300, deliverableCount: 300, creditsRefunded: 0 });
  });
});
