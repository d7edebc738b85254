// Watched jobs end to end (issue 25): a job uploaded with `watch` completes, then its domain
// turns catch-all, moves its MX and goes away, one after the other. Each change, once rcpt has
// seen it, makes the next cron run verify the job's addresses at that domain again: the results,
// counts and CSV follow, a signed `job.updated` says what changed, and nothing is charged for
// addresses already paid for. A domain that never changes is never asked again, and a job that
// only has such domains gets no event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, untilValue } from '../eventually.ts';
import { okJson, SQL_POLL_MS, type System, sqlRows, startSystem } from './harness.ts';
import { type Delivery, verifiedEvent, WebhookReceiver } from './webhook-receiver.ts';

let system: System;
let receiver: WebhookReceiver;
let secret: string;

/** A domain that lowered its TTL before moving its mail (1 s: the edge keeps its route that long). */
const MOVING = 'moving.test';
const TTL = 1;

interface Job {
  id: string;
  status: string;
  deliverableCount: number;
  undeliverableCount: number;
  riskyCount: number;
  creditsCharged: number;
  creditsRefunded: number;
  watchDays: number | null;
  watchedUntil: string | null;
  completedAt: string | null;
}

interface DomainChange {
  domain: string;
  changes: string[];
  before: { mail: string | null; mxHosts: string[]; catchAll: boolean | null };
  after: { mail: string | null; mxHosts: string[]; catchAll: boolean | null };
  addresses: number;
  changedAddresses: number;
}

interface UpdatedEvent {
  type: string;
  data: { job: Job; changedAddresses: number; cause: string; domainChanges: DomainChange[] };
}

beforeAll(async () => {
  receiver = new WebhookReceiver();
  await receiver.listen();
  system = await startSystem({
    vars: { SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))) },
  });
  ({ secret } = await okJson<{ secret: string }>(
    await system.api('/api/v1/webhooks/secret', { method: 'POST' }),
  ));
});

afterAll(async () => {
  await system?.close();
  receiver?.server.close();
});

/** A query of the edge's local D1. */
function sql<T>(query: string): Promise<T[]> {
  return sqlRows<T>(system, query);
}

/** The account's balance, asked of the API as a client would. */
async function balance(): Promise<number> {
  const { account } = await okJson<{ account: { creditsRemaining: number } }>(
    await system.api('/api/v1/account'),
  );
  return account.creditsRemaining;
}

/** The address of the world's fake MX `name`. */
function ipOf(name: string): string {
  const ip = system.world.mx[name]?.ip;
  if (!ip) throw new Error(`the world has no ${name} server`);
  return ip;
}

/** Routes `moving.test` to `host`, which has the address of the fake MX `ip`. */
function route(host: string, ip: string): void {
  system.world.setZone(MOVING, { MX: [{ preference: 10, exchange: host }], ttl: TTL });
  system.world.setZone(host, { A: [ip], ttl: TTL });
}

async function verdicts(jobId: string): Promise<Record<string, string>> {
  const { results } = await okJson<{ results: { email: string; status: string; subStatus: string }[] }>(
    await system.api(`/api/v1/bulk/results/${jobId}`),
  );
  return Object.fromEntries(results.map((result) => [result.email, `${result.status}/${result.subStatus}`]));
}

async function runCron(): Promise<void> {
  expect((await fetch(`${system.stack.baseUrl}/__scheduled?cron=*/5+*+*+*+*`)).status).toBe(200);
}

/** The edge's kept route of `moving.test` expired, so the next look asks DNS again. */
async function keptRouteExpired(): Promise<void> {
  await untilValue(
    async () => {
      const [row] = await sql<{ expiresAt: number }>(
        `SELECT route_expires_at AS expiresAt FROM domain_facts WHERE domain = '${MOVING}'`,
      );
      return row !== undefined && row.expiresAt < Date.now() ? true : undefined;
    },
    'the kept route of moving.test expired',
    undefined,
    SQL_POLL_MS,
  );
}

/** The job's `job.updated` of follow-up round `round`, signed. */
async function updatedEvent(jobId: string, round: number): Promise<UpdatedEvent> {
  const id = `msg_${jobId.replaceAll('-', '')}_updated_${round}`;
  let delivery: Delivery | undefined;
  await until(() => {
    delivery = receiver.deliveries.find((each) => each.headers['webhook-id'] === id);
    return delivery !== undefined;
  }, `${id} arrived`);
  return verifiedEvent<UpdatedEvent>(secret, delivery as Delivery);
}

/** The follow-up rounds the job started. */
async function roundsOf(jobId: string): Promise<number> {
  const [row] = await sql<{ rounds: number }>(
    `SELECT recheck_round AS rounds FROM jobs WHERE id = '${jobId}'`,
  );
  return Number(row?.rounds);
}

function updatedEventsOf(jobId: string): string[] {
  return receiver.deliveries
    .filter((each) => each.body.includes(jobId) && each.body.includes('"type":"job.updated"'))
    .map((each) => each.headers['webhook-id'] ?? '');
}

describe('watched jobs', () => {
  it('verifies again the addresses of a domain that turns catch-all, moves its MX and goes away, each within one cron run', async () => {
    const accept = system.world.domains.accept;
    route(`mx.${MOVING}`, ipOf('accept'));
    const before = await balance();
    const watched = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', {
        json: {
          emails: [`alice@${MOVING}`, `nobody@${MOVING}`, `bob@${accept}`],
          watch: true,
          webhookUrl: receiver.url(),
        },
      }),
    );
    const still = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', {
        json: { emails: [`carol@${accept}`], watch: true, watchDays: 7, webhookUrl: receiver.url() },
      }),
    );
    await receiver.next(watched.jobId, 'job.completed');
    await receiver.next(still.jobId, 'job.completed');
    const completed = (await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${watched.jobId}`)))
      .job;
    expect(completed).toMatchObject({
      status: 'completed',
      watchDays: 30,
      creditsCharged: 3,
      creditsRefunded: 0,
    });
    expect(Date.parse(completed.watchedUntil ?? '')).toBe(
      Date.parse(completed.completedAt ?? '') + 30 * 86_400_000,
    );
    expect(await verdicts(watched.jobId)).toEqual({
      [`alice@${MOVING}`]: 'deliverable/accepted_email',
      [`nobody@${MOVING}`]: 'undeliverable/mailbox_not_found',
      [`bob@${accept}`]: 'deliverable/accepted_email',
    });
    const bobVerifiedAt = await verifiedAtOf(watched.jobId, `bob@${accept}`);

    // Nothing changed: a cron run that asks DNS again starts no round.
    await keptRouteExpired();
    await runCron();
    expect(await roundsOf(watched.jobId)).toBe(0);

    // 1. Its mail server turns catch-all on. A prober keeps a domain's catch-all answer for an
    // hour, so the change is seen by the next verification after that: here a fresh prober's.
    // The cron run just asked DNS: the route it kept carries the host's old address for its TTL,
    // which the prober's restart does not always outlast, so the call waits until it expired.
    route(`mx.${MOVING}`, ipOf('catchall'));
    await system.stack.stopProber();
    await system.stack.startProber();
    await keptRouteExpired();
    const single = await okJson<{ data: { status: string; subStatus: string } }>(
      await system.api('/api/v1/verify', { json: { email: `carol@${MOVING}`, fresh: true } }),
    );
    expect(single.data).toMatchObject({ status: 'risky', subStatus: 'catch_all' });
    await runCron();
    const catchAll = await updatedEvent(watched.jobId, 1);
    expect(catchAll.data).toMatchObject({ cause: 'watch', changedAddresses: 2 });
    expect(catchAll.data.domainChanges).toMatchObject([
      {
        domain: MOVING,
        changes: ['catch_all_on'],
        before: { mail: 'mx', mxHosts: [`mx.${MOVING}`], catchAll: false },
        after: { mail: 'mx', mxHosts: [`mx.${MOVING}`], catchAll: true },
        addresses: 2,
        changedAddresses: 2,
      },
    ]);
    expect(catchAll.data.job).toMatchObject({ status: 'completed', deliverableCount: 1, riskyCount: 2 });
    expect(await verdicts(watched.jobId)).toMatchObject({
      [`alice@${MOVING}`]: 'risky/catch_all',
      [`nobody@${MOVING}`]: 'risky/catch_all',
    });

    // 2. It moves its mail to another host, where the mailboxes are disabled.
    route(`mx2.${MOVING}`, ipOf('disabled'));
    await keptRouteExpired();
    await runCron();
    const moved = await updatedEvent(watched.jobId, 2);
    expect(moved.data.domainChanges).toMatchObject([
      {
        domain: MOVING,
        changes: ['mx_moved'],
        before: { mxHosts: [`mx.${MOVING}`] },
        after: { mail: 'mx', mxHosts: [`mx2.${MOVING}`] },
        changedAddresses: 2,
      },
    ]);
    expect(await verdicts(watched.jobId)).toMatchObject({
      [`alice@${MOVING}`]: 'undeliverable/mailbox_disabled',
      [`nobody@${MOVING}`]: 'undeliverable/mailbox_disabled',
    });

    // 3. The domain is let go: its names, its hosts' included, leave DNS.
    for (const name of [MOVING, `mx.${MOVING}`, `mx2.${MOVING}`]) system.world.setZone(name, null);
    await keptRouteExpired();
    await runCron();
    const gone = await updatedEvent(watched.jobId, 3);
    expect(gone.data.domainChanges).toMatchObject([
      {
        domain: MOVING,
        changes: ['mail_stopped'],
        after: { mail: 'nxdomain', mxHosts: [] },
        changedAddresses: 2,
      },
    ]);
    expect(gone.data.job).toMatchObject({ deliverableCount: 1, undeliverableCount: 2, riskyCount: 0 });
    expect(await verdicts(watched.jobId)).toEqual({
      [`alice@${MOVING}`]: 'undeliverable/invalid_domain',
      [`nobody@${MOVING}`]: 'undeliverable/invalid_domain',
      [`bob@${accept}`]: 'deliverable/accepted_email',
    });
    const csv = await (await system.api(`/api/v1/bulk/results/${watched.jobId}?format=csv`)).text();
    expect(csv.split('\r\n')[1]?.startsWith(`"alice@${MOVING}","undeliverable","invalid_domain",`)).toBe(
      true,
    );

    // The status shows the latest change of each changed domain; the unchanged one was never asked again.
    const status = await okJson<{ job: Job; domainChanges: DomainChange[] }>(
      await system.api(`/api/v1/bulk/status/${watched.jobId}`),
    );
    expect(status.domainChanges.map((change) => [change.domain, change.changes])).toEqual([
      [MOVING, ['mail_stopped']],
    ]);
    expect(await verifiedAtOf(watched.jobId, `bob@${accept}`)).toBe(bobVerifiedAt);
    expect(updatedEventsOf(watched.jobId)).toHaveLength(3);
    expect(updatedEventsOf(still.jobId)).toEqual([]);
    expect(await roundsOf(still.jobId)).toBe(0);

    // The uploads and the single call are all it cost: verifying again paid addresses is free.
    expect(
      (
        await sql<{ reason: string }>(
          `SELECT reason FROM credit_ledger WHERE reference LIKE '${watched.jobId}%' ORDER BY id`,
        )
      ).map((row) => row.reason),
    ).toEqual(['bulk_charge']);
    expect(await balance()).toBe(before - 3 - 1 - 1);
  });

  it('refuses watchDays out of bounds with the validation code, charging nothing', async () => {
    const before = await balance();
    for (const json of [
      { emails: [`alice@${system.world.domains.accept}`], watchDays: 0 },
      { emails: [`alice@${system.world.domains.accept}`], watchDays: 61 },
      { emails: [`alice@${system.world.domains.accept}`], watch: false, watchDays: 5 },
    ]) {
      const refused = await system.api('/api/v1/bulk/upload', { json });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    }
    expect(await balance()).toBe(before);
  });
});

async function verifiedAtOf(jobId: string, email: string): Promise<string | undefined> {
  const { results } = await okJson<{ results: { email: string; meta: { verifiedAt: string } }[] }>(
    await system.api(`/api/v1/bulk/results/${jobId}`),
  );
  return results.find((result) => result.email === email)?.meta.verifiedAt;
}
