// Watched jobs: the cron's look at a watched job's domains starts a follow-up round for the
// addresses of a domain whose facts changed — and nothing for a domain that did not —, the round
// updates the completed job, charges only what was refunded, and writes one job.updated that
// says what changed per domain. Fair across accounts, and never beyond the watch's end.
import { env } from 'cloudflare:workers';
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { factsWorld } from '../../../test/domain-facts.ts';
import { balanceOf, db, ledgerOf, newCaller, quotas } from '../../../test/fixtures.ts';
import { jobViewOf, liveJob, receiveWebhooks, recordingDeps } from '../../../test/settle-deps.ts';
import { recordCatchAll } from '../../storage/domain-facts.ts';
import { recordResults } from '../../storage/job-results.ts';
import { ROW_OVERHEAD_BYTES, storageUsedOn } from '../../storage/storage-budget.ts';
import { domainsToLookAt, watchRowsBytes } from '../../storage/watches.ts';
import { changeAccountSettings } from '../accounts/settings.ts';
import { utcDayStart } from '../money/quotas.ts';
import { sandboxVerify } from '../verify/sandbox.ts';
import { domainChangesOf } from './domain-changes.ts';
import { rowsFromJson } from './input.ts';
import { addressResult, createBatchJob } from './jobs.ts';
import type { WorkMessage } from './queue.ts';
import { recheckAnswerOf, recordRecheck } from './results.ts';
import type { SettleDeps } from './types.ts';
import { changeOf, watchDomains } from './watch.ts';

afterEach(() => vi.restoreAllMocks());

const DAY_MS = 86_400_000;

const mxRoute = (...hosts: string[]): DnsOutcome => ({
  kind: 'mx',
  dnsType: 'MX',
  mx: hosts.map((host, index) => ({ host, preference: 10 * (index + 1), ips: ['192.0.2.7'] })),
});

/** Records `route` as the domain's kept route (for an hour: the look asks no DNS). */
async function routeIs(domain: string, route: DnsOutcome) {
  const world = factsWorld(route, Date.now, 3600);
  // An expired kept route is resolved again: move the old one out of the way first.
  await env.DB.prepare('UPDATE domain_facts SET route_expires_at = 0 WHERE domain = ?1').bind(domain).run();
  await world.store().mailRoute(domain);
}

function answered(email: string, as: string, now: number): VerificationResult {
  return { ...sandboxVerify(checkSyntax(`${as}@watch.test`), now), email };
}

/**
 * A completed job of `emails` (one answer each, as named), watched unless `watch` says not, on
 * an account with a webhook.
 */
async function watchedJob(options: {
  emails: Record<string, string>;
  watch?: number | 'off' | null;
  now: number;
}) {
  const emails = Object.keys(options.emails);
  const { jobId, accountId } = await liveJob({
    emails,
    webhook: true,
    watchDays: options.watch ?? 30,
    now: options.now,
  });
  await recordResults(
    db(),
    jobId,
    emails.map((email, idx) => {
      const as = options.emails[email] ?? 'deliverable';
      // The greylisted answer is refunded at completion, as the policy table says.
      return addressResult(idx, answered(email, as, options.now), as === 'greylisted');
    }),
    options.now,
  );
  return { jobId, accountId };
}

async function eventsOf(jobId: string) {
  const { results } = await env.DB.prepare(
    "SELECT id FROM webhook_deliveries WHERE job_id = ? AND event_type = 'job.updated' ORDER BY id",
  )
    .bind(jobId)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

/** Answers a round's work messages as `as` says per address, as the consumer would. */
async function answerRound(
  deps: SettleDeps,
  work: WorkMessage[],
  as: (email: string) => string,
  now: number,
) {
  for (const message of work) {
    await recordRecheck(
      deps,
      message.jobId,
      message.addresses.map(({ idx, email }) => {
        const result = answered(email, as(email), now);
        return recheckAnswerOf(idx, result, { retry: 'none', refundable: false } as never);
      }),
      now,
    );
  }
}

const newDomain = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}.test`;

describe('watched jobs', () => {
  it('looks at an unchanged domain and starts nothing: no probe, no DNS, no event', async () => {
    const now = Date.now();
    const domain = newDomain('still');
    await routeIs(domain, mxRoute(`mx.${domain}`));
    const { jobId } = await watchedJob({
      emails: { [`alice@${domain}`]: 'deliverable', 'bob@[192.0.2.1]': 'deliverable' },
      now,
    });
    const { deps, sent } = recordingDeps();
    // An IP literal has no DNS to watch.
    const looked = await domainsToLookAt(db(), now, 10_000);
    expect(looked).toContain(domain);
    expect(looked).not.toContain('[192.0.2.1]');

    const report = await watchDomains(deps, now + 60_000);
    expect(report.rounds).toBe(0);
    expect(sent).toEqual([]);
    expect(await eventsOf(jobId)).toEqual([]);
    expect(await jobViewOf(jobId)).toMatchObject({
      watchDays: 30,
      watchedUntil: new Date(now + 30 * DAY_MS).toISOString(),
      recheckedAt: null,
    });
  });

  it('verifies the addresses of a domain whose MX moved again, free for paid ones, charged for a refunded one, with one job.updated', async () => {
    const received = receiveWebhooks();
    const now = Date.now();
    const moving = newDomain('moving');
    const still = newDomain('still');
    await routeIs(moving, mxRoute(`mx1.${moving}`));
    await routeIs(still, mxRoute(`mx.${still}`));
    const { jobId, accountId } = await watchedJob({
      emails: {
        [`alice@${moving}`]: 'deliverable',
        [`bob@${moving}`]: 'greylisted',
        [`carol@${moving}`]: 'undeliverable',
        [`dave@${still}`]: 'deliverable',
      },
      now,
    });
    const balanceAtCompletion = await balanceOf(accountId);

    await routeIs(moving, mxRoute(`mx.new-host.test`));
    const { deps, sent, settled } = recordingDeps();
    const report = await watchDomains(deps, now + 60_000);
    expect(report).toMatchObject({ rounds: 1, waiting: 0 });
    // Only the moved domain's addresses are asked again, as a round's work.
    const work = sent as WorkMessage[];
    expect(work.map((message) => [message.domain, message.recheckRound])).toEqual([[moving, 1]]);
    expect(work[0]?.addresses.map((address) => address.email)).toEqual([
      `alice@${moving}`,
      `bob@${moving}`,
      `carol@${moving}`,
    ]);
    // A second look before the round closed starts nothing more: the change was seen.
    expect((await watchDomains(recordingDeps().deps, now + 120_000)).rounds).toBe(0);

    // The new host rejects alice, knows bob, and rejects carol as the old one did: two verdicts change.
    await answerRound(
      deps,
      work,
      (email) =>
        email.startsWith('alice')
          ? 'undeliverable'
          : email.startsWith('bob')
            ? 'deliverable'
            : 'undeliverable',
      now + 130_000,
    );
    await settled();
    expect(await jobViewOf(jobId)).toMatchObject({
      status: 'completed',
      deliverableCount: 2,
      undeliverableCount: 2,
      unknownCount: 0,
      creditsCharged: 5,
    });
    // bob was refunded at completion: his known answer is charged now, alice's change is free.
    expect(await balanceOf(accountId)).toBe(balanceAtCompletion - 1);
    expect((await ledgerOf(accountId)).map((row) => row.reason)).toContain('recheck_charge');

    const changes = await domainChangesOf({ db: db() }, jobId);
    expect(changes).toEqual([
      {
        domain: moving,
        seenAt: new Date(now + 60_000).toISOString(),
        changes: ['mx_moved'],
        before: { mail: 'mx', mxHosts: [`mx1.${moving}`], catchAll: null },
        after: { mail: 'mx', mxHosts: ['mx.new-host.test'], catchAll: null },
        addresses: 3,
        changedAddresses: 2,
      },
    ]);
    expect(await eventsOf(jobId)).toEqual([`msg_${jobId.replaceAll('-', '')}_updated_1`]);
    const event = JSON.parse(received.find((each) => each.id?.endsWith('_updated_1'))?.body ?? '{}');
    expect(event).toMatchObject({
      type: 'job.updated',
      data: {
        changedAddresses: 2,
        cause: 'watch',
        domainChanges: changes,
        job: { id: jobId, deliverableCount: 2 },
      },
    });
  });

  it('sees catch-all turning on, and a domain that stopped taking mail', async () => {
    const now = Date.now();
    const catchAll = newDomain('catchall');
    const gone = newDomain('gone');
    await routeIs(catchAll, mxRoute(`mx.${catchAll}`));
    await recordCatchAll(db(), {
      domain: catchAll,
      reply: '{}',
      catchAll: false,
      expiresAt: now + 3600_000,
      now,
    });
    await routeIs(gone, mxRoute(`mx.${gone}`));
    const { jobId } = await watchedJob({
      emails: { [`alice@${catchAll}`]: 'deliverable', [`alice@${gone}`]: 'deliverable' },
      now,
    });

    await recordCatchAll(db(), {
      domain: catchAll,
      reply: '{}',
      catchAll: true,
      expiresAt: now + 3600_000,
      now: now + 1000,
    });
    await routeIs(gone, { kind: 'nxdomain' });
    const { deps, sent } = recordingDeps();
    expect((await watchDomains(deps, now + 60_000)).rounds).toBe(1);
    expect((sent as WorkMessage[]).map((message) => message.domain).sort()).toEqual([catchAll, gone].sort());
    const changes = await domainChangesOf({ db: db() }, jobId);
    expect(Object.fromEntries(changes.map((change) => [change.domain, change.changes]))).toEqual({
      [catchAll]: ['catch_all_on'],
      [gone]: ['mail_stopped'],
    });
    expect(changes.find((change) => change.domain === gone)?.after).toEqual({
      mail: 'nxdomain',
      mxHosts: [],
      catchAll: null,
    });
  });

  it('watches nothing for a job uploaded without watch, or after the watch ended', async () => {
    const now = Date.now();
    const domain = newDomain('unwatched');
    await routeIs(domain, mxRoute(`mx.${domain}`));
    const { jobId: unwatched } = await watchedJob({
      emails: { [`alice@${domain}`]: 'deliverable' },
      watch: 'off',
      now,
    });
    const { jobId: ended } = await watchedJob({
      emails: { [`bob@${domain}`]: 'deliverable' },
      watch: 1,
      now,
    });
    await routeIs(domain, mxRoute('mx.elsewhere.test'));

    const { deps, sent } = recordingDeps();
    expect((await watchDomains(deps, now + DAY_MS + 1)).rounds).toBe(0);
    expect(sent).toEqual([]);
    expect(await jobViewOf(unwatched)).toMatchObject({ watchDays: null, watchedUntil: null });
    expect(await jobViewOf(ended)).toMatchObject({ watchDays: 1 });
  });

  it("counts a watched job's domain rows against the storage budget at upload", async () => {
    const now = Date.now();
    const emails = [`a@${newDomain('bytes')}`, `b@${newDomain('bytes')}`];
    const usedBy = async (watchDays: number | 'off') => {
      const { accountId } = await liveJob({ emails, watchDays, now });
      return storageUsedOn(db(), accountId, utcDayStart(now));
    };
    const [unwatched, watched] = [await usedBy('off'), await usedBy(30)];
    expect(watched - unwatched).toBe(
      watchRowsBytes(
        '00000000-0000-0000-0000-000000000000',
        emails.map((email) => email.split('@')[1] ?? ''),
      ),
    );
    // One row per domain, each at least a row's overhead.
    expect(watched - unwatched).toBeGreaterThan(2 * ROW_OVERHEAD_BYTES);
  });

  it("takes the account's default when the upload does not say", async () => {
    const now = Date.now();
    const domain = newDomain('default');
    const caller = await newCaller({ credits: 10 });
    await changeAccountSettings({ db: db(), limiters: env.KEY_LIMITER }, caller.accountId, { watch: true });
    const { deps } = recordingDeps();
    const { jobId } = await createBatchJob({
      db: db(),
      queue: deps.queue,
      caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: 10 },
      upload: rowsFromJson([`alice@${domain}`]),
      source: 'json',
      name: null,
      webhookUrl: null,
      maxWaitSeconds: null,
      quotas: quotas(),
      now,
    });
    expect(await jobViewOf(jobId)).toMatchObject({ watchDays: 30, watchedUntil: null });
  });

  it('looks at each account in turn: a large watch does not starve a small one', async () => {
    const now = Date.now();
    const large = await Promise.all(
      [1, 2, 3, 4].map(async (n) => {
        const domain = newDomain(`large${n}`);
        await routeIs(domain, mxRoute(`mx.${domain}`));
        return domain;
      }),
    );
    const small = newDomain('small');
    await routeIs(small, mxRoute(`mx.${small}`));
    await watchedJob({
      emails: Object.fromEntries(large.map((domain) => [`a@${domain}`, 'deliverable'])),
      now,
    });
    await watchedJob({ emails: { [`a@${small}`]: 'deliverable' }, now });
    // Other tests' watches share the table: look among these domains only.
    const order = (await domainsToLookAt(db(), now, 10_000)).filter((domain) =>
      [...large, small].includes(domain),
    );
    expect(order.indexOf(small)).toBeLessThan(2);
  });
});

describe('changeOf', () => {
  const mx = (hosts: string, catchAll: number | null = 0, tenant: string | null = null) =>
    [`mx|MX|${hosts}`, catchAll, tenant] as [string, number | null, string | null];
  it.each([
    ['the same facts', mx('10 a.test'), mx('10 a.test'), null],
    ['other MX hosts', mx('10 a.test'), mx('10 b.test'), ['mx_moved']],
    ['another preference order', mx('10 a.test|20 b.test'), mx('10 b.test|20 a.test'), ['mx_moved']],
    ['a null MX', mx('10 a.test'), ['null_mx', 0, null], ['mail_stopped']],
    ['mail again', ['nxdomain', null, null], mx('10 a.test'), ['mail_resumed']],
    ['catch-all on', mx('10 a.test', 0), mx('10 a.test', 1), ['catch_all_on']],
    ['catch-all off', mx('10 a.test', 1), mx('10 a.test', 0), ['catch_all_off']],
    ['catch-all learned for the first time', mx('10 a.test', null), mx('10 a.test', 1), null],
    ['another tenant', mx('10 a.test', 1, '{"t":1}'), mx('10 a.test', 1, '{"t":2}'), ['tenant_changed']],
    ['moved and catch-all', mx('10 a.test', 0), mx('10 b.test', 1), ['mx_moved', 'catch_all_on']],
  ] as const)('%s', (_name, before, after, expected) => {
    expect(changeOf([...before], [...after])?.changes ?? null).toEqual(
      expected === null ? null : [...expected],
    );
  });
});
