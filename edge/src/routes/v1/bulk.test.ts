import { env } from 'cloudflare:workers';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { balanceOf, call, db, ledgerOf, newCaller } from '../../../test/fixtures.ts';
import { rotateWebhookSecret } from '../../services/webhooks/settings.ts';

interface UploadBody {
  success: boolean;
  jobId: string;
  totalEmails: number;
  duplicateCount: number;
  emptyRows: number;
  invalidRows: number;
  skippedRows: number;
  creditsCharged: number;
  estimatedTimeSeconds: number;
}

interface ResultsBody {
  results: { email: string; status: string; subStatus: string }[];
  originalCsvData: { headers: string[]; rows: string[][] } | null;
  pagination: { offset: number; limit: number; total: number };
}

async function upload(key: string, emails: unknown[]): Promise<Response> {
  return call('/api/v1/bulk/upload', { key, json: { emails } });
}

async function uploadCsv(key: string, csv: string, query = ''): Promise<Response> {
  return call(`/api/v1/bulk/upload${query}`, { key, body: csv, headers: { 'content-type': 'text/csv' } });
}

describe('POST /api/v1/bulk/upload (JSON)', () => {
  it('counts rows, dedupes on the normalised address and charges the unique valid ones', async () => {
    const caller = await newCaller({ credits: 100 });
    const response = await upload(caller.apiKey, [
      'alice@nonexistent.test',
      'alice@NONEXISTENT.test', // same address: the domain is case-insensitive
      'Alice@nonexistent.test', // another address: the local part is case-sensitive
      '',
      'not an address',
      ' bob@nonexistent.test ',
    ]);
    expect(response.status).toBe(200);
    const body = await response.json<UploadBody>();
    expect(body).toMatchObject({
      success: true,
      totalEmails: 3,
      duplicateCount: 1,
      emptyRows: 1,
      invalidRows: 1,
      skippedRows: 0,
      creditsCharged: 3,
    });
    expect(body.jobId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.estimatedTimeSeconds).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(caller.accountId)).toBe(97);
    expect((await ledgerOf(caller.accountId)).at(-1)).toEqual({
      delta: -3,
      reason: 'bulk_charge',
      reference: body.jobId,
    });
  });

  it('402 with required and available when short, and creates nothing', async () => {
    const caller = await newCaller({ credits: 2 });
    const response = await upload(caller.apiKey, ['a@x.test', 'b@x.test', 'c@x.test']);
    expect(response.status).toBe(402);
    expect(await response.json()).toMatchObject({
      code: 'INSUFFICIENT_CREDITS',
      details: { required: 3, available: 2 },
    });
    expect(await balanceOf(caller.accountId)).toBe(2);
    const jobs = await (await call('/api/v1/bulk/jobs', { key: caller.apiKey })).json<{ jobs: unknown[] }>();
    expect(jobs.jobs).toEqual([]);
    expect((await ledgerOf(caller.accountId)).map((row) => row.reason)).toEqual(['signup_grant']);
  });

  it.each([
    ['no emails', [], 'VALIDATION_ERROR'],
    ['10,001 emails', Array.from({ length: 10_001 }, (_, index) => `user${index}@x.test`), 'TOO_MANY_EMAILS'],
    ['a non-string email', ['a@x.test', 42], 'VALIDATION_ERROR'],
    ['a CRLF inside an email', ['a@x.test', 'b@x.test\r\nRCPT TO:<c@x.test>'], 'VALIDATION_ERROR'],
    ['a NUL in an email', ['a\u0000@x.test'], 'VALIDATION_ERROR'],
    ['a trailing line feed', ['a@x.test\n'], 'VALIDATION_ERROR'],
  ])('400 for %s, free of charge', async (_label, emails, code) => {
    const caller = await newCaller({ credits: 5 });
    const response = await upload(caller.apiKey, emails);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code });
    expect(await balanceOf(caller.accountId)).toBe(5);
  });

  it('refuses a webhookUrl while the account has no signing secret, charging nothing', async () => {
    const caller = await newCaller({ credits: 5 });
    const withHook = { emails: ['alice@nonexistent.test'], webhookUrl: 'https://hooks.example.com/rcpt' };
    const refused = await call('/api/v1/bulk/upload', { key: caller.apiKey, json: withHook });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ success: false, code: 'WEBHOOK_SECRET_MISSING' });
    expect(await balanceOf(caller.accountId)).toBe(5);
    const jobs = await (await call('/api/v1/bulk/jobs', { key: caller.apiKey })).json<{ jobs: unknown[] }>();
    expect(jobs.jobs).toEqual([]);

    await rotateWebhookSecret(db(), caller.accountId, env.SECRETS_KEY);
    const accepted = await call('/api/v1/bulk/upload', { key: caller.apiKey, json: withHook });
    expect(accepted.status).toBe(200);
    expect(await balanceOf(caller.accountId)).toBe(4);
  });

  it('refuses an http webhook URL outside loopback', async () => {
    const caller = await newCaller();
    const response = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['a@x.test'], webhookUrl: 'http://example.com/hook' },
    });
    expect(response.status).toBe(400);
    expect(await balanceOf(caller.accountId)).toBe(100);
  });
});

describe('GET /api/v1/bulk/status and results', () => {
  it('404 for an unknown job and for another account’s job; 400 for a malformed id', async () => {
    const owner = await newCaller({ mode: 'test' });
    const stranger = await newCaller({ mode: 'test' });
    const { jobId } = await (await upload(owner.apiKey, ['deliverable@x.test'])).json<UploadBody>();
    for (const path of [`/api/v1/bulk/status/${jobId}`, `/api/v1/bulk/results/${jobId}`]) {
      expect((await call(path, { key: stranger.apiKey })).status).toBe(404);
      expect((await call(path, { key: owner.apiKey })).status).toBe(200);
    }
    expect((await call(`/api/v1/bulk/status/${crypto.randomUUID()}`, { key: owner.apiKey })).status).toBe(
      404,
    );
    const malformed = await call('/api/v1/bulk/status/not-a-uuid', { key: owner.apiKey });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('sandbox jobs complete at once, free, with results in upload order and duplicates at each position', async () => {
    const caller = await newCaller({ mode: 'test', credits: 7 });
    const emails = [
      'undeliverable@x.test',
      'deliverable@x.test',
      'DELIVERABLE@x.test',
      'deliverable@X.TEST',
      'oops',
      'catchall@x.test',
    ];
    const uploaded = await (await upload(caller.apiKey, emails)).json<UploadBody>();
    expect(uploaded.creditsCharged).toBe(0);
    const status = await (await call(`/api/v1/bulk/status/${uploaded.jobId}`, { key: caller.apiKey })).json<{
      job: Record<string, unknown>;
    }>();
    expect(status.job).toMatchObject({
      status: 'completed',
      progress: 100,
      totalEmails: 4,
      processedEmails: 4,
      deliverableCount: 2,
      undeliverableCount: 1,
      riskyCount: 1,
      catchAllCount: 1,
      creditsCharged: 0,
    });
    const results = await (
      await call(`/api/v1/bulk/results/${uploaded.jobId}`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(results.results.map((result) => result.subStatus)).toEqual([
      'mailbox_not_found',
      'accepted_email',
      'accepted_email',
      'accepted_email',
      'invalid_syntax',
      'catch_all',
    ]);
    expect(results.results[3]?.email).toBe('deliverable@X.TEST');
    expect(results.pagination).toEqual({ offset: 0, limit: 10_000, total: 6 });
    expect(await balanceOf(caller.accountId)).toBe(7);

    const page = await (
      await call(`/api/v1/bulk/results/${uploaded.jobId}?offset=2&limit=2`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(page.results.map((result) => result.email)).toEqual(['DELIVERABLE@x.test', 'deliverable@X.TEST']);
  });

  it('keeps only the rows of the asked statuses, in upload order, in JSON and CSV, and refuses unknown ones', async () => {
    const caller = await newCaller({ mode: 'test' });
    const emails = [
      'undeliverable@x.test',
      'deliverable@x.test',
      'oops',
      'risky@x.test',
      'DELIVERABLE@x.test',
    ];
    const { jobId } = await (await upload(caller.apiKey, emails)).json<UploadBody>();

    const kept = await (
      await call(`/api/v1/bulk/results/${jobId}?status=deliverable,risky`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(kept.results.map((result) => [result.email, result.status])).toEqual([
      ['deliverable@x.test', 'deliverable'],
      ['risky@x.test', 'risky'],
      ['DELIVERABLE@x.test', 'deliverable'],
    ]);
    expect(kept.pagination.total).toBe(3);

    // Invalid input rows have no address but a verdict of their own, and are filtered by it.
    const removed = await (
      await call(`/api/v1/bulk/results/${jobId}?status=undeliverable&offset=1&limit=5`, {
        key: caller.apiKey,
      })
    ).json<ResultsBody>();
    expect(removed.results.map((result) => result.email)).toEqual(['oops']);
    expect(removed.pagination).toEqual({ offset: 1, limit: 5, total: 2 });

    const csv = parse(
      await (
        await call(`/api/v1/bulk/results/${jobId}?status=risky&format=csv`, { key: caller.apiKey })
      ).text(),
    ) as string[][];
    expect(csv.map((row) => row.slice(0, 2))).toEqual([
      ['email', 'rcpt_status'],
      ['risky@x.test', 'risky'],
    ]);

    for (const status of ['valid', 'deliverable,', 'deliverable;risky']) {
      const refused = await call(`/api/v1/bulk/results/${jobId}?status=${status}`, { key: caller.apiKey });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
  });

  it('keeps the rows of the asked send advice: send is exactly the subStatuses the table marks send', async () => {
    const caller = await newCaller({ mode: 'test' });
    const emails = [
      'deliverable@x.test', // accepted_email: send
      'catchall@x.test', // catch_all: decide
      'risky@x.test', // mailbox_full: do not send
      'oops', // invalid_syntax: do not send
      'unknown@x.test', // smtp_timeout: decide
      'undeliverable@x.test', // mailbox_not_found: do not send
    ];
    const { jobId } = await (await upload(caller.apiKey, emails)).json<UploadBody>();
    const kept = async (advice: string) =>
      (
        await (
          await call(`/api/v1/bulk/results/${jobId}?advice=${advice}`, { key: caller.apiKey })
        ).json<ResultsBody>()
      ).results.map((result) => `${result.email} ${result.subStatus}`);

    expect(await kept('send')).toEqual(['deliverable@x.test accepted_email']);
    expect(await kept('decide')).toEqual(['catchall@x.test catch_all', 'unknown@x.test smtp_timeout']);
    expect(await kept('do_not_send')).toEqual([
      'risky@x.test mailbox_full',
      'oops invalid_syntax',
      'undeliverable@x.test mailbox_not_found',
    ]);
    expect(await kept('send,decide')).toHaveLength(3);

    const csv = await call(`/api/v1/bulk/results/${jobId}?advice=send&format=csv`, { key: caller.apiKey });
    expect((parse(await csv.text()) as string[][]).map((row) => row[0])).toEqual([
      'email',
      'deliverable@x.test',
    ]);
    expect(csv.headers.get('content-disposition')).toMatch(/-send\.csv"$/);

    for (const advice of ['safe', 'send;decide']) {
      const refused = await call(`/api/v1/bulk/results/${jobId}?advice=${advice}`, { key: caller.apiKey });
      expect(refused.status).toBe(400);
    }
  });
});

describe('CSV upload and download', () => {
  it('detects the header, the delimiter and the email column, and keeps the original columns', async () => {
    const caller = await newCaller({ mode: 'test' });
    const csv =
      '\uFEFFname;Email;note\r\n"Smith; Ann";deliverable@x.test;"multi\nline"\r\nBob;;empty\r\nCarl;=HYPERLINK(x);formula\r\n';
    const response = await uploadCsv(caller.apiKey, csv);
    expect(response.status).toBe(200);
    const uploaded = await response.json<UploadBody>();
    expect(uploaded).toMatchObject({ totalEmails: 1, creditsCharged: 0, emptyRows: 1, invalidRows: 1 });
    const results = await (
      await call(`/api/v1/bulk/results/${uploaded.jobId}`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(results.originalCsvData).toEqual({
      headers: ['name', 'Email', 'note'],
      rows: [
        ['Smith; Ann', 'deliverable@x.test', 'multi\nline'],
        ['Bob', '', 'empty'],
        ['Carl', '=HYPERLINK(x)', 'formula'],
      ],
    });
    expect(results.results.map((result) => result.status)).toEqual([
      'deliverable',
      'undeliverable',
      'undeliverable',
    ]);

    const download = await call(`/api/v1/bulk/results/${uploaded.jobId}?format=csv`, { key: caller.apiKey });
    expect(download.headers.get('content-type')).toMatch(/^text\/csv/);
    const table = parse(await download.text()) as string[][];
    expect(table[0]).toEqual([
      'name',
      'Email',
      'note',
      'rcpt_status',
      'rcpt_sub_status',
      'rcpt_score',
      'rcpt_is_deliverable',
      'rcpt_reason',
      'rcpt_is_catch_all',
      'rcpt_suggestion',
    ]);
    expect(table[1]?.slice(0, 5)).toEqual([
      'Smith; Ann',
      'deliverable@x.test',
      'multi\nline',
      'deliverable',
      'accepted_email',
    ]);
    // A cell a spreadsheet would run as a formula is neutralised.
    expect(table[3]?.[1]).toBe("'=HYPERLINK(x)");
    expect(table).toHaveLength(4);
  });

  it('starts the CSV with a UTF-8 byte-order mark with ?bom=1, for Excel, and names the file after the list', async () => {
    const caller = await newCaller({ mode: 'test' });
    const response = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['deliverable@example.com'], name: 'Kunden München' },
    });
    const { jobId } = await response.json<UploadBody>();
    const csvOf = (query: string) =>
      call(`/api/v1/bulk/results/${jobId}?format=csv${query}`, { key: caller.apiKey });
    const marked = await csvOf('&bom=1');
    expect([...new Uint8Array(await marked.clone().arrayBuffer()).slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(marked.headers.get('content-disposition')).toBe('attachment; filename="kunden-munchen.csv"');
    const plain = new Uint8Array(await (await csvOf('')).arrayBuffer());
    expect(plain[0]).toBe('"'.charCodeAt(0));
    expect((await csvOf('&bom=yes')).status).toBe(400);
  });

  it('answers CSV for Accept: text/csv', async () => {
    const caller = await newCaller({ mode: 'test' });
    const { jobId } = await (await upload(caller.apiKey, ['deliverable@x.test'])).json<UploadBody>();
    const download = await call(`/api/v1/bulk/results/${jobId}`, {
      key: caller.apiKey,
      headers: { accept: 'text/csv' },
    });
    expect(parse(await download.text())).toEqual([
      [
        'email',
        'rcpt_status',
        'rcpt_sub_status',
        'rcpt_score',
        'rcpt_is_deliverable',
        'rcpt_reason',
        'rcpt_is_catch_all',
        'rcpt_suggestion',
      ],
      expect.arrayContaining(['deliverable@x.test', 'deliverable', 'accepted_email']),
    ]);
  });

  it('takes a multipart file with emailColumn by position, tab-delimited, without a header', async () => {
    const caller = await newCaller({ mode: 'test' });
    const form = new FormData();
    form.set(
      'file',
      new File(['x\tdeliverable@x.test\ny\tundeliverable@x.test\n'], 'list.tsv', { type: 'text/csv' }),
    );
    form.set('emailColumn', '1');
    const response = await call('/api/v1/bulk/upload', { key: caller.apiKey, body: form });
    expect(response.status).toBe(200);
    const { jobId } = await response.json<UploadBody>();
    const results = await (
      await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(results.results.map((result) => result.subStatus)).toEqual([
      'accepted_email',
      'mailbox_not_found',
    ]);
    expect(results.originalCsvData?.headers).toEqual(['column_1', 'column_2']);
  });

  it.each([
    ['an unknown column name', 'email\na@x.test\n', '?emailColumn=mail_address', 400, 'VALIDATION_ERROR'],
    ['an unclosed quote', 'email\n"a@x.test\n', '', 400, 'VALIDATION_ERROR'],
    ['an empty file', '\n\n', '', 400, 'VALIDATION_ERROR'],
  ])('400 for %s', async (_label, csv, query, status, code) => {
    const caller = await newCaller({ mode: 'test' });
    const response = await uploadCsv(caller.apiKey, csv, query);
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ code });
  });

  it('413 for a CSV over 10 MB and 415 for another content type', async () => {
    const caller = await newCaller({ mode: 'test' });
    const big = await uploadCsv(caller.apiKey, `email\n${'a@x.test\n'.repeat(1_200_000)}`);
    expect(big.status).toBe(413);
    const xml = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      body: '<emails/>',
      headers: { 'content-type': 'application/xml' },
    });
    expect(xml.status).toBe(415);
  });
});

/** A chunked body (no Content-Length) of `total` bytes made of `chunk` repeated, counting what was read. */
function countedStream(
  prefix: string,
  chunk: string,
  total: number,
): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  const encoder = new TextEncoder();
  const head = encoder.encode(prefix);
  const body = encoder.encode(chunk.repeat(Math.ceil(16_384 / chunk.length)));
  let pulled = 0;
  let started = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = started ? body : head;
      started = true;
      if (pulled >= total) return controller.close();
      pulled += next.byteLength;
      controller.enqueue(next);
    },
  });
  return { stream, pulled: () => pulled };
}

describe('CSV uploads bounded while they stream', () => {
  it('stops reading a one-column bomb at the row limit: 400 TOO_MANY_EMAILS, not the whole body', async () => {
    const caller = await newCaller({ mode: 'test' });
    // 1.4 MB of "a\n": 700,000 rows, which an isolate cannot hold as parsed records.
    const bomb = countedStream('', 'a\n', 1_400_000);
    const response = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      body: bomb.stream,
      headers: { 'content-type': 'text/csv' },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'TOO_MANY_EMAILS', details: { max: 10_000 } });
    expect(bomb.pulled()).toBeLessThan(200_000);
  });

  it('accepts exactly 10,000 data rows under a header and refuses 10,001 without one', async () => {
    // Credits held raise the daily storage budget to what a 10,000-row list needs (docs/money.md).
    const caller = await newCaller({ mode: 'test', credits: 10_000 });
    const rows = Array.from({ length: 10_000 }, (_, index) => `user${index}@x.test`).join('\n');
    const exact = await uploadCsv(caller.apiKey, `email\n${rows}\n`);
    expect(exact.status).toBe(200);
    expect(await exact.json()).toMatchObject({ totalEmails: 10_000 });
    const over = await uploadCsv(caller.apiKey, `${rows}\nlast@x.test\n`);
    expect(over.status).toBe(400);
    expect(await over.json()).toMatchObject({ code: 'TOO_MANY_EMAILS' });
  });

  it('413 for a chunked multipart body past the limit, cut before the rest is read', async () => {
    const caller = await newCaller({ mode: 'test' });
    const boundary = 'rcpt-test-boundary';
    const body = countedStream(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.csv"\r\ncontent-type: text/csv\r\n\r\nemail\r\n`,
      'a@x.test\r\n',
      40 * 1024 * 1024,
    );
    const response = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      body: body.stream,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(body.pulled()).toBeLessThan(12 * 1024 * 1024);
  });

  it('400 for a row of more than 1,000 columns', async () => {
    const caller = await newCaller({ mode: 'test' });
    const response = await uploadCsv(caller.apiKey, `${'a,'.repeat(1_500)}a@x.test\n`);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('400 for more than 1,000,000 cells: 10,000 rows of 1,000 empty cells pass the column check, not this', async () => {
    const caller = await newCaller({ mode: 'test', credits: 10_000 });
    const row = (index: number) => `u${index}@x.test${','.repeat(999)}`;
    const csv = `${Array.from({ length: 10_000 }, (_, index) => row(index)).join('\n')}\n`;
    const response = await uploadCsv(caller.apiKey, csv);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { maxCells: 1_000_000 },
    });
    // 10,000 rows of 100 columns is the most a file may hold, and is accepted.
    const widest = `${Array.from({ length: 10_000 }, (_, index) => `u${index}@x.test${','.repeat(99)}`).join('\n')}\n`;
    expect((await uploadCsv(caller.apiKey, widest)).status).toBe(200);
  });

  it('streams a CSV export of many pages in the upload order', async () => {
    const caller = await newCaller({ mode: 'test' });
    const emails = Array.from({ length: 1_234 }, (_, index) => `deliverable+${index}@x.test`);
    const { jobId } = await (await upload(caller.apiKey, emails)).json<UploadBody>();
    const response = await call(`/api/v1/bulk/results/${jobId}?format=csv`, { key: caller.apiKey });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/csv');
    const records = parse(await response.text()) as string[][];
    expect(records[0]?.[0]).toBe('email');
    expect(records.slice(1).map((record) => record[0])).toEqual(emails);
    expect(records[0]?.[1]).toBe('rcpt_status');
    expect(records.every((record) => record.length === 8)).toBe(true);
    // A page of it, as JSON pagination gives it.
    const page = await call(`/api/v1/bulk/results/${jobId}?format=csv&offset=600&limit=3`, {
      key: caller.apiKey,
    });
    expect((parse(await page.text()) as string[][]).slice(1).map((record) => record[0])).toEqual(
      emails.slice(600, 603),
    );
  });

  it('streams JSON results of many pages: results and original rows aligned, pagination total', async () => {
    const caller = await newCaller({ mode: 'test' });
    const lines = Array.from({ length: 1_234 }, (_, index) => [
      `deliverable+${index}@x.test`,
      `note "${index}", é`,
    ]);
    const csv = `email,note\n${lines.map(([email, note]) => `${email},"${note?.replaceAll('"', '""')}"`).join('\n')}\n`;
    const { jobId } = await (await uploadCsv(caller.apiKey, csv)).json<UploadBody>();
    const response = await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const body = await response.json<ResultsBody & { success: boolean }>();
    expect(body.success).toBe(true);
    expect(body.results.map((result) => result.email)).toEqual(lines.map(([email]) => email));
    expect(body.originalCsvData).toEqual({ headers: ['email', 'note'], rows: lines });
    expect(body.pagination).toEqual({ offset: 0, limit: 10_000, total: 1_234 });
    const page = await (
      await call(`/api/v1/bulk/results/${jobId}?offset=700&limit=2`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(page.originalCsvData?.rows).toEqual(lines.slice(700, 702));
    expect(page.pagination).toEqual({ offset: 700, limit: 2, total: 1_234 });
  });

  it('keeps each row with its own cells however the rows are split into statements', async () => {
    const caller = await newCaller({ mode: 'test' });
    // Invalid rows carry their whole result, so their rows split before their cells do; long
    // notes split the cells by bytes before the row limit.
    const lines = [
      ...Array.from({ length: 1_500 }, (_, index) => [`not-an-address-${index}`, `short ${index}`]),
      ...Array.from({ length: 1_000 }, (_, index) => [
        `deliverable+${index}@x.test`,
        `${index} ${'ü'.repeat(700)}`,
      ]),
    ];
    const csv = `email,note\n${lines.map((line) => line.join(',')).join('\n')}\n`;
    const { jobId } = await (await uploadCsv(caller.apiKey, csv)).json<UploadBody>();
    const body = await (
      await call(`/api/v1/bulk/results/${jobId}`, { key: caller.apiKey })
    ).json<ResultsBody>();
    expect(body.results.map((result) => result.email)).toEqual(lines.map(([email]) => email));
    expect(body.originalCsvData?.rows).toEqual(lines);
  });

  it('refuses a webhook URL with a test key: sandbox jobs send no webhooks', async () => {
    const caller = await newCaller({ mode: 'test' });
    const response = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['deliverable@x.test'], webhookUrl: 'https://hooks.example.com/rcpt' },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
  });
});

describe('GET /api/v1/history', () => {
  it('lists single verifications and batch jobs newest first, each job with its status view', async () => {
    const caller = await newCaller({ mode: 'test' });
    await call('/api/v1/verify', { key: caller.apiKey, json: { email: 'deliverable@x.test' } });
    const jobs: string[] = [];
    for (const emails of [['deliverable@x.test'], ['undeliverable@x.test', 'catchall@x.test']]) {
      jobs.push((await (await upload(caller.apiKey, emails)).json<UploadBody>()).jobId);
    }
    const history = await (await call('/api/v1/history', { key: caller.apiKey })).json<{
      history: {
        kind: string;
        jobId: string | null;
        subStatus: string | null;
        job: { id: string; totalEmails: number } | null;
      }[];
      pagination: { total: number };
    }>();
    expect(history.pagination.total).toBe(3);
    const batches = history.history.filter((entry) => entry.kind === 'batch');
    expect(batches.map((entry) => [entry.jobId, entry.job?.id, entry.job?.totalEmails]).sort()).toEqual(
      [
        [jobs[0], jobs[0], 1],
        [jobs[1], jobs[1], 2],
      ].sort(),
    );
    const single = history.history.find((entry) => entry.kind === 'single');
    expect(single?.subStatus).toBe('accepted_email');
    expect(single && 'job' in single).toBe(false);
    const onlyBatches = await (await call('/api/v1/history?kind=batch', { key: caller.apiKey })).json<{
      history: unknown[];
    }>();
    expect(onlyBatches.history).toHaveLength(2);
  });
});

describe('a JSON upload and the query options the document lists for it', () => {
  const emails = ['alice@nonexistent.test'];
  const uploadWith = (key: string, query: string, body: Record<string, unknown> = {}) =>
    call(`/api/v1/bulk/upload${query}`, { key, json: { emails, ...body } });

  it('honours them: the deadline, the follow-up and the name from the query', async () => {
    const caller = await newCaller({ credits: 10 });
    const response = await uploadWith(
      caller.apiKey,
      '?maxWaitSeconds=45&recheck=true&name=from%20the%20query',
    );
    expect(response.status).toBe(200);
    const { jobId } = await response.json<UploadBody>();
    const { job } = await (await call(`/api/v1/bulk/status/${jobId}`, { key: caller.apiKey })).json<{
      job: { name: string | null; recheck: boolean; createdAt: string; deadlineAt: string };
    }>();
    expect(job).toMatchObject({ name: 'from the query', recheck: true });
    expect(Date.parse(job.deadlineAt) - Date.parse(job.createdAt)).toBe(45_000);
    // Given in both places with the same value: one option.
    const same = await uploadWith(caller.apiKey, '?recheck=true', { recheck: true });
    expect(same.status).toBe(200);
  });

  it('refuses what it cannot honour with a 400, charging nothing', async () => {
    const caller = await newCaller({ credits: 10 });
    const refusals = [
      // Past the documented 2,048 characters.
      await uploadWith(caller.apiKey, `?webhookUrl=https://hooks.example/${'a'.repeat(2_040)}`),
      await uploadWith(caller.apiKey, '?maxWaitSeconds=5'),
      await uploadWith(caller.apiKey, '?emailColumn=email'),
      await uploadWith(caller.apiKey, '?maxWaitSeconds=60', { maxWaitSeconds: 90 }),
    ];
    for (const response of refusals) {
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    }
    expect(await balanceOf(caller.accountId)).toBe(10);
  });
});

describe("the upload's query options on a JSON body, case by case from the OpenAPI document", () => {
  interface QueryParameter {
    name: string;
    in: string;
    schema: { type?: string; enum?: string[]; maxLength?: number; minimum?: number; maximum?: number };
  }

  /** Values the document's schema for a query option refuses, as a fuzzer's negative cases are made. */
  function refusedValues(schema: QueryParameter['schema']): string[] {
    const values: string[] = [];
    if (schema.enum) values.push('not-one-of-them');
    if (schema.maxLength !== undefined) values.push('a'.repeat(schema.maxLength + 1));
    if (schema.minimum !== undefined) values.push(String(schema.minimum - 1));
    if (schema.maximum !== undefined) values.push(String(schema.maximum + 1));
    if (schema.type === 'integer' || schema.type === 'number') values.push('ten');
    return values;
  }

  it('answers every refused value of every documented option with 400, charging nothing', async () => {
    const document = await (await call('/openapi.json')).json<{
      paths: Record<string, { post: { parameters: QueryParameter[] } }>;
    }>();
    const options = document.paths['/api/v1/bulk/upload']?.post.parameters.filter(
      (parameter) => parameter.in === 'query',
    );
    // The options the route declares (CsvOptions): a new one is fuzzed as soon as it is listed.
    expect(options?.map((option) => option.name).sort()).toEqual(
      [
        'emailColumn',
        'evidence',
        'maxWaitSeconds',
        'name',
        'recheck',
        'watch',
        'watchDays',
        'webhookUrl',
      ].sort(),
    );
    const caller = await newCaller({ credits: 10 });
    const cases = (options ?? []).flatMap((option) =>
      refusedValues(option.schema).map((value) => ({ name: option.name, value })),
    );
    // Each option's schema bounds it, so each has refused values.
    expect(new Set(cases.map(({ name }) => name)).size).toBe(options?.length);
    for (const { name, value } of cases) {
      const response = await call(`/api/v1/bulk/upload?${new URLSearchParams({ [name]: value })}`, {
        key: caller.apiKey,
        json: { emails: ['alice@nonexistent.test'] },
      });
      expect({ name, value: value.slice(0, 20), status: response.status }).toEqual({
        name,
        value: value.slice(0, 20),
        status: 400,
      });
      expect(await response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    }
    expect(await balanceOf(caller.accountId)).toBe(10);
  });
});

describe('recheck (greylist follow-up) on upload and as the account default', () => {
  async function recheckOf(key: string, jobId: string): Promise<unknown> {
    const response = await call(`/api/v1/bulk/status/${jobId}`, { key });
    const { job } = await response.json<{ job: { recheck: boolean; recheckedAt: string | null } }>();
    expect(job.recheckedAt).toBeNull();
    return job.recheck;
  }

  it('refuses a value that is not a boolean, in JSON, the query or the form, charging nothing', async () => {
    const caller = await newCaller({ credits: 10 });
    const json = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['alice@nonexistent.test'], recheck: 'yes' },
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    const query = await uploadCsv(caller.apiKey, 'email\nalice@nonexistent.test\n', '?recheck=maybe');
    expect(query.status).toBe(400);
    expect(await query.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    const form = new FormData();
    form.set('file', new Blob(['email\nalice@nonexistent.test\n'], { type: 'text/csv' }), 'list.csv');
    form.set('recheck', '1');
    const multipart = await call('/api/v1/bulk/upload', { key: caller.apiKey, body: form });
    expect(multipart.status).toBe(400);
    expect(await balanceOf(caller.accountId)).toBe(10);
    expect((await ledgerOf(caller.accountId)).filter((entry) => entry.reason === 'bulk_charge')).toEqual([]);
  });

  it('takes recheck from JSON, the query and the form, else from the account setting', async () => {
    const caller = await newCaller({ credits: 10 });
    const account = async () =>
      (
        await (
          await call('/api/v1/account', { key: caller.apiKey })
        ).json<{ account: { settings: unknown } }>()
      ).account.settings;
    expect(await account()).toEqual({ recheck: false, watch: false, sharedFleetFallback: true });
    const jobOf = async (response: Response) => {
      expect(response.status).toBe(200);
      return recheckOf(caller.apiKey, (await response.json<UploadBody>()).jobId);
    };
    expect(await jobOf(await upload(caller.apiKey, ['a@nonexistent.test']))).toBe(false);
    expect(
      await jobOf(
        await call('/api/v1/bulk/upload', {
          key: caller.apiKey,
          json: { emails: ['b@nonexistent.test'], recheck: true },
        }),
      ),
    ).toBe(true);
    expect(await jobOf(await uploadCsv(caller.apiKey, 'email\nc@nonexistent.test\n', '?recheck=true'))).toBe(
      true,
    );
    const form = new FormData();
    form.set('file', new Blob(['email\nd@nonexistent.test\n'], { type: 'text/csv' }), 'list.csv');
    form.set('recheck', 'true');
    expect(await jobOf(await call('/api/v1/bulk/upload', { key: caller.apiKey, body: form }))).toBe(true);

    const bad = await call('/api/v1/account/settings', {
      key: caller.apiKey,
      method: 'PUT',
      json: { recheck: 'on' },
    });
    expect(bad.status).toBe(400);
    const set = await call('/api/v1/account/settings', {
      key: caller.apiKey,
      method: 'PUT',
      json: { recheck: true },
    });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({
      success: true,
      settings: { recheck: true, watch: false, sharedFleetFallback: true },
    });
    expect(await account()).toEqual({ recheck: true, watch: false, sharedFleetFallback: true });
    expect(await jobOf(await upload(caller.apiKey, ['e@nonexistent.test']))).toBe(true);
    expect(
      await jobOf(
        await call('/api/v1/bulk/upload', {
          key: caller.apiKey,
          json: { emails: ['f@nonexistent.test'], recheck: false },
        }),
      ),
    ).toBe(false);
  });
});

describe('watch (watched jobs) on upload and as the account default', () => {
  async function watchDaysOf(key: string, response: Response): Promise<unknown> {
    expect(response.status, await response.clone().text()).toBe(200);
    const { jobId } = await response.json<UploadBody>();
    const status = await call(`/api/v1/bulk/status/${jobId}`, { key });
    const body = await status.json<{ job: { watchDays: number | null }; domainChanges: unknown[] }>();
    expect(body.domainChanges).toEqual([]);
    return body.job.watchDays;
  }

  it('refuses watch that is not a boolean and watchDays out of 1 to 60 or beside watch false, charging nothing', async () => {
    const caller = await newCaller({ credits: 10 });
    const refused = [
      await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['a@nonexistent.test'], watch: 'yes' },
      }),
      await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['a@nonexistent.test'], watchDays: 0 },
      }),
      await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['a@nonexistent.test'], watchDays: 61 },
      }),
      await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['a@nonexistent.test'], watchDays: 1.5 },
      }),
      await call('/api/v1/bulk/upload', {
        key: caller.apiKey,
        json: { emails: ['a@nonexistent.test'], watch: false, watchDays: 10 },
      }),
      await uploadCsv(caller.apiKey, 'email\na@nonexistent.test\n', '?watch=sometimes'),
      await uploadCsv(caller.apiKey, 'email\na@nonexistent.test\n', '?watchDays=90'),
    ];
    for (const response of refused) {
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    }
    expect(await balanceOf(caller.accountId)).toBe(10);
  });

  it('takes watch and watchDays from JSON, the query and the form, else from the account setting', async () => {
    const caller = await newCaller({ credits: 10 });
    const key = caller.apiKey;
    expect(await watchDaysOf(key, await upload(key, ['a@nonexistent.test']))).toBeNull();
    expect(
      await watchDaysOf(
        key,
        await call('/api/v1/bulk/upload', { key, json: { emails: ['b@nonexistent.test'], watch: true } }),
      ),
    ).toBe(30);
    expect(
      await watchDaysOf(
        key,
        await call('/api/v1/bulk/upload', { key, json: { emails: ['c@nonexistent.test'], watchDays: 7 } }),
      ),
    ).toBe(7);
    expect(
      await watchDaysOf(key, await uploadCsv(key, 'email\nd@nonexistent.test\n', '?watch=true&watchDays=60')),
    ).toBe(60);
    const form = new FormData();
    form.set('file', new Blob(['email\ne@nonexistent.test\n'], { type: 'text/csv' }), 'list.csv');
    form.set('watch', 'true');
    expect(await watchDaysOf(key, await call('/api/v1/bulk/upload', { key, body: form }))).toBe(30);

    const set = await call('/api/v1/account/settings', { key, method: 'PUT', json: { watch: true } });
    expect(await set.json()).toEqual({
      success: true,
      settings: { recheck: false, watch: true, sharedFleetFallback: true },
    });
    expect(await watchDaysOf(key, await upload(key, ['f@nonexistent.test']))).toBe(30);
    expect(
      await watchDaysOf(
        key,
        await call('/api/v1/bulk/upload', { key, json: { emails: ['g@nonexistent.test'], watch: false } }),
      ),
    ).toBeNull();
  });
});
