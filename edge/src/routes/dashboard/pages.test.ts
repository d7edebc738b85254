// The dashboard's pages through the Worker's fetch handler: keys (secret shown once,
// revocation reaching the API at once), single verification, bulk preview and upload,
// the job page and its downloads, history, webhooks and the overview's figures.

import { env, exports } from 'cloudflare:workers';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { CookieClient, csrfFieldOf, signedInAccount as signedIn } from '../../../test/cookie-client.ts';
import { factsWorld } from '../../../test/domain-facts.ts';
import { accountD1, balanceOf, dbOfAccount, quotas } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { ACCOUNT_CHANGE_LIMITS } from '../../services/accounts/sign-in-limits.ts';
import { rowsFromCsv } from '../../services/batch/input.ts';
import { addressResult, createBatchJob } from '../../services/batch/jobs.ts';
import type { BatchMessage } from '../../services/batch/queue.ts';
import { watchDomains } from '../../services/batch/watch.ts';
import { settleDepsOf } from '../../services/batch-lifecycle.ts';
import { sandboxVerify } from '../../services/verify/sandbox.ts';
import { recordProvisional, recordResults } from '../../storage/job-results.ts';
import { insertVerification } from '../../storage/verifications.ts';

function callApi(key: string, email: string): Promise<Response> {
  return exports.default.fetch(
    new Request('https://edge.test/api/v1/verify', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-API-Key': key },
      body: JSON.stringify({ email }),
    }),
  );
}

function csvForm(csv: string, fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  form.set('file', new File([csv], 'list.csv', { type: 'text/csv' }));
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return form;
}

async function createKey(
  client: CookieClient,
  name: string,
  mode: 'live' | 'test',
): Promise<{ secret: string; html: string }> {
  const response = await client.submit('/keys', '/keys', { name, mode });
  expect(response.status).toBe(201);
  const html = await response.text();
  const secret = new RegExp(`value="(rk_${mode}_[A-Za-z0-9_-]{43})"`).exec(html)?.[1];
  if (!secret) throw new Error('no secret on the page');
  return { secret, html };
}

describe('API keys', () => {
  it('shows a new key once, stores only its hash, and lists it by prefix afterwards', async () => {
    const { client, accountId } = await signedIn('keys');
    const { secret, html } = await createKey(client, 'signup form', 'test');
    expect(html).toContain('shown only once');
    expect(html).toContain('data-copy-target="new-key-secret"');
    const stored = await (await accountD1(accountId))
      .prepare('SELECT key_hash, prefix, name, mode FROM api_keys WHERE key_hash = ?1')
      .bind(await hashSecret(secret))
      .first<{ prefix: string; name: string; mode: string }>();
    expect(stored).toMatchObject({ prefix: secret.slice(0, 12), name: 'signup form', mode: 'test' });

    const list = await (await client.get('/keys')).text();
    expect(list).not.toContain(secret);
    expect(list).not.toContain(secret.slice(12, 30));
    expect(list).toContain(`${secret.slice(0, 12)}…`);
    expect(list).toContain('signup form');
  });

  it('refuses a key without a name, creating nothing', async () => {
    const { client } = await signedIn('keys-noname');
    const response = await client.submit('/keys', '/keys', { name: '   ', mode: 'live' });
    expect(response.status).toBe(400);
    const html = await response.text();
    expect(html).toContain('Give the key a name.');
    expect(html).not.toMatch(/rk_live_[A-Za-z0-9_-]{43}/);
  });

  it('a key revoked in the dashboard gets 401 from the API on its very next request', async () => {
    const { client, accountId } = await signedIn('revoke');
    const { secret } = await createKey(client, 'to revoke', 'test');
    expect((await callApi(secret, 'deliverable@example.com')).status).toBe(200);

    const keyId = (
      await (
        await accountD1(accountId)
      )
        .prepare('SELECT id FROM api_keys WHERE key_hash = ?1')
        .bind(await hashSecret(secret))
        .first<{ id: string }>()
    )?.id;
    const confirm = await client.get(`/keys/${keyId}/revoke`);
    expect(confirm.status).toBe(200);
    expect(await confirm.text()).toContain('This cannot be undone');
    const revoked = await client.submit(`/keys/${keyId}/revoke`, `/keys/${keyId}/revoke`, {});
    expect(revoked.status).toBe(303);
    const list = await (await client.get(revoked.headers.get('location') ?? '')).text();
    expect(list).toContain(`Key ${secret.slice(0, 12)}… (to revoke) is revoked.`);
    expect(list).toContain('badge-undeliverable">revoked');

    const answer = await callApi(secret, 'deliverable@example.com');
    expect(answer.status).toBe(401);
    expect(await answer.json()).toMatchObject({ code: 'INVALID_API_KEY' });
  });

  it("cannot revoke another account's key (404), which keeps working", async () => {
    const owner = await signedIn('owner');
    const { secret } = await createKey(owner.client, 'mine', 'test');
    const keyId = (
      await (
        await accountD1(owner.accountId)
      )
        .prepare('SELECT id FROM api_keys WHERE key_hash = ?1')
        .bind(await hashSecret(secret))
        .first<{ id: string }>()
    )?.id;
    const intruder = await signedIn('intruder');
    const response = await intruder.client.submit('/keys', `/keys/${keyId}/revoke`, {});
    expect(response.status).toBe(404);
    expect((await callApi(secret, 'deliverable@example.com')).status).toBe(200);
  });
});

describe('single verification', () => {
  it('charges one credit, renders the result and records it in the history', async () => {
    const { client, accountId } = await signedIn('verify');
    const response = await client.submit('/verify', '/verify', { email: 'not an address' });
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('data-result-status="undeliverable"');
    expect(html).toContain('invalid syntax');
    expect(html).toMatch(/<meter id="result-score"[^>]*value="\d+"/);
    expect(html).toMatch(/data-testid="credits-remaining">99</);
    // The header of the page that charged shows the balance after the charge.
    expect(html).toMatch(/data-testid="header-balance"><strong>99<\/strong> credits</);
    // The domain of an address that is not one was never looked up: no check but syntax ran.
    expect(html).toMatch(/Valid syntax<\/th><td><span class="check check-bad">no</);
    for (const label of [
      'Domain accepts mail \\(MX\\)',
      'Mailbox accepted \\(SMTP\\)',
      'Disposable provider',
    ]) {
      expect(html).toMatch(new RegExp(`${label}</th><td><span class="check check-unknown">not checked<`));
    }
    expect(html).toContain('an address with invalid syntax is a check too');
    expect(await balanceOf(accountId)).toBe(99);

    const history = await (await client.get('/history?kind=single&status=undeliverable')).text();
    expect(history).toContain('not an address');
    expect(history).toContain('1 entry');
    const none = await (await client.get('/history?status=deliverable')).text();
    expect(none).toContain('Nothing matches these filters.');
  });

  it('suggests the likely address for a typo domain', async () => {
    const { client } = await signedIn('verify-typo');
    const html = await (await client.submit('/verify', '/verify', { email: 'alice@gmial.com' })).text();
    expect(html).toContain('possible typo');
    expect(html).toMatch(/Did you mean <strong>alice@gmail\.com<\/strong>\?/);
    // One click verifies the suggestion: a form of its own that posts it.
    const suggestion = /<form method="post" action="\/verify"[^>]*>(.*?)<\/form>/gs;
    const forms = [...html.matchAll(suggestion)].map((match) => match[1] ?? '');
    const oneClick = forms.find((form) => form.includes('name="email" value="alice@gmail.com"'));
    expect(oneClick).toMatch(/type="hidden" name="email" value="alice@gmail\.com"/);
    expect(oneClick).toContain('Verify alice@gmail.com (1 credit)');
    // gmial.com is on disposable lists because it catches mistyped mail: the check says so too.
    expect(html).toContain('Domain is on disposable-address lists');
    expect(html).toMatch(
      /Disposable provider<\/th><td><span class="check check-bad">listed, as a likely typo domain</,
    );
  });

  it("says when a repeated address is answered from the account's earlier check, and charges it", async () => {
    const { client, accountId } = await signedIn('verify-repeat');
    const first = await (await client.submit('/verify', '/verify', { email: 'alice@gmial.com' })).text();
    const second = await (await client.submit('/verify', '/verify', { email: 'alice@gmial.com' })).text();
    expect(first).not.toContain('Answered from');
    expect(second).toMatch(/Answered from<\/dt>\s*<dd>your check of \d{4}-/);
    expect(await balanceOf(accountId)).toBe(98);
  });

  it('asks the mail server again when told to, and keeps the choices on the page it answers', async () => {
    const { client, accountId } = await signedIn('verify-fresh');
    await client.submit('/verify', '/verify', { email: 'alice@gmial.com' });
    const again = await (
      await client.submit('/verify', '/verify', {
        email: 'alice@gmial.com',
        fresh: 'true',
        timeoutMs: '5000',
      })
    ).text();
    expect(again).not.toContain('Answered from');
    expect(again).toMatch(/<input type="checkbox" name="fresh" value="true" checked=""/);
    expect(again).toMatch(/<option value="5000" selected="">5 s<\/option>/);
    expect(await balanceOf(accountId)).toBe(98);
  });

  it('refuses a time budget outside the API bounds, charging nothing', async () => {
    const { client, accountId } = await signedIn('verify-budget');
    for (const timeoutMs of ['500', '61000', 'soon']) {
      const response = await client.submit('/verify', '/verify', { email: 'alice@gmial.com', timeoutMs });
      expect(response.status).toBe(400);
      const html = await response.text();
      // The error is the select's own, announced with it; the address was fine.
      expect(html).toMatch(
        /<select id="verify-timeout" name="timeoutMs" aria-describedby="verify-timeout-hint verify-timeout-error" aria-invalid="true"/,
      );
      expect(html).toMatch(
        /<p class="field-error" id="verify-timeout-error">Choose a time between 2 and 60 seconds.<\/p>/,
      );
      expect(html).not.toContain('id="verify-email-error"');
    }
    expect(await balanceOf(accountId)).toBe(100);
  });

  it('asks for an address instead of charging for an empty one', async () => {
    const { client, accountId } = await signedIn('verify-empty');
    const response = await client.submit('/verify', '/verify', { email: '  ' });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Enter an address to verify.');
    expect(await balanceOf(accountId)).toBe(100);
  });
});

describe('bulk upload', () => {
  const csv =
    'name,email\nAlice,alice@nonexistent.test\nAlice again,alice@NONEXISTENT.TEST\nNobody,\nBroken,not an address\nBob,bob@nonexistent.test\n';

  it('limits the forms that spend resources per account, like the API: 429 after 100 a minute', async () => {
    const { client } = await signedIn('spending-limit');
    const page = await client.get('/bulk');
    const token = csrfFieldOf(await page.text());
    const post = () => {
      const form = csvForm('email\nalice@nonexistent.test\n');
      form.set('_csrf', token);
      return client.post('/bulk/preview', form);
    };
    for (let attempt = 0; attempt < 100; attempt++) expect((await post()).status).toBe(200);
    const limited = await post();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED' });
    // The other spending forms share the account's count.
    const verify = await client.post('/verify', { _csrf: token, email: 'alice@nonexistent.test' });
    expect(verify.status).toBe(429);
  });

  it('previews counts and cost as JSON without storing or charging anything', async () => {
    const { client, accountId } = await signedIn('preview');
    const response = await client.submit('/bulk', '/bulk/preview', csvForm(csv));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      success: true,
      preview: {
        totalRows: 5,
        totalEmails: 2,
        duplicateCount: 1,
        emptyRows: 1,
        invalidRows: 1,
        skippedRows: 0,
        headers: ['name', 'email'],
        emailColumn: 1,
        creditsRequired: 2,
        creditsAvailable: 100,
      },
    });
    const jobs = await (await accountD1(accountId))
      .prepare('SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?1')
      .bind(accountId)
      .first<{ n: number }>();
    expect(jobs?.n).toBe(0);
    expect(await balanceOf(accountId)).toBe(100);
  });

  it('answers the preview with JSON errors: a bad column (400), no session (401), no token (403)', async () => {
    const { client } = await signedIn('preview-errors');
    const badColumn = await client.submit('/bulk', '/bulk/preview', csvForm(csv, { emailColumn: 'nope' }));
    expect(badColumn.status).toBe(400);
    expect(await badColumn.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    const noToken = await client.post('/bulk/preview', csvForm(csv));
    expect(noToken.status).toBe(403);
    expect(await noToken.json()).toMatchObject({ code: 'CSRF_FAILED' });
    const anonymous = await new CookieClient().post('/bulk/preview', csvForm(csv));
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('without JavaScript the form creates the job and lands on its page; downloads keep the columns', async () => {
    const { client, accountId } = await signedIn('bulk');
    // Only rows that need no verification: the job is complete as soon as it exists.
    const response = await client.submit(
      '/bulk',
      '/bulk',
      csvForm('name,email\nNobody,\nBroken,not an address\n', { name: 'offline list' }),
    );
    expect(response.status).toBe(303);
    const location = response.headers.get('location') ?? '';
    expect(location).toMatch(/^\/jobs\/[0-9a-f-]{36}$/);
    const page = await (await client.get(location)).text();
    expect(page).toContain('offline list');
    expect(page).toContain('data-job-state="completed"');
    expect(page).not.toContain('http-equiv="refresh"');
    expect(page).toMatch(/<section [^>]*data-job-downloads="true">/);

    const download = await client.get(`${location}/results.csv`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toMatch(/^text\/csv/);
    // Named for the list, and marked UTF-8 for Excel (a byte-order mark) unless asked not to.
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="offline-list.csv"');
    const bytes = new Uint8Array(await download.clone().arrayBuffer());
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const plain = new Uint8Array(await (await client.get(`${location}/results.csv?bom=0`)).arrayBuffer());
    expect(plain[0]).toBe('"'.charCodeAt(0));
    const rows = parse(await download.text(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows).toHaveLength(2);
    expect(Object.keys(rows[0] ?? {})).toEqual(
      expect.arrayContaining(['name', 'email', 'rcpt_status', 'rcpt_sub_status', 'rcpt_score']),
    );
    expect(rows.map((row) => [row.name, row.rcpt_status])).toEqual([
      ['Nobody', 'undeliverable'],
      ['Broken', 'undeliverable'],
    ]);

    const json = await client.get(`${location}/results.json`);
    expect(json.status).toBe(200);
    const body = await json.json<{ results: { email: string }[]; originalCsvData: { headers: string[] } }>();
    expect(body.results.map((result) => result.email)).toEqual(['', 'not an address']);
    expect(body.originalCsvData.headers).toEqual(['name', 'email']);
    expect(await balanceOf(accountId)).toBe(100);
  });

  it('refuses a column picked by hand that holds no address, and says which', async () => {
    const { client, accountId } = await signedIn('bulk-wrong-column');
    const preview = await client.submit('/bulk', '/bulk/preview', csvForm(csv, { emailColumn: 'name' }));
    expect(await preview.json()).toMatchObject({ preview: { totalEmails: 0, creditsRequired: 0 } });
    const response = await client.submit('/bulk', '/bulk', csvForm(csv, { emailColumn: 'name' }));
    expect(response.status).toBe(400);
    expect(await response.text()).toContain(
      'The column “name” holds no email addresses: pick the column that does.',
    );
    const jobs = await (await accountD1(accountId))
      .prepare('SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?1')
      .bind(accountId)
      .first<{ n: number }>();
    expect(jobs?.n).toBe(0);
  });

  it('re-renders the form with the reason when a list cannot be taken', async () => {
    const { client } = await signedIn('bulk-bad');
    const empty = await client.submit('/bulk', '/bulk', csvForm('\n\n'));
    expect(empty.status).toBe(400);
    expect(await empty.text()).toContain('The file has no rows.');
    const noFile = await client.submit('/bulk', '/bulk', new FormData());
    expect(noFile.status).toBe(400);
    expect(await noFile.text()).toContain('Choose a CSV file to upload.');
  });
});

describe('job page', () => {
  async function processingJob(accountId: string): Promise<string> {
    // A queue that drops the work keeps the job processing for as long as the test needs.
    const queue = { send: async () => {}, sendBatch: async () => {} } as unknown as Queue<BatchMessage>;
    const created = await createBatchJob({
      db: await dbOfAccount(accountId),
      queue,
      caller: { accountId, apiKeyId: null, mode: 'live', creditBalance: await balanceOf(accountId) },
      upload: await rowsFromCsv(
        new TextEncoder().encode('email\nalice@nonexistent.test\nbob@nonexistent.test\n'),
      ),
      source: 'csv',
      name: 'running list',
      webhookUrl: null,
      maxWaitSeconds: null,
      quotas: quotas(),
      now: Date.now(),
    });
    return created.jobId;
  }

  it('while processing: a no-script refresh, hidden downloads, JSON status, and no results yet', async () => {
    const { client, accountId } = await signedIn('job');
    const jobId = await processingJob(accountId);
    const page = await (await client.get(`/jobs/${jobId}`)).text();
    expect(page).toContain('<noscript><meta http-equiv="refresh" content="2"/></noscript>');
    expect(page).toContain('data-job-state="processing"');
    expect(page).not.toContain('data-job-report');
    expect(page).not.toContain('data-job-downloads');
    expect(page).toMatch(/<progress id="job-progress" max="100" value="0"/);
    // What is left, address by address, and no results yet.
    expect(page).toContain('2 addresses have no final answer yet:');
    expect(page.match(/waiting for its mail server/g)).toHaveLength(2);
    expect(page).toContain('Results so far');
    expect(page).toContain('0 rows');
    // The navigation says where the page is: under Bulk.
    expect(page).toMatch(/<a href="\/bulk" aria-current="page">Bulk<\/a>/);

    const status = await client.get(`/jobs/${jobId}/status`);
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({
      success: true,
      job: { id: jobId, status: 'processing', progress: 0, totalEmails: 2 },
    });

    const early = await client.get(`/jobs/${jobId}/results.csv`);
    expect(early.status).toBe(400);
    expect(early.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await early.text()).toContain('JOB_NOT_COMPLETED');
  });

  it('while processing: the answers so far, and each pending address with its state and retry time', async () => {
    const { client, accountId } = await signedIn('job-running');
    const jobId = await processingJob(accountId);
    const now = Date.now();
    const retryAt = now + 300_000;
    const db = await dbOfAccount(accountId);
    await recordProvisional(
      db,
      jobId,
      [
        {
          ...addressResult(
            0,
            { ...sandboxVerify(checkSyntax('greylisted@x.test'), now), email: 'alice@nonexistent.test' },
            true,
          ),
          retryAt,
        },
      ],
      now,
    );
    await recordResults(
      db,
      jobId,
      [
        addressResult(1, {
          ...sandboxVerify(checkSyntax('deliverable@x.test'), now),
          email: 'bob@nonexistent.test',
        }),
      ],
      now,
    );
    const page = await (await client.get(`/jobs/${jobId}`)).text();
    expect(page).toContain('data-job-state="processing"');
    // A temporary answer is not a verdict yet: one row has one, the other is pending.
    expect(page).toMatch(/data-row-count="deliverable">1</);
    expect(page).toMatch(/data-row-count="unknown">0</);
    expect(statusesOf(page)).toEqual(['deliverable']);
    expect(page).toContain('1 address has no final answer yet:');
    const at = new Date(retryAt).toISOString();
    expect(page).toContain(
      `greylisted, asked again at <time datetime="${at}">${at.slice(0, 10)} ${at.slice(11, 16)} UTC</time>`,
    );
  });

  it('says when a completed job with recheck asks its temporary answers again', async () => {
    const { client, accountId } = await signedIn('job-recheck');
    const jobId = await processingJob(accountId);
    const now = Date.now();
    await (await accountD1(accountId)).prepare('UPDATE jobs SET recheck = 1 WHERE id = ?1').bind(jobId).run();
    const greylisted = {
      ...sandboxVerify(checkSyntax('greylisted@recheck.test'), now),
      email: 'alice@nonexistent.test',
    };
    const accepted = {
      ...sandboxVerify(checkSyntax('deliverable@recheck.test'), now),
      email: 'bob@nonexistent.test',
    };
    const { recheckDueAt } = await recordResults(
      await dbOfAccount(accountId),
      jobId,
      [{ ...addressResult(0, greylisted, true), recheckable: true }, addressResult(1, accepted)],
      now,
      900_000,
    );
    expect(recheckDueAt).toBe(now + 900_000);
    const page = await (await client.get(`/jobs/${jobId}`)).text();
    expect(page).toContain('data-job-state="completed"');
    expect(page).toContain('Temporary answers are asked again at');
    expect(page).toContain(`datetime="${new Date(now + 900_000).toISOString()}"`);
  });

  it('says until when a watched job watches its domains, and what changed', async () => {
    const { client, accountId } = await signedIn('job-watch');
    const domain = `watched-${crypto.randomUUID().slice(0, 8)}.test`;
    const queue = { send: async () => {}, sendBatch: async () => {} } as unknown as Queue<BatchMessage>;
    const now = Date.now();
    const { jobId } = await createBatchJob({
      db: await dbOfAccount(accountId),
      queue,
      caller: { accountId, apiKeyId: null, mode: 'live', creditBalance: await balanceOf(accountId) },
      upload: await rowsFromCsv(new TextEncoder().encode(`email\nalice@${domain}\n`)),
      source: 'csv',
      name: 'watched list',
      webhookUrl: null,
      maxWaitSeconds: null,
      watchDays: 30,
      quotas: quotas(),
      now,
    });
    await factsWorld(
      { kind: 'mx', dnsType: 'MX', mx: [{ host: `mx.${domain}`, preference: 10, ips: ['192.0.2.7'] }] },
      Date.now,
      3600,
    )
      .store()
      .mailRoute(domain);
    await recordResults(
      await dbOfAccount(accountId),
      jobId,
      [
        addressResult(0, {
          ...sandboxVerify(checkSyntax('deliverable@watch.test'), now),
          email: `alice@${domain}`,
        }),
      ],
      now,
    );
    const watching = await (await client.get(`/jobs/${jobId}`)).text();
    expect(watching).toContain('Watched until');
    expect(watching).toContain(`datetime="${new Date(now + 30 * 86_400_000).toISOString()}"`);
    expect(watching).not.toContain('Domain changes');

    // The domain publishes a null MX; its kept route expired, so DNS is asked again.
    await env.DB.prepare('UPDATE domain_facts SET route_expires_at = 0 WHERE domain = ?1').bind(domain).run();
    await factsWorld({ kind: 'null_mx' }, Date.now, 3600).store().mailRoute(domain);
    const deps = settleDepsOf({
      db: await dbOfAccount(accountId),
      queue,
      config: configOf(env),
      inBackground: () => {},
    });
    expect((await watchDomains(deps, Date.now())).rounds).toBe(1);
    const changed = await (await client.get(`/jobs/${jobId}`)).text();
    expect(changed).toContain('<caption>Domain changes</caption>');
    expect(changed).toContain(`<tr data-domain-change="${domain}">`);
    expect(changed).toContain('stopped taking mail');
    expect(changed).toContain(`mx.${domain} → a null MX`);
  });

  /** A job of a test key: the sandbox answers every address at once, so it is completed. */
  async function completedJob(accountId: string, csv: string): Promise<string> {
    const queue = { send: async () => {}, sendBatch: async () => {} } as unknown as Queue<BatchMessage>;
    const created = await createBatchJob({
      db: await dbOfAccount(accountId),
      queue,
      caller: { accountId, apiKeyId: null, mode: 'test', creditBalance: await balanceOf(accountId) },
      upload: await rowsFromCsv(new TextEncoder().encode(csv)),
      source: 'csv',
      name: 'sandbox list',
      webhookUrl: null,
      maxWaitSeconds: null,
      quotas: quotas(),
      now: Date.now(),
    });
    return created.jobId;
  }

  // Sandbox answers by local part; 52 other addresses make the table run to a second page.
  const reportCsv = [
    'name,email',
    'Dee,deliverable@one.test',
    'Dee again,DELIVERABLE@one.test',
    'Una,undeliverable@two.test',
    'Rita,risky@three.test',
    'Cat,catchall@four.test',
    'Uma,unknown@five.test',
    'Under,deliverable@under_score.test',
    'Nobody,',
    ...Array.from({ length: 52 }, (_, index) => `Filler ${index},deliverable@filler${index}.test`),
  ].join('\n');

  const statusesOf = (html: string) =>
    [...html.matchAll(/<tr data-result-status="(\w+)"/g)].map((match) => match[1]);
  const addressesOf = (html: string) =>
    [...html.matchAll(/<td data-label="Address" class="email-cell">([^<]*)</g)].map((match) => match[1]);

  it('when completed: the verdict mix and bounce estimate as pictures, subset downloads with their sizes', async () => {
    const { client, accountId } = await signedIn('job-report');
    const jobId = await completedJob(accountId, reportCsv);
    const status = await (await client.get(`/jobs/${jobId}/status`)).json<{
      job: {
        status: string;
        catchAllCount: number;
        riskyCount: number;
        bounceEstimate: { percent: number; level: string };
      };
    }>();
    expect(status.job).toMatchObject({ status: 'completed', riskyCount: 2, catchAllCount: 1 });

    const page = await (await client.get(`/jobs/${jobId}`)).text();
    expect(page).toContain('data-job-state="completed"');
    expect(page).not.toContain('http-equiv="refresh"');
    // The mix bar: deliverable, undeliverable, the risky rest and the catch-all share, unknown.
    const segments = [...page.matchAll(/<rect class="mix-([\w-]+)"/g)].map((match) => match[1]);
    expect(segments).toEqual(['deliverable', 'undeliverable', 'risky', 'catch-all', 'unknown']);
    // The legend is the same segments: risky counted once, the catch-all share out of it.
    expect(page).toMatch(/<span class="badge badge-risky">risky, other<\/span> 1 row/);
    expect(page).toMatch(/<span class="badge badge-catch-all">catch-all \(risky\)<\/span> 1 row/);
    const { percent, level } = status.job.bounceEstimate;
    expect(page).toContain(`<span class="big-number">${percent}%</span>`);
    expect(page).toContain(`<span class="badge badge-bounce-${level}">${level}</span>`);
    expect(page).toMatch(/<line class="gauge-marker" x1="[\d.]+"/);

    // Each subset: its link carries the API's status list, and its size is the rows it will hold.
    const links = [...page.matchAll(/href="([^"]+)" download="" data-subset="([\w-]+)"/g)].map((match) => [
      match[2],
      match[1]?.replaceAll('&amp;', '&'),
    ]);
    expect(links).toEqual([
      ['deliverable', `/jobs/${jobId}/results.csv?status=deliverable`],
      ['worth-mailing', `/jobs/${jobId}/results.csv?status=deliverable%2Crisky`],
      ['without-undeliverable', `/jobs/${jobId}/results.csv?status=deliverable%2Crisky%2Cunknown`],
      ['all', `/jobs/${jobId}/results.csv`],
    ]);
    for (const [subset, href] of links) {
      const download = await client.get(href ?? '');
      expect(download.status, subset).toBe(200);
      const rows = parse(await download.text(), { columns: true, bom: true }) as Record<string, string>[];
      const allowed = /status=([^&]+)/.exec(href ?? '')?.[1]?.split('%2C');
      for (const row of rows) if (allowed) expect(allowed, subset).toContain(row.rcpt_status);
      const size = new RegExp(`data-subset="${subset}">[^<]*</a><span class="muted">(\\d+) rows`).exec(
        page,
      )?.[1];
      expect(Number(size), subset).toBe(rows.length);
    }
    const all = parse(await (await client.get(`/jobs/${jobId}/results.csv`)).text(), {
      columns: true,
      bom: true,
    }) as Record<string, string>[];
    expect(all).toHaveLength(60);
    // Every count on the page is of the rows the downloads hold: cards, filter and chart.
    for (const verdict of ['deliverable', 'undeliverable', 'risky', 'unknown']) {
      const rows = all.filter((row) => row.rcpt_status === verdict).length;
      expect(new RegExp(`data-row-count="${verdict}">(\\d+)<`).exec(page)?.[1], verdict).toBe(String(rows));
      expect(page, verdict).toContain(`<option value="${verdict}">${verdict} (${rows})</option>`);
    }
    const catchAllRows = all.filter((row) => row.rcpt_status === 'risky' && row.rcpt_is_catch_all === 'true');
    expect(/data-row-count="catch-all">(\d+)</.exec(page)?.[1]).toBe(String(catchAllRows.length));
    const legend = [...page.matchAll(/<\/span> (\d+) rows? <span class="muted">\((\d+)%\)/g)];
    expect(legend.reduce((sum, match) => sum + Number(match[1]), 0)).toBe(60);
    expect(legend.reduce((sum, match) => sum + Number(match[2]), 0)).toBe(100);
    // The estimate is over the rows that hold an address: all but the empty one.
    expect(page).toContain('Based on 59 rows checked');
    const worthMailing = await client.get(`/jobs/${jobId}/results.csv?status=deliverable,risky`);
    expect(worthMailing.headers.get('content-disposition')).toBe(
      'attachment; filename="sandbox-list-deliverable-risky.csv"',
    );
    const kept = parse(await worthMailing.text(), { columns: true, bom: true }) as Record<string, string>[];
    // Upload order, original columns kept, only the statuses asked for.
    expect(kept.map((row) => row.name)).toEqual(
      all.filter((row) => ['deliverable', 'risky'].includes(row.rcpt_status ?? '')).map((row) => row.name),
    );
    expect(kept.slice(0, 4).map((row) => [row.name, row.rcpt_status])).toEqual([
      ['Dee', 'deliverable'],
      ['Dee again', 'deliverable'],
      ['Rita', 'risky'],
      ['Cat', 'risky'],
    ]);
    expect(kept.some((row) => row.rcpt_status === 'undeliverable')).toBe(false);
    const noUndeliverable = parse(
      await (await client.get(`/jobs/${jobId}/results.csv?status=deliverable,risky,unknown`)).text(),
      { columns: true, bom: true },
    ) as Record<string, string>[];
    expect(noUndeliverable).toHaveLength(all.filter((row) => row.rcpt_status !== 'undeliverable').length);

    const malformed = await client.get(`/jobs/${jobId}/results.csv?status=deliverable,maybe`);
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('VALIDATION_ERROR');
  });

  it('filters the results table by status and searches by address with a GET form, 50 rows a page', async () => {
    const { client, accountId } = await signedIn('job-table');
    const jobId = await completedJob(accountId, reportCsv);
    const first = await (await client.get(`/jobs/${jobId}`)).text();
    expect(first).toMatch(/<form method="get" action="\/jobs\/[0-9a-f-]{36}#results"/);
    expect(first).toContain('60 rows');
    expect(statusesOf(first)).toHaveLength(50);
    expect(addressesOf(first).slice(0, 2)).toEqual(['deliverable@one.test', 'DELIVERABLE@one.test']);
    expect(first).toContain('Page 1 of 2');
    expect(first).toContain(`href="/jobs/${jobId}?page=2#results" rel="next"`);
    const second = await (await client.get(`/jobs/${jobId}?page=2`)).text();
    expect(statusesOf(second)).toHaveLength(10);
    expect(addressesOf(second).at(-1)).toBe('deliverable@filler51.test');

    const undeliverable = await (await client.get(`/jobs/${jobId}?status=undeliverable`)).text();
    expect(statusesOf(undeliverable).length).toBeGreaterThanOrEqual(2);
    expect(new Set(statusesOf(undeliverable))).toEqual(new Set(['undeliverable']));
    expect(undeliverable).toContain('<option value="undeliverable" selected="">');
    expect(undeliverable).toMatch(/\d+ rows match/);

    // ASCII case-insensitive, and LIKE's wildcards match only themselves.
    const underscore = await (
      await client.get(`/jobs/${jobId}?q=${encodeURIComponent('UNDER_SCORE')}`)
    ).text();
    expect(addressesOf(underscore)).toEqual(['deliverable@under_score.test']);
    expect(underscore).toContain('value="UNDER_SCORE"');
    for (const wildcard of ['e_a', '%', 'r\\']) {
      const none = await (await client.get(`/jobs/${jobId}?q=${encodeURIComponent(wildcard)}`)).text();
      expect(none, wildcard).toContain('0 rows match');
      expect(none, wildcard).toContain('No row matches this filter.');
    }
    const both = await (await client.get(`/jobs/${jobId}?status=deliverable&q=one.test`)).text();
    expect(addressesOf(both)).toEqual(['deliverable@one.test', 'DELIVERABLE@one.test']);
    // The filtered view downloads as it is shown.
    const href = /href="([^"]+)" download="" data-subset="filtered"/
      .exec(both)?.[1]
      ?.replaceAll('&amp;', '&');
    expect(href).toBe(`/jobs/${jobId}/results.csv?status=deliverable&q=one.test`);
    const download = await client.get(href ?? '');
    expect(download.headers.get('content-disposition')).toBe(
      'attachment; filename="sandbox-list-deliverable-search.csv"',
    );
    const rows = parse(await download.text(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows.map((row) => row.email)).toEqual(['deliverable@one.test', 'DELIVERABLE@one.test']);

    // A hand-edited query string shows everything rather than failing.
    const nonsense = await client.get(`/jobs/${jobId}?status=maybe&page=-2`);
    expect(nonsense.status).toBe(200);
    expect(await nonsense.text()).toContain('60 rows');
  });

  it("is 404 for another account's job, as a page and as JSON", async () => {
    const owner = await signedIn('job-owner');
    const jobId = await processingJob(owner.accountId);
    const other = await signedIn('job-other');
    const page = await other.client.get(`/jobs/${jobId}`);
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const status = await other.client.get(`/jobs/${jobId}/status`);
    expect(status.status).toBe(404);
    expect(await status.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect((await other.client.get(`/jobs/${jobId}/results.json`)).status).toBe(404);
  });

  it('the history lists the batch with a link to its page, and the overview counts its addresses', async () => {
    const { client, accountId } = await signedIn('job-history');
    const jobId = await processingJob(accountId);
    const history = await (await client.get('/history?kind=batch')).text();
    expect(history).toContain(`href="/jobs/${jobId}"`);
    expect(history).toContain('running list');
    const overview = await (await client.get('/')).text();
    expect(overview).toContain('0 single verifications and 2 batch addresses');
    expect(overview).toMatch(/data-testid="credit-balance">\s*98\s*</);
  });
});

describe('history', () => {
  it('pages 25 entries at a time, newest first, and filters by UTC day', async () => {
    const { client, accountId } = await signedIn('history-pages');
    const day = Date.parse('2026-03-10T12:00:00Z');
    // 27 entries, one an hour back from noon on 10 March: 12 that day, 15 on 9 March.
    for (let hour = 0; hour < 27; hour++) {
      await insertVerification(await dbOfAccount(accountId), {
        id: `req_history_${accountId}_${hour}`,
        accountId,
        apiKeyId: null,
        kind: 'single',
        email: `person${hour}@example.com`,
        status: 'deliverable',
        subStatus: 'accepted_email',
        score: 90,
        resultJson: null,
        createdAt: day - hour * 3_600_000,
      });
    }
    const first = await (await client.get('/history')).text();
    expect(first).toContain('27 entries');
    expect(first.match(/<tr data-kind="single">/g)).toHaveLength(25);
    expect(first.indexOf('person0@')).toBeLessThan(first.indexOf('person1@'));
    expect(first).toContain('Page 1 of 2');
    expect(first).toContain('href="/history?page=2" rel="next"');
    const second = await (await client.get('/history?page=2')).text();
    expect(second.match(/<tr data-kind="single">/g)).toHaveLength(2);
    expect(second).toContain('person26@');

    const tenth = await (await client.get('/history?from=2026-03-10&to=2026-03-10')).text();
    expect(tenth).toContain('13 entries'); // 00:00 to 12:00 inclusive
    const ninth = await (await client.get('/history?to=2026-03-09')).text();
    expect(ninth).toContain('14 entries');
    const nonsense = await client.get('/history?from=yesterday&page=-3&status=maybe');
    expect(nonsense.status).toBe(200);
    expect(await nonsense.text()).toContain('27 entries');
  });
});

describe('webhooks', () => {
  it('validates the URL, shows a new secret once, and lists the test delivery', async () => {
    const { client } = await signedIn('webhooks');
    // Nothing to send a test event to, or sign it with, yet: the button says so before a click.
    const testButton = (html: string) => /<button[^>]*>\s*Send test event/.exec(html)?.[0] ?? '';
    const empty = await (await client.get('/webhooks')).text();
    expect(empty).toContain('Save a default URL and create a signing secret first.');
    expect(testButton(empty)).toContain('disabled');
    const bad = await client.submit('/webhooks', '/webhooks/url', { url: 'ftp://example.com/hook' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('webhookUrl must use https.');

    // The fake world's DoH stub is the only HTTP server the tests have: it answers 404 here,
    // which is an answer like any receiver's, shown with its status.
    const hookUrl = `${new URL(env.DOH_URL).origin}/hook`;
    const saved = await client.submit('/webhooks', '/webhooks/url', { url: hookUrl });
    expect(saved.status).toBe(303);
    expect(await (await client.get(saved.headers.get('location') ?? '')).text()).toContain(
      'Webhook URL saved.',
    );

    const created = await client.submit('/webhooks', '/webhooks/secret', {});
    expect(created.status).toBe(200);
    const secret = /value="(whsec_[A-Za-z0-9+/=]+)"/.exec(await created.text())?.[1];
    expect(secret).toBeDefined();
    const later = await (await client.get('/webhooks')).text();
    expect(later).not.toContain(secret);
    expect(later).toContain('A secret is set.');
    expect(later).not.toContain('first.</p>');
    expect(testButton(later)).not.toContain('disabled');

    const unconfirmed = await client.submit('/webhooks', '/webhooks/secret', {});
    expect(unconfirmed.status).toBe(400);

    const test = await client.submit('/webhooks', '/webhooks/test', {});
    expect(test.status).toBe(200);
    const html = await test.text();
    expect(html).toContain('Test event not delivered (HTTP 404). A test event is sent once, never retried.');
    expect(html).toContain('<code>webhook.test</code>');
    const row = /<tr>(?:(?!<\/tr>).)*webhook\.test(?:(?!<\/tr>).)*<\/tr>/.exec(html)?.[0] ?? '';
    const cells = [...row.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((cell) => cell[1]?.replace(/<[^>]+>/g, ''));
    expect(cells.slice(1)).toEqual(['webhook.test', hookUrl, 'failed', '404', '1']);
  });
});

describe('signed-out visitors', () => {
  it.each([
    '/',
    '/keys',
    '/verify',
    '/bulk',
    '/history',
    '/webhooks',
    '/probers',
    '/account',
    '/jobs/00000000-0000-4000-8000-000000000000',
  ])('GET %s goes to the login page', async (path) => {
    const response = await new CookieClient().get(path);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toMatch(/^\/login/);
  });
});

describe('account changes', () => {
  it(`limits the forms that change the account to ${ACCOUNT_CHANGE_LIMITS.perAccount} a minute per account, changing nothing past it`, async () => {
    const { client, accountId } = await signedIn('change-limit');
    const token = csrfFieldOf(await (await client.get('/keys')).text());
    const newKey = (index: number) =>
      client.post('/keys', { _csrf: token, name: `key ${index}`, mode: 'test' });
    const activeKeys = async () =>
      (
        await (
          await accountD1(accountId)
        )
          .prepare('SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?1 AND revoked_at IS NULL')
          .bind(accountId)
          .first<{ n: number }>()
      )?.n;
    const keysBefore = (await activeKeys()) ?? 0;
    for (let index = 0; index < ACCOUNT_CHANGE_LIMITS.perAccount; index++)
      expect((await newKey(index)).status).toBe(201);
    const limited = await newKey(ACCOUNT_CHANGE_LIMITS.perAccount);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(await limited.text()).toContain('Too many attempts');
    // Every form that changes the account shares the count.
    const [keyId] = (
      await (
        await accountD1(accountId)
      )
        .prepare('SELECT id FROM api_keys WHERE account_id = ?1')
        .bind(accountId)
        .all<{ id: string }>()
    ).results.map((row) => row.id);
    for (const [action, fields] of [
      ['/webhooks/url', { url: 'https://hooks.example.com/rcpt' }],
      ['/webhooks/secret', { confirm: 'yes' }],
      ['/account/settings', { recheck: 'true' }],
      [`/keys/${keyId}/revoke`, {}],
    ] as const) {
      expect((await client.post(action, { _csrf: token, ...fields })).status, action).toBe(429);
    }
    const account = await (await accountD1(accountId))
      .prepare(
        'SELECT webhook_url AS url, webhook_secret AS secret, recheck_default AS recheck FROM accounts WHERE id = ?1',
      )
      .bind(accountId)
      .first();
    expect(account).toEqual({ url: null, secret: null, recheck: 0 });
    expect(await activeKeys()).toBe(keysBefore + ACCOUNT_CHANGE_LIMITS.perAccount);
    // Another account has its own count.
    const { client: other } = await signedIn('change-limit-other');
    await createKey(other, 'unaffected', 'test');
  });
});

describe('account settings', () => {
  it('turns the greylist follow-up default on and off with a checkbox', async () => {
    const { client, accountId } = await signedIn('recheck-default');
    const recheckDefault = async () =>
      (
        await (
          await accountD1(accountId)
        )
          .prepare('SELECT recheck_default AS value FROM accounts WHERE id = ?1')
          .bind(accountId)
          .first<{ value: number }>()
      )?.value;
    expect(await (await client.get('/account')).text()).toMatch(
      /<input type="checkbox" name="recheck" value="true"\/?>/,
    );
    const on = await client.submit('/account', '/account/settings', { recheck: 'true' });
    expect(on.status).toBe(303);
    expect(on.headers.get('location')).toBe('/account?settings-saved=1');
    expect(await recheckDefault()).toBe(1);
    const page = await (await client.get('/account?settings-saved=1')).text();
    expect(page).toContain('Settings saved.');
    expect(page).toMatch(/name="recheck" value="true" checked/);
    // An unchecked box is not in the form: the default goes off.
    expect((await client.submit('/account', '/account/settings', {})).status).toBe(303);
    expect(await recheckDefault()).toBe(0);
  });
});
