// Fair shares through the whole system: while one account's list of 100 tarpit domains (each its
// own MX name, each refused recipient held 5 s as Exchange does) holds probes, another account's
// single calls and its 1,000-address list are answered with their real verdicts. How fast is a
// figure of `npm run bench -- fleet`, not a test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkDomainNames, tarpitDomainNames } from '../world/index.ts';
import { jobWhen, newAccount, okJson, type System, startSystem } from './harness.ts';

let system: System;

beforeAll(async () => {
  system = await startSystem({ credits: 1_000 });
});

afterAll(async () => {
  await system?.close();
});

interface JobStatus {
  status: string;
  processedEmails: number;
  deliverableCount: number;
}

async function upload(emails: string[], key?: string): Promise<string> {
  const { jobId } = await okJson<{ jobId: string }>(
    await system.api('/api/v1/bulk/upload', { json: { emails }, ...(key ? { key } : {}) }),
  );
  return jobId;
}

async function status(jobId: string, key?: string): Promise<JobStatus> {
  const { job } = await okJson<{ job: JobStatus }>(
    await system.api(`/api/v1/bulk/status/${jobId}`, key ? { key } : {}),
  );
  return job;
}

describe('fair shares of the probers', () => {
  it("answers another account's single calls and list with real verdicts while a list of 100 tarpit domains runs", async () => {
    const tarpits = await upload(tarpitDomainNames(100).map((domain) => `nobody@${domain}`));
    // The tarpit list holds the prober before the other account arrives.
    await jobWhen(system, tarpits, (job) => job.status === 'processing', {
      what: 'the tarpit list is running',
    });
    const { key } = await newAccount(system, 2_000);

    const domains = bulkDomainNames(50);
    const list = Array.from(
      { length: 1_000 },
      (_, index) => `user${index}@${domains[index % domains.length]}`,
    );
    const listJob = await upload(list, key);
    for (let call = 0; call < 10; call++) {
      const { data } = await okJson<{ data: { status: string; subStatus: string } }>(
        await system.api('/api/v1/verify', {
          key,
          json: { email: `user${call}@${system.world.domains.accept}`, fresh: true },
        }),
      );
      expect({ call, status: data.status, subStatus: data.subStatus }).toEqual({
        call,
        status: 'deliverable',
        subStatus: 'accepted_email',
      });
    }
    const done = await jobWhen<JobStatus>(system, listJob, (job) => job.status === 'completed', {
      what: "the other account's list completes",
      key,
    });
    expect(done).toMatchObject({ processedEmails: 1_000, deliverableCount: 1_000 });
    // The tarpit list was still running all along: the other account did not wait for it.
    expect((await status(tarpits)).status).toBe('processing');
  });
});
