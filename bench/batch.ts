// 10,000 addresses over 50 domains of the fake world, upload → completed on this machine:
// wall time (target ≤ 30 s), addresses/s, peak RSS of the prober and of wrangler, and the
// D1 rows written per second.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ACCOUNT_ID, startLocalStack } from '../scripts/stack/local-stack.ts';
import { grantCredits } from '../scripts/stack/operator.ts';
import { startWorld } from '../test/world/index.ts';
import { samplePeaks } from './process-memory.ts';
import type { Figure } from './run.ts';

const ADDRESSES = 10_000;
const DOMAINS = 50;
const world = await startWorld({ bulkDomains: DOMAINS });
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-batch-'));
const common = { SMTP_PORT: String(world.smtpPort), ALLOW_PRIVATE_TARGETS: 'true' };
const stack = await startLocalStack({
  persistTo,
  vars: { DOH_URL: world.dohUrl, ...common },
  proberEnv: { ...common, CAPACITY: '200', PER_MX_CONCURRENCY: '100' },
});
const figures: Figure[] = [];
try {
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: ADDRESSES });
  const emails = Array.from(
    { length: ADDRESSES },
    (_, index) => `user${index}@bulk-${String((index % DOMAINS) + 1).padStart(2, '0')}.test`,
  );
  const headers = { 'content-type': 'application/json', 'x-api-key': stack.apiKey };
  const memory = samplePeaks({ prober: stack.prober?.pid ?? 0, wrangler: stack.edge.pid ?? 0 });
  const started = performance.now();
  const upload = await fetch(`${stack.baseUrl}/api/v1/bulk/upload`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ emails }),
  });
  if (upload.status !== 200) throw new Error(`upload answered ${upload.status}: ${await upload.text()}`);
  const uploadedAt = performance.now();
  const { jobId } = (await upload.json()) as { jobId: string };
  let status = 'processing';
  let processed = 0;
  // Completion is observed the way a client does: polling the status endpoint.
  while (status === 'processing' && performance.now() - started < 300_000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const response = await fetch(`${stack.baseUrl}/api/v1/bulk/status/${jobId}`, { headers });
    const body = (await response.json()) as { job: { status: string; processedEmails: number } };
    status = body.job.status;
    processed = body.job.processedEmails;
  }
  const seconds = (performance.now() - started) / 1000;
  const peaks = memory.stop();
  if (status !== 'completed') throw new Error(`job ended ${status} with ${processed} processed`);
  // Rows written: one job_rows and one job_addresses row at upload, the address again with its result.
  const rowsWritten = ADDRESSES * 3;
  figures.push(
    { name: '10k batch: upload → completed', value: seconds, unit: 's', target: '≤ 30' },
    { name: '10k batch: upload request', value: uploadedAt - started, unit: 'ms' },
    { name: '10k batch: addresses verified per second', value: ADDRESSES / seconds, unit: '/s' },
    { name: '10k batch: D1 rows written per second', value: rowsWritten / seconds, unit: '/s' },
    { name: '10k batch: peak RSS of the prober', value: peaks.prober ?? Number.NaN, unit: 'MB' },
    {
      name: '10k batch: peak RSS of wrangler (all processes)',
      value: peaks.wrangler ?? Number.NaN,
      unit: 'MB',
    },
  );
} finally {
  await stack.close();
  await world.close();
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));
