// A batch upload as a client makes one, timed from the upload to the job's completion.
import type { LocalStack } from '../scripts/stack/local-stack.ts';

export async function uploadAndWait(
  target: LocalStack,
  key: string,
  emails: string[],
): Promise<{ seconds: number; jobId: string; estimatedSeconds: number; uploadMs: number }> {
  const headers = { 'content-type': 'application/json', 'x-api-key': key };
  const started = performance.now();
  const upload = await fetch(`${target.baseUrl}/api/v1/bulk/upload`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ emails }),
  });
  if (upload.status !== 200) throw new Error(`upload answered ${upload.status}: ${await upload.text()}`);
  const { jobId, estimatedTimeSeconds } = (await upload.json()) as {
    jobId: string;
    estimatedTimeSeconds: number;
  };
  // The upload's own latency: request sent to its answer read.
  const uploadMs = performance.now() - started;
  // Completion is observed the way a client does: polling the status endpoint, within the
  // key's 100 requests a minute (so the figure is up to 0.7 s late).
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 700));
    const response = await fetch(`${target.baseUrl}/api/v1/bulk/status/${jobId}`, { headers });
    const { job } = (await response.json()) as { job: { status: string; processedEmails: number } };
    if (job.status === 'completed') {
      return {
        seconds: (performance.now() - started) / 1000,
        jobId,
        estimatedSeconds: estimatedTimeSeconds,
        uploadMs,
      };
    }
    if (job.status !== 'processing') throw new Error(`job ended ${job.status}`);
    if (performance.now() - started > 600_000) throw new Error(`job still processing after 10 minutes`);
  }
}

/** Each address's subStatus in a finished job, read in one page (a job holds at most 10,000). */
export async function subStatusesOf(
  target: LocalStack,
  key: string,
  jobId: string,
): Promise<Map<string, string>> {
  const response = await fetch(`${target.baseUrl}/api/v1/bulk/results/${jobId}?limit=10000`, {
    headers: { 'x-api-key': key },
  });
  if (response.status !== 200) throw new Error(`results answered ${response.status}`);
  const { results } = (await response.json()) as { results: { email: string; subStatus: string }[] };
  return new Map(results.map((result) => [result.email, result.subStatus]));
}
