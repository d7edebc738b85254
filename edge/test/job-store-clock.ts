// A step of a job's JobStore clock run at a chosen time on the job's own object storage, with a
// sink that records what it hands back to the queue (objects/job-store.ts, `tick`).
import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { JobStore } from '../src/objects/job-store.ts';
import { reapplyReport } from '../src/services/batch/results.ts';
import type { StaleListAddress } from '../src/storage/job-lists/index.ts';
import { recordingDeps } from './settle-deps.ts';

/** Runs a step of job `jobId`'s clock at `now`; returns what it enqueued and its next alarm. */
export async function tickAt(jobId: string, now: number) {
  const { deps } = recordingDeps();
  const requeued: { jobId: string; addresses: readonly StaleListAddress[] }[] = [];
  const stub = env.JOB_STORE.get(env.JOB_STORE.idFromName(jobId));
  const alarm = await runInDurableObject(stub, async (_instance, state) => {
    const store = new JobStore(state, env, {
      requeue: async (job, addresses) => {
        requeued.push({ jobId: job.id, addresses });
      },
      report: (job, report, lists, at) => reapplyReport(deps, job.id, report, lists, at),
    });
    await store.tick(now);
    return state.storage.getAlarm();
  });
  return { requeued, alarm };
}
