// `rcpt mcp` as an MCP client runs it: its own process on stdio, driven by the SDK's Client,
// against the scripted fake of the API served on 127.0.0.1.
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../test/eventually.ts';
import { CLEANED_CSV, csvAnswer, JOB_ID, job, uploaded } from '../test/job-answers.ts';
import {
  jsonAnswer,
  type ScriptedServer,
  type ServedApi,
  scriptedServer,
  serveOverHttp,
} from '../test/scripted-api.ts';
import { STATUSES, type VerificationResult } from './client.ts';

const RCPT_BIN = new URL('../bin/rcpt.js', import.meta.url).pathname;
const API_KEY = 'rk_live_mcp_test_secret_0123456789abcdef';
const alice: VerificationResult = {
  email: 'alice@example.com',
  status: 'deliverable',
  subStatus: 'accepted_email',
  reason: 'The mail server accepted the address.',
  score: 97,
  isDeliverable: true,
  toxicity: 0,
  checks: {
    syntax: true,
    mxRecords: true,
    smtpValid: true,
    isDisposable: false,
    isRoleBased: false,
    isFreeProvider: false,
    isCatchAll: false,
    hasTypo: null,
  },
  meta: {
    domain: 'example.com',
    localPart: 'alice',
    mxHost: 'mx.example.com',
    provider: null,
    dnsType: 'MX',
    verifiedAt: '2026-11-26T10:00:00.000Z',
    processingTimeMs: 412,
    verifiedVia: 'mx',
    cached: false,
  },
  riskFactors: [],
};

function refusal(
  status: number,
  code: string,
  message: string,
  details?: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  return jsonAnswer(status, { success: false, code, message, requestId: `req-${code}`, details }, headers);
}

let api: ScriptedServer = scriptedServer([]);
let served: ServedApi;
let scratch: string;
let transport: StdioClientTransport;
let client: Client;
let stderr = '';
const protocolErrors: Error[] = [];

beforeAll(async () => {
  served = await serveOverHttp((request) => api.fetch(request));
  scratch = realpathSync(mkdtempSync(join(tmpdir(), 'rcpt-mcp-')));
  transport = new StdioClientTransport({
    command: process.execPath,
    args: [RCPT_BIN, 'mcp'],
    env: { RCPT_API_KEY: API_KEY, RCPT_BASE_URL: served.baseUrl },
    cwd: scratch,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  client = new Client({ name: 'rcpt-mcp-test', version: '1.0.0' });
  client.onerror = (error) => protocolErrors.push(error);
  await client.connect(transport);
}, 60_000);

afterEach(() => {
  expect(served.problems.splice(0)).toEqual([]);
  expect(api.unanswered).toBe(0);
});

afterAll(async () => {
  await client?.close();
  await served?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Calls a tool with a fresh script of the API's answers. */
async function call(
  name: string,
  args: Record<string, unknown>,
  answers: (Response | Error)[],
  onprogress?: (progress: Progress) => void,
): Promise<CallToolResult> {
  api = scriptedServer(answers);
  return (await client.callTool({ name, arguments: args }, undefined, { onprogress })) as CallToolResult;
}

function textOf(result: CallToolResult): string {
  const [first] = result.content;
  return first?.type === 'text' ? first.text : '';
}

describe('rcpt mcp', { timeout: 30_000 }, () => {
  it('lists verify_email, clean_csv and get_job with their input schemas', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual(['clean_csv', 'get_job', 'verify_email']);

    const verify = byName.get('verify_email')!;
    expect(verify.inputSchema.required).toEqual(['email']);
    // The time budget's bounds are the API's own (client/openapi.json).
    const document = JSON.parse(readFileSync(new URL('../openapi.json', import.meta.url), 'utf8'));
    const budget = document.components.schemas.VerifyRequest.properties.timeoutMs;
    expect(verify.inputSchema.properties).toMatchObject({
      email: { type: 'string' },
      fresh: { type: 'boolean' },
      timeoutMs: { type: 'integer', minimum: budget.minimum, maximum: budget.maximum },
      evidence: { type: 'boolean' },
    });

    const clean = byName.get('clean_csv')!;
    expect(clean.inputSchema.required).toEqual(['path']);
    expect(Object.keys(clean.inputSchema.properties ?? {}).sort()).toEqual(
      ['advice', 'emailColumn', 'maxWaitSeconds', 'only', 'output', 'overwrite', 'path', 'recheck'].sort(),
    );
    // The deadline's bounds are the API's own (client/openapi.json), so a model is told the truth.
    const upload = JSON.parse(readFileSync(new URL('../openapi.json', import.meta.url), 'utf8'));
    const { minimum, maximum } = upload.components.schemas.BulkUploadRequest.properties.maxWaitSeconds;
    expect(clean.inputSchema.properties).toMatchObject({
      only: { type: 'array', items: { enum: [...STATUSES] } },
      advice: { type: 'array', items: { enum: ['send', 'decide', 'do_not_send'] } },
      maxWaitSeconds: { type: 'integer', minimum, maximum },
      recheck: { type: 'boolean' },
    });

    const getJob = byName.get('get_job')!;
    expect(getJob.inputSchema.required).toEqual(['jobId']);
    expect(getJob.annotations?.readOnlyHint).toBe(true);
    expect(verify.annotations?.readOnlyHint).toBe(false);
    for (const tool of tools) expect(tool.description?.length).toBeGreaterThan(40);
  });

  it('verify_email answers the API verdict, sent with the configured key to the configured API', async () => {
    const result = await call('verify_email', { email: 'alice@example.com', fresh: true }, [
      jsonAnswer(200, { success: true, data: alice, creditsRemaining: 41 }),
    ]);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ ...alice, creditsRemaining: 41 });
    expect(JSON.parse(textOf(result))).toEqual({ ...alice, creditsRemaining: 41 });

    expect(api.requests).toHaveLength(1);
    const [sent] = api.requests;
    expect(sent).toMatchObject({ method: 'POST', path: '/api/v1/verify', apiKey: API_KEY });
    expect(sent?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(sent?.body ?? '')).toEqual({ email: 'alice@example.com', fresh: true });
  });

  it('verify_email passes a time budget and the evidence request on to the API', async () => {
    const result = await call(
      'verify_email',
      { email: 'alice@example.com', timeoutMs: 5_000, evidence: true },
      [jsonAnswer(200, { success: true, data: alice, creditsRemaining: 40 })],
    );
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(api.requests[0]?.body ?? '')).toEqual({
      email: 'alice@example.com',
      timeoutMs: 5_000,
      evidence: true,
    });
    // Outside the API's bounds: refused by the tool, nothing sent.
    const refused = await call('verify_email', { email: 'alice@example.com', timeoutMs: 500 }, []);
    expect(refused.isError).toBe(true);
    expect(api.requests).toHaveLength(0);
  });

  it('answers API refusals as tool errors with their code, and goes on serving', async () => {
    writeFileSync(join(scratch, 'queued.csv'), 'email\r\nalice@example.com\r\n');
    const cases: [string, Record<string, unknown>, Response[], string][] = [
      [
        'verify_email',
        { email: 'alice@example.com' },
        [refusal(402, 'INSUFFICIENT_CREDITS', 'Not enough credits for this request.')],
        'INSUFFICIENT_CREDITS',
      ],
      [
        'get_job',
        { jobId: JOB_ID },
        [refusal(401, 'INVALID_API_KEY', 'The API key is invalid or has been revoked.')],
        'INVALID_API_KEY',
      ],
      [
        'get_job',
        { jobId: 'job-7' },
        [refusal(400, 'VALIDATION_ERROR', 'The request is malformed or a field is invalid.')],
        'VALIDATION_ERROR',
      ],
      [
        'clean_csv',
        { path: 'queued.csv' },
        [
          refusal(
            429,
            'QUOTA_EXCEEDED',
            'At most 10 lists can be in progress at once, and 10 are; upload this one when one of them completes.',
            { quota: 'jobs_in_flight', limit: 10, used: 10, requested: 1, resetAt: null },
          ),
        ],
        'QUOTA_EXCEEDED',
      ],
      [
        'verify_email',
        { email: 'alice@example.com' },
        // The per-minute limit is waited out (Retry-After) and retried; past the client's five
        // retries the sixth refusal is the tool's answer.
        Array.from({ length: 6 }, () =>
          refusal(429, 'RATE_LIMITED', 'Too many requests; retry after the time in Retry-After.', undefined, {
            'retry-after': '0',
          }),
        ),
        'RATE_LIMITED',
      ],
    ];
    for (const [tool, args, answers, code] of cases) {
      const sent = answers.length;
      const result = await call(tool, args, answers);
      expect(result.isError, `${tool} → ${code}`).toBe(true);
      expect(textOf(result)).toMatch(new RegExp(`^${code}: .+ \\(HTTP \\d{3}, request req-${code}\\)$`));
      expect(result.structuredContent).toMatchObject({ error: { code, requestId: `req-${code}` } });
      expect(api.requests).toHaveLength(sent);
    }

    const mistyped = await call('verify_email', { email: 42 }, []);
    expect(mistyped.isError).toBe(true);
    expect(textOf(mistyped)).toMatch(/Invalid arguments for tool verify_email/);
    expect(api.requests).toHaveLength(0);

    const after = await call('verify_email', { email: 'alice@example.com' }, [
      jsonAnswer(200, { success: true, data: alice, creditsRemaining: 40 }),
    ]);
    expect(after.isError).toBeFalsy();
    expect(after.structuredContent).toMatchObject({ status: 'deliverable', creditsRemaining: 40 });
  });

  it('clean_csv uploads the file, notifies progress, writes the cleaned CSV where asked and sums it up', async () => {
    const list =
      'name,email\r\nAlice,alice@example.com\r\nBob,nobody@example.org\r\nAlice again,alice@example.com\r\n';
    writeFileSync(join(scratch, 'list.csv'), list);
    const progress: Progress[] = [];
    const result = await call(
      'clean_csv',
      {
        path: 'list.csv',
        output: 'send.csv',
        emailColumn: 'email',
        only: ['deliverable', 'risky'],
        advice: ['send', 'decide'],
        maxWaitSeconds: 600,
        recheck: true,
      },
      [
        uploaded(),
        // Two polls see the same address done: MCP progress must increase, so one notification.
        ...[1, 2].map(() =>
          jsonAnswer(200, {
            success: true,
            job: job({
              status: 'processing',
              progress: 50,
              processedEmails: 1,
              undeliverableCount: 0,
              completedAt: null,
              bounceEstimate: null,
              nextRecheckAt: null,
            }),
            domainChanges: [],
          }),
        ),
        jsonAnswer(200, { success: true, job: job(), domainChanges: [] }),
        csvAnswer(),
      ],
      (update) => progress.push(update),
    );

    expect(result.isError, textOf(result)).toBeFalsy();
    expect(readFileSync(join(scratch, 'send.csv'), 'utf8')).toBe(CLEANED_CSV);
    expect(result.structuredContent).toEqual({
      jobId: JOB_ID,
      output: join(scratch, 'send.csv'),
      only: ['deliverable', 'risky'],
      advice: ['send', 'decide'],
      totalEmails: 2,
      duplicateCount: 1,
      invalidRows: 0,
      emptyRows: 0,
      deliverable: 1,
      risky: 0,
      unknown: 0,
      undeliverable: 1,
      creditsCharged: 2,
      creditsRefunded: 0,
    });
    expect(progress.map(({ progress, total }) => ({ progress, total }))).toEqual([
      { progress: 1, total: 2 },
      { progress: 2, total: 2 },
    ]);
    expect(progress[1]?.message).toMatch(/^completed\s+100%/);

    expect(api.requests.map(({ method, path }) => `${method} ${path}`)).toEqual([
      'POST /api/v1/bulk/upload',
      `GET /api/v1/bulk/status/${JOB_ID}`,
      `GET /api/v1/bulk/status/${JOB_ID}`,
      `GET /api/v1/bulk/status/${JOB_ID}`,
      `GET /api/v1/bulk/results/${JOB_ID}?format=csv&status=deliverable%2Crisky&advice=send%2Cdecide`,
    ]);
    const [upload] = api.requests;
    const form = await new Response(upload?.body, {
      headers: { 'content-type': upload?.contentType ?? '' },
    }).formData();
    const file = form.get('file') as File;
    expect(file.name).toBe('list.csv');
    expect(await file.text()).toBe(list);
    expect(
      Object.fromEntries(
        ['emailColumn', 'name', 'maxWaitSeconds', 'recheck'].map((field) => [field, form.get(field)]),
      ),
    ).toEqual({ emailColumn: 'email', name: 'list.csv', maxWaitSeconds: '600', recheck: 'true' });
  });

  it('clean_csv writes beside the input by default, and reports what it cannot do as tool errors', async () => {
    const input = join(scratch, 'customers.csv');
    writeFileSync(input, 'email\r\nalice@example.com\r\n');
    const written = await call('clean_csv', { path: input }, [
      uploaded(),
      jsonAnswer(200, { success: true, job: job(), domainChanges: [] }),
      csvAnswer(),
    ]);
    expect(written.isError, textOf(written)).toBeFalsy();
    expect(written.structuredContent).toMatchObject({
      output: join(scratch, 'customers.cleaned.csv'),
      only: null,
      advice: null,
    });
    expect(readFileSync(join(scratch, 'customers.cleaned.csv'), 'utf8')).toBe(CLEANED_CSV);

    const missing = await call('clean_csv', { path: 'no-such-list.csv' }, []);
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toMatchObject({ error: { code: 'INVALID_INPUT' } });
    expect(textOf(missing)).toContain('no-such-list.csv');

    const overwrite = await call('clean_csv', { path: input, output: 'customers.csv' }, []);
    expect(overwrite.isError).toBe(true);
    expect(textOf(overwrite)).toMatch(/output must not be the input file/);

    const failed = await call('clean_csv', { path: input, overwrite: true }, [
      uploaded(),
      jsonAnswer(200, {
        success: true,
        job: job({ status: 'failed', failureReason: 'the list could not be read', completedAt: null }),
        domainChanges: [],
      }),
    ]);
    expect(failed.isError).toBe(true);
    expect(failed.structuredContent).toMatchObject({
      error: { code: 'JOB_FAILED', job: { id: JOB_ID, failureReason: 'the list could not be read' } },
    });
  });

  it('clean_csv reads and writes only .csv files under its root, never through a link out, never over a file unasked', async () => {
    const outside = realpathSync(mkdtempSync(join(tmpdir(), 'rcpt-mcp-outside-')));
    try {
      writeFileSync(join(outside, 'secret.csv'), 'email\r\nceo@example.com\r\n');
      writeFileSync(join(scratch, 'notes.txt'), 'email\r\nalice@example.com\r\n');
      writeFileSync(join(scratch, 'kept.csv'), 'email\r\nalice@example.com\r\n');
      writeFileSync(join(scratch, 'kept.cleaned.csv'), 'mine\r\n');
      symlinkSync(join(outside, 'secret.csv'), join(scratch, 'linked-in.csv'));
      symlinkSync(join(outside, 'secret.csv'), join(scratch, 'linked-out.csv'));
      symlinkSync(outside, join(scratch, 'elsewhere'));

      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ path: '../../etc/passwd' }, /is outside the folder/],
        [{ path: '/etc/passwd' }, /is outside the folder/],
        [{ path: '~/.bashrc' }, /"~" is not expanded/],
        [{ path: '../../../../tmp/x.csv' }, /is outside the folder/],
        [{ path: 'notes.txt' }, /\.csv files only/],
        [{ path: 'linked-in.csv' }, /leads out of the folder/],
        [{ path: 'elsewhere/secret.csv' }, /leads out of the folder/],
        [{ path: 'kept.csv', output: '../escape.csv' }, /is outside the folder/],
        [{ path: 'kept.csv', output: 'kept.cleaned.txt' }, /\.csv files only/],
        [{ path: 'kept.csv', output: 'linked-out.csv', overwrite: true }, /is a symlink/],
        [{ path: 'kept.csv', output: 'elsewhere/new.csv' }, /folder that leads out of/],
        [{ path: 'kept.csv' }, /kept\.cleaned\.csv exists; pass overwrite: true/],
      ];
      for (const [args, message] of refusals) {
        const refused = await call('clean_csv', args, []);
        expect(refused.isError, JSON.stringify(args)).toBe(true);
        expect(refused.structuredContent, JSON.stringify(args)).toMatchObject({
          error: { code: 'INVALID_INPUT' },
        });
        expect(textOf(refused), JSON.stringify(args)).toMatch(message);
        // Refused before the upload: nothing sent, nothing charged.
        expect(api.requests, JSON.stringify(args)).toHaveLength(0);
      }
      expect(readFileSync(join(outside, 'secret.csv'), 'utf8')).toBe('email\r\nceo@example.com\r\n');
      expect(readFileSync(join(scratch, 'kept.cleaned.csv'), 'utf8')).toBe('mine\r\n');

      const replaced = await call('clean_csv', { path: 'kept.csv', overwrite: true }, [
        uploaded(),
        jsonAnswer(200, { success: true, job: job(), domainChanges: [] }),
        csvAnswer(),
      ]);
      expect(replaced.isError, textOf(replaced)).toBeFalsy();
      expect(readFileSync(join(scratch, 'kept.cleaned.csv'), 'utf8')).toBe(CLEANED_CSV);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('rcpt mcp --root confines clean_csv to that folder, whatever the working directory', async () => {
    const jail = join(scratch, 'jail');
    mkdirSync(jail);
    writeFileSync(join(jail, 'inner.csv'), 'email\r\nalice@example.com\r\n');
    writeFileSync(join(scratch, 'beside.csv'), 'email\r\nalice@example.com\r\n');
    const confined = new Client({ name: 'rcpt-mcp-test-root', version: '1.0.0' });
    await confined.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [RCPT_BIN, 'mcp', '--root', 'jail'],
        env: { RCPT_API_KEY: API_KEY, RCPT_BASE_URL: served.baseUrl },
        cwd: scratch,
        stderr: 'ignore',
      }),
    );
    try {
      api = scriptedServer([]);
      const beside = (await confined.callTool({
        name: 'clean_csv',
        arguments: { path: '../beside.csv' },
      })) as CallToolResult;
      expect(textOf(beside)).toMatch(/is outside the folder/);
      const absolute = (await confined.callTool({
        name: 'clean_csv',
        arguments: { path: join(scratch, 'beside.csv') },
      })) as CallToolResult;
      expect(textOf(absolute)).toMatch(/is outside the folder/);
      expect(api.requests).toHaveLength(0);

      api = scriptedServer([
        uploaded(),
        jsonAnswer(200, { success: true, job: job(), domainChanges: [] }),
        csvAnswer(),
      ]);
      const inner = (await confined.callTool({
        name: 'clean_csv',
        arguments: { path: 'inner.csv' },
      })) as CallToolResult;
      expect(inner.isError, textOf(inner)).toBeFalsy();
      expect(inner.structuredContent).toMatchObject({ output: join(jail, 'inner.cleaned.csv') });
      expect(readFileSync(join(jail, 'inner.cleaned.csv'), 'utf8')).toBe(CLEANED_CSV);
    } finally {
      await confined.close();
    }
  });

  it('get_job answers the job with its status and counts', async () => {
    const running = job({ status: 'processing', progress: 50, processedEmails: 1, completedAt: null });
    const result = await call('get_job', { jobId: JOB_ID }, [
      jsonAnswer(200, { success: true, job: running, domainChanges: [] }),
    ]);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual(running);
    expect(api.requests.map(({ method, path }) => `${method} ${path}`)).toEqual([
      `GET /api/v1/bulk/status/${JOB_ID}`,
    ]);
  });

  it('stops when the client closes its stdin, having written only the protocol to stdout and never the key', async () => {
    await client.close();
    await until(
      () => stderr.includes('rcpt mcp: stdin closed, stopped'),
      'the server logged its stop',
      20_000,
    );
    expect(stderr).toContain(`rcpt mcp: serving on stdio for ${served.baseUrl}`);
    expect(stderr).toContain('INSUFFICIENT_CREDITS');
    expect(stderr).not.toContain(API_KEY);
    expect(protocolErrors).toEqual([]);
  });
});
