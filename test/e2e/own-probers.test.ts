// Customer-run probers through the whole system (docs/operations.md, "Customer-run probers"):
// the stack's prober is the shared fleet's and sends from 127.0.0.1; a customer's prober, linked
// with a token of the customer's account, sends from 127.0.0.2. Who probed is counted at the
// fake MX hosts by the client address of each SMTP session, never by timings. The customer's
// single calls and list go to its own prober, the development account's never do; with its
// prober stopped and the shared fleet's fallback off, the shared prober probes nothing for it
// (a single call answers unknown / smtp_unavailable and its list waits), and with the
// fallback on again the shared fleet completes them.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobListsRows } from '../../scripts/stack/job-store-files.ts';
import { stopProcess } from '../../scripts/stack/local-stack.ts';
import { createOperatorToken, createProberToken } from '../../scripts/stack/operator.ts';
import { untilValue } from '../eventually.ts';
import { bulkDomainNames, EGRESS_PTR } from '../world/index.ts';
import { jobWhen, newAccount, okJson, SQL_POLL_MS, type System, startSystem } from './harness.ts';

const [SHARED, OWN] = EGRESS_PTR;
let system: System;
let customer: { accountId: string; key: string };
let ownProber: ChildProcess;
let operatorToken: string;

beforeAll(async () => {
  system = await startSystem({
    credits: 1_000,
    proberEnv: { SOURCE_ADDRESSES: `${SHARED.address}=${SHARED.name}` },
  });
  customer = await newAccount(system, 1_000);
  const token = await createProberToken(system.stack.d1, {
    region: system.stack.regions[0] ?? 'default',
    name: 'customer prober',
    accountId: customer.accountId,
  });
  ownProber = await system.stack.addProber({
    token: token.secret,
    env: { SOURCE_ADDRESSES: `${OWN.address}=${OWN.name}` },
  });
  operatorToken = (await createOperatorToken(system.stack.d1, { name: 'own probers e2e' })).secret;
});

afterAll(async () => {
  await system?.close();
});

/** SMTP sessions every fake MX host saw from `address` since the last resetSessions(). */
function sessionsFrom(address: string): number {
  return Object.values(system.world.mx).reduce((sum, mx) => sum + mx.sessionsFrom(address), 0);
}

function resetSessions(): void {
  for (const mx of Object.values(system.world.mx)) mx.resetStats();
}

async function verdictOf(email: string, key: string): Promise<string> {
  const { data } = await okJson<{ data: { status: string; subStatus: string } }>(
    await system.api('/api/v1/verify', { key, json: { email, fresh: true } }),
  );
  return `${data.status} / ${data.subStatus}`;
}

async function upload(emails: string[], key: string): Promise<string> {
  const { jobId } = await okJson<{ jobId: string }>(
    await system.api('/api/v1/bulk/upload', { key, json: { emails } }),
  );
  return jobId;
}

interface JobStatus {
  status: string;
  processedEmails: number;
  deliverableCount: number;
}

function completed(jobId: string, key: string): Promise<JobStatus> {
  return jobWhen<JobStatus>(system, jobId, (job) => job.status === 'completed', {
    what: `job ${jobId} completes`,
    key,
  });
}

/** `count` mailboxes that exist (`user…`) from `first` on, over the accepting domain and a few bulk domains. */
function list(first: number, count: number): string[] {
  const domains = [system.world.domains.accept, ...bulkDomainNames(4)];
  return Array.from(
    { length: count },
    (_, index) => `user${first + index}@${domains[index % domains.length]}`,
  );
}

/** A mailbox of the accepting domain that exists. */
function mailbox(n: number): string {
  return `user${n}@${system.world.domains.accept}`;
}

async function setFallback(on: boolean): Promise<void> {
  const { settings } = await okJson<{ settings: { sharedFleetFallback: boolean } }>(
    await system.api('/api/v1/account/settings', {
      method: 'PUT',
      key: customer.key,
      json: { sharedFleetFallback: on },
    }),
  );
  expect(settings.sharedFleetFallback).toBe(on);
}

describe("an account's own probers", () => {
  it("answer the account's single calls and list, and never another account's", async () => {
    resetSessions();
    for (let call = 0; call < 3; call++) {
      expect(await verdictOf(mailbox(call), customer.key)).toBe('deliverable / accepted_email');
    }
    const ownJob = await completed(await upload(list(1_000, 30), customer.key), customer.key);
    expect(ownJob).toMatchObject({ processedEmails: 30, deliverableCount: 30 });
    expect({ own: sessionsFrom(OWN.address) > 0, shared: sessionsFrom(SHARED.address) }).toEqual({
      own: true,
      shared: 0,
    });

    resetSessions();
    const devKey = system.stack.apiKey;
    for (let call = 0; call < 3; call++) {
      expect(await verdictOf(mailbox(100 + call), devKey)).toBe('deliverable / accepted_email');
    }
    const devJob = await completed(await upload(list(2_000, 30), devKey), devKey);
    expect(devJob).toMatchObject({ processedEmails: 30, deliverableCount: 30 });
    expect({ own: sessionsFrom(OWN.address), shared: sessionsFrom(SHARED.address) > 0 }).toEqual({
      own: 0,
      shared: true,
    });
  });

  it('stopped, leave the account unprobed while its fallback is off, and to the shared fleet once it is on', async () => {
    await stopProcess(ownProber, 'SIGTERM');
    // The hub has let it go: the operator's view lists the shared prober alone.
    await untilValue(
      async () => {
        const response = await fetch(`${system.stack.baseUrl}/internal/fleet`, {
          headers: { authorization: `Bearer ${operatorToken}` },
        });
        const body = (await response.json()) as { regions: { probers: unknown[] }[] };
        return body.regions.flatMap((region) => region.probers).length === 1 ? true : undefined;
      },
      'the hub has dropped the stopped prober',
      60_000,
      SQL_POLL_MS,
    );
    await setFallback(false);
    const { account } = await okJson<{ account: { settings: { sharedFleetFallback: boolean } } }>(
      await system.api('/api/v1/account', { key: customer.key }),
    );
    expect(account.settings.sharedFleetFallback).toBe(false);

    resetSessions();
    const emails = list(3_000, 10);
    const jobId = await upload(emails, customer.key);
    // Every address was offered to the probers once and came back unprobed, to be asked again.
    await untilValue(
      async () => {
        const [row] = jobListsRows<{ n: number }>(
          system.stack.d1.persistTo ?? '',
          jobId,
          "SELECT COUNT(*) AS n FROM job_addresses WHERE job_id = ?1 AND sub_status = 'smtp_unavailable' AND state = 'queued'",
        );
        return Number(row?.n) === emails.length ? true : undefined;
      },
      "the list's every address came back unprobed",
      60_000,
      SQL_POLL_MS,
    );
    // A single call costs its credit whatever it answers (docs/money.md). Read through the API:
    // the account's desk writes the charge to D1 a moment after the answer, and settles first for
    // any other request ("Where the balance lives").
    const credits = async () =>
      (
        await okJson<{ account: { creditsRemaining: number } }>(
          await system.api('/api/v1/account', { key: customer.key }),
        )
      ).account.creditsRemaining;
    const before = await credits();
    expect(await verdictOf(mailbox(200), customer.key)).toBe('unknown / smtp_unavailable');
    expect(await credits()).toBe(before - 1);
    const { job } = await okJson<{ job: JobStatus }>(
      await system.api(`/api/v1/bulk/status/${jobId}`, { key: customer.key }),
    );
    expect(job).toMatchObject({ status: 'processing', deliverableCount: 0 });
    expect({ own: sessionsFrom(OWN.address), shared: sessionsFrom(SHARED.address) }).toEqual({
      own: 0,
      shared: 0,
    });

    await setFallback(true);
    expect(await verdictOf(mailbox(200), customer.key)).toBe('deliverable / accepted_email');
    expect(await completed(jobId, customer.key)).toMatchObject({
      processedEmails: emails.length,
      deliverableCount: emails.length,
    });
    expect(sessionsFrom(SHARED.address)).toBeGreaterThan(0);
    expect(sessionsFrom(OWN.address)).toBe(0);
  });
});
