// A prober with two egresses (SOURCE_ADDRESSES=127.0.0.1,127.0.0.2) against a world where half
// the company MX hosts list 127.0.0.2 on Spamhaus's zone with Postfix's reply and serve every
// other client, and where rbl.test refuses every client: the verdicts are right, a block never
// becomes a verdict, `antispam_blocked` appears only where every egress was refused, and the
// operator's view (HTTP and `npm run admin -- fleet`) shows the blocks; a prober that restarts
// takes its egresses' blocks, warm-up and hour back from the hub and is not refused again.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperatorToken } from '../../scripts/stack/operator.ts';
import { REPO_ROOT } from '../../scripts/stack/wrangler-cli.ts';
import { untilValue } from '../eventually.ts';
import { companyList } from '../world/expected-verdicts.ts';
import { DOMAINS, PROVIDER_DOMAINS } from '../world/index.ts';
import { jobWhen, okJson, type System, startSystem, subStatusesOf } from './harness.ts';

const LISTED = '127.0.0.2';
let system: System;

beforeAll(async () => {
  system = await startSystem({
    credits: 5_000,
    world: { companies: { domains: 8, hosts: 4, blocklisted: { clients: [LISTED], hosts: [1, 3] } } },
    proberEnv: { SOURCE_ADDRESSES: `127.0.0.1,${LISTED}` },
  });
});

afterAll(async () => {
  await system?.close();
});

interface FleetBody {
  regions: {
    probers: {
      state: string;
      egresses: {
        id: string;
        label?: string;
        blocks: { scope: { name: string }; reply: { text: string } }[];
        hourlyUse: { provider: string; used: number }[];
        warmingUpSince?: string | null;
      }[];
    }[];
  }[];
}

describe('two egresses, one listed at half the MX hosts', () => {
  it('answers every address right; antispam_blocked only where every egress is refused; the view shows the blocks', async () => {
    const list = companyList({ count: 400, domains: 8 });
    const refusedEverywhere = [0, 1, 2].map((index) => `user${index}@${DOMAINS.rbl}`);
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', {
        json: { emails: [...list.map((row) => row.address), ...refusedEverywhere] },
      }),
    );
    const job = await jobWhen(system, jobId, (job) => job.status !== 'processing', {
      what: 'the job to complete',
    });
    expect(job.status).toBe('completed');

    const found = await subStatusesOf(system, jobId);
    const wrong = list.filter((row) => found.get(row.address) !== row.subStatus);
    expect(wrong.map((row) => `${row.address}: ${found.get(row.address)}`)).toEqual([]);
    const blocked = [...found]
      .filter(([, subStatus]) => subStatus === 'antispam_blocked')
      .map(([email]) => email);
    expect(blocked.sort()).toEqual(refusedEverywhere.sort());
    // The listing hosts did refuse the listed egress: the right answers came from the other one.
    const listing = system.world.companyMx.filter((mx) => mx.name === 'company1' || mx.name === 'company3');
    expect(listing.reduce((sum, mx) => sum + mx.stats().blocklisted, 0)).toBeGreaterThan(0);

    const token = await createOperatorToken(system.stack.d1, { name: 'e2e operator' });
    const viewWithBlocks = async () => {
      const response = await fetch(`${system.stack.baseUrl}/internal/fleet`, {
        headers: { authorization: `Bearer ${token.secret}` },
      });
      const body = (await response.json()) as FleetBody;
      const listed = body.regions
        .flatMap((region) => region.probers)
        .flatMap((prober) => prober.egresses)
        .find((egress) => egress.id === LISTED);
      return listed && listed.blocks.length >= 3 ? body : undefined;
    };
    // Four looks a second: each is the hub's work, and the hub is the system under test.
    const view = await untilValue(viewWithBlocks, 'the blocks to reach the operator view', undefined, 250);
    const [prober] = view.regions.flatMap((region) => region.probers);
    expect(prober?.state).toBe('linked');
    const blocksOf = (id: string) =>
      (prober?.egresses.find((egress) => egress.id === id)?.blocks ?? [])
        .map((block) => block.scope.name)
        .sort();
    expect(blocksOf(LISTED)).toEqual(['mx.rbl.test', 'mx1.company.test', 'mx3.company.test']);
    expect(blocksOf('127.0.0.1')).toEqual(['mx.rbl.test']);
    const reply = prober?.egresses.find((egress) => egress.id === LISTED)?.blocks[0]?.reply.text ?? '';
    expect(reply).toContain('blocked using zen.spamhaus.org');
    expect(reply).not.toContain('@');

    // The same view as an operator reads it on a terminal.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['scripts/admin.ts', 'fleet', '--edge', system.stack.baseUrl],
      { cwd: REPO_ROOT, env: { ...process.env, RCPT_OPERATOR_TOKEN: token.secret } },
    );
    // Each egress beside the opaque label its evidence names it by (never its address).
    const label = prober?.egresses.find((egress) => egress.id === LISTED)?.label;
    expect(label).toMatch(/^default-[0-9a-f]{6}$/);
    expect(stdout).toContain(`egress ${LISTED} = ${label} (direct)`);
    expect(stdout).toContain('BLOCKED at mx_host mx1.company.test');
    // The prober logged each block as an event an operator can alert on.
    expect(system.logs.some((line) => line.includes('"event":"egress_blocked"'))).toBe(true);
  });

  it('a prober that restarts takes back its blocks, warm-up and hour from the hub: the listed egress is not refused again', async () => {
    // Addresses at a provider of the registry: each egress starts warming up there.
    const atProvider = PROVIDER_DOMAINS.flatMap((domain) => [1, 2, 3].map((n) => `user${n}@${domain}`));
    await completedJob(atProvider);
    const token = await createOperatorToken(system.stack.d1, { name: 'e2e restart operator' });
    const listedEgress = async () => {
      const response = await fetch(`${system.stack.baseUrl}/internal/fleet`, {
        headers: { authorization: `Bearer ${token.secret}` },
      });
      const body = (await response.json()) as FleetBody;
      return body.regions
        .flatMap((region) => region.probers)
        .filter((prober) => prober.state === 'linked')
        .flatMap((prober) => prober.egresses)
        .find((egress) => egress.id === LISTED);
    };
    const before = await untilValue(
      async () => {
        const egress = await listedEgress();
        return egress?.warmingUpSince && egress.hourlyUse.length > 0 ? egress : undefined;
      },
      "the listed egress's warm-up and hour to reach the hub",
      undefined,
      250,
    );
    const listing = system.world.companyMx.filter((mx) => mx.name === 'company1' || mx.name === 'company3');
    const refusals = () => listing.reduce((sum, mx) => sum + mx.stats().blocklisted, 0);
    const refusedBefore = refusals();

    // A new prober process: it knows nothing of its egresses; the region's hub does.
    await system.stack.stopProber();
    await system.stack.startProber();
    const after = await untilValue(
      async () => {
        const egress = await listedEgress();
        return egress && egress.blocks.length >= 3 ? egress : undefined;
      },
      'the remembered blocks on the new link',
      undefined,
      250,
    );
    expect(after.blocks.map((block) => block.scope.name).sort()).toEqual([
      'mx.rbl.test',
      'mx1.company.test',
      'mx3.company.test',
    ]);
    expect(after.warmingUpSince).toBe(before.warmingUpSince);
    expect(after.hourlyUse).toEqual(before.hourlyUse);

    // Addresses not asked before, on the same hosts: right, and none asked from the listed egress.
    const fresh = companyList({ count: 800, domains: 8 }).slice(400);
    const jobId = await completedJob(fresh.map((row) => row.address));
    const found = await subStatusesOf(system, jobId);
    expect(fresh.filter((row) => found.get(row.address) !== row.subStatus)).toEqual([]);
    expect(refusals()).toBe(refusedBefore);
  });
});

async function completedJob(emails: string[]): Promise<string> {
  const { jobId } = await okJson<{ jobId: string }>(
    await system.api('/api/v1/bulk/upload', { json: { emails } }),
  );
  const job = await jobWhen(system, jobId, (job) => job.status !== 'processing', {
    what: 'the job to complete',
  });
  expect(job.status).toBe('completed');
  return jobId;
}
