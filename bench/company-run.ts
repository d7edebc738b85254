// The 10,000-address company list (200 domains on 4 defended MX hosts, 40 % unknown) uploaded
// to a fresh local stack, as the batch benches run it: a real edge under wrangler and one
// prober with room for 200 probes and the company hosts' 20 sessions per client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ACCOUNT_ID, type LocalStack } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { companyList } from '../test/world/expected-verdicts.ts';
import type { MailWorld } from '../test/world/index.ts';
import { startBenchStack } from './bench-stack.ts';
import { subStatusesOf, uploadAndWait } from './upload-and-wait.ts';

export const COMPANY_ADDRESSES = 10_000;
/** What the company hosts take from one client (COMPANY_DEFENCES.connectionCountLimit). */
export const PER_MX_SESSIONS = 20;

export interface CompanyRun {
  seconds: number;
  /** The upload's `estimatedTimeSeconds`. */
  estimatedSeconds: number;
  /** Share of the addresses whose subStatus is the one the world gives them, 0..1. */
  right: number;
  stack: LocalStack;
  persistTo: string;
}

/** Starts a stack on `world` and runs the list through it; the caller stops the stack (`stopRun`). */
export async function runCompanyList(
  world: MailWorld,
  options: { proberEnv?: Record<string, string> } = {},
): Promise<CompanyRun> {
  const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-company-'));
  // The world's MX hosts are on 127.0.0.x; the prober alone speaks SMTP, on the world's port.
  const common = { ALLOW_PRIVATE_TARGETS: 'true' };
  const stack = await startBenchStack({
    persistTo,
    vars: { DOH_URL: world.dohUrl, ...common },
    proberEnv: {
      ...common,
      SMTP_PORT: String(world.smtpPort),
      CAPACITY: '200',
      PER_MX_CONCURRENCY: String(PER_MX_SESSIONS),
      ...options.proberEnv,
    },
  });
  try {
    grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: COMPANY_ADDRESSES + 1_000 });
    const [key] = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 1, mode: 'live' });
    if (!key) throw new Error('no key');
    for (const mx of world.companyMx) mx.resetStats();
    const list = companyList({ count: COMPANY_ADDRESSES, domains: 200 });
    const job = await uploadAndWait(
      stack,
      key,
      list.map((row) => row.address),
    );
    const found = await subStatusesOf(stack, key, job.jobId);
    const right = list.filter((row) => found.get(row.address) === row.subStatus).length / list.length;
    return { seconds: job.seconds, estimatedSeconds: job.estimatedSeconds, right, stack, persistTo };
  } catch (error) {
    await stopRun({ stack, persistTo });
    throw error;
  }
}

export async function stopRun(run: { stack: LocalStack; persistTo: string }): Promise<void> {
  await run.stack.close();
  rmSync(run.persistTo, { recursive: true, force: true });
}
