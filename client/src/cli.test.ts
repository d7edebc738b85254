import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLEANED_CSV, csvAnswer, JOB_ID, job, uploaded } from '../test/job-answers.ts';
import { jsonAnswer, scriptedServer } from '../test/scripted-api.ts';
import { EXIT, main } from './cli.ts';
import { Rcpt, type VerificationResult } from './client.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rcpt-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A client for `main` that talks to `api` and never sleeps between polls. */
function clientOf(api: { fetch: typeof fetch }) {
  return ({ apiKey, baseUrl }: { apiKey: string; baseUrl: string }) =>
    new Rcpt({ apiKey, baseUrl, fetch: api.fetch, sleep: async () => {} });
}

function io(env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      env,
    },
  };
}

describe('rcpt command line', () => {
  it('prints the usage with exit 0 for --help and 2 without a command', async () => {
    const help = io();
    expect(await main(['--help'], help.io)).toBe(EXIT.done);
    expect(help.out.join('')).toContain('Exit codes: 0 done');
    expect(await main([], io().io)).toBe(EXIT.usage);
  });

  it('refuses usage errors with exit 2 and a message, before any request', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['verify', 'a@b.test'], {}, /no API key/],
      [['frobnicate'], { RCPT_API_KEY: 'k' }, /unknown command "frobnicate"/],
      [['verify'], { RCPT_API_KEY: 'k' }, /expected: rcpt verify <email>/],
      [['clean', 'list.csv', '--only', 'valid'], { RCPT_API_KEY: 'k' }, /--only takes safe/],
      [['clean', 'list.csv', '--only', 'safe,risky'], { RCPT_API_KEY: 'k' }, /--only takes safe/],
      [['results', 'job', '--only', 'constructor'], { RCPT_API_KEY: 'k' }, /--only takes safe/],
      [['results'], { RCPT_API_KEY: 'k' }, /expected: rcpt results <job-id>/],
      [['verify', 'a@b.test', '--bogus'], { RCPT_API_KEY: 'k' }, /Unknown option '--bogus'/],
      [['clean', 'list.csv', '--max-wait', '2m'], { RCPT_API_KEY: 'k' }, /--max-wait takes whole seconds/],
      [['clean', 'list.csv', '--max-wait', '90.5'], { RCPT_API_KEY: 'k' }, /--max-wait takes whole seconds/],
      [
        ['verify', 'a@b.test', '--timeout', '2s'],
        { RCPT_API_KEY: 'k' },
        /--timeout takes whole milliseconds/,
      ],
      [['mcp'], {}, /no API key/],
      [['mcp', 'list.csv'], { RCPT_API_KEY: 'k' }, /expected: rcpt mcp/],
      [['mcp'], { RCPT_API_KEY: 'k', RCPT_BASE_URL: 'rcpt.example' }, /base URL must be an http\(s\) URL/],
      [['verify', 'a@b.test', '--base-url', 'ftp://x'], { RCPT_API_KEY: 'k' }, /base URL must be/],
      // The key would cross the network in clear.
      [['mcp'], { RCPT_API_KEY: 'k', RCPT_BASE_URL: 'http://rcpt.example' }, /plain http to another machine/],
      [['verify', 'a@b.test', '--base-url', 'http://10.0.0.7:8787'], { RCPT_API_KEY: 'k' }, /in clear/],
    ];
    for (const [argv, env, message] of cases) {
      const run = io(env);
      expect(await main(argv, run.io)).toBe(EXIT.usage);
      expect(run.err.join('')).toMatch(message);
    }
  });

  it("sends verify --timeout as the call's timeoutMs, and prints the budget's answer", async () => {
    const cut: VerificationResult = {
      email: 'alice@slow.example',
      status: 'unknown',
      subStatus: 'timeout_exceeded',
      reason: "The call's time budget (timeoutMs) ran out before the mail server answered.",
      score: 45,
      isDeliverable: false,
      toxicity: 0,
      checks: {
        syntax: true,
        mxRecords: true,
        smtpValid: null,
        isDisposable: false,
        isRoleBased: false,
        isFreeProvider: false,
        isCatchAll: null,
        hasTypo: null,
      },
      meta: {
        domain: 'slow.example',
        localPart: 'alice',
        mxHost: 'mx.slow.example',
        provider: null,
        dnsType: 'MX',
        verifiedAt: '2026-11-26T10:00:00.000Z',
        processingTimeMs: 2_980,
        verifiedVia: null,
        cached: false,
      },
      riskFactors: [],
    };
    const api = scriptedServer([jsonAnswer(200, { success: true, data: cut, creditsRemaining: 7 })]);
    const run = io({ RCPT_API_KEY: 'k' });
    const client = ({ apiKey, baseUrl }: { apiKey: string; baseUrl: string }) =>
      new Rcpt({ apiKey, baseUrl, fetch: api.fetch });
    const argv = ['verify', 'alice@slow.example', '--timeout', '3000', '--json'];
    expect(await main(argv, { ...run.io, client })).toBe(EXIT.done);
    expect(JSON.parse(api.requests[0]?.body ?? '')).toEqual({ email: 'alice@slow.example', timeoutMs: 3000 });
    expect(JSON.parse(run.out.join(''))).toMatchObject({
      subStatus: 'timeout_exceeded',
      creditsRemaining: 7,
    });
  });

  it('documents in client/README.md exactly the help it prints: every command and option', async () => {
    const help = io();
    await main(['--help'], help.io);
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const block = /<!-- rcpt --help[^>]*-->\n```text\n([\s\S]*?)```/.exec(readme);
    expect(block?.[1]).toBe(help.out.join(''));
  });

  it('says the job id as soon as the list is uploaded, before the wait, and how to fetch it again', async () => {
    const input = join(scratch, 'list.csv');
    writeFileSync(input, 'name,email\r\nAlice,alice@example.com\r\n');
    const run = io({ RCPT_API_KEY: 'k' });
    const errWhenPolled: string[] = [];
    const script = scriptedServer([
      uploaded(),
      jsonAnswer(200, { success: true, job: job({ status: 'processing', progress: 50, completedAt: null }) }),
      jsonAnswer(200, { success: true, job: job() }),
      csvAnswer(),
    ]);
    const api = {
      fetch: (async (request: Request) => {
        if (new URL(request.url).pathname.includes('/bulk/status/')) errWhenPolled.push(run.err.join(''));
        return script.fetch(request);
      }) as typeof fetch,
    };
    const output = join(scratch, 'cleaned.csv');
    expect(await main(['clean', input, '-o', output], { ...run.io, client: clientOf(api) })).toBe(EXIT.done);
    expect(errWhenPolled[0]).toContain(
      `job ${JOB_ID}: 2 addresses, 2 credits charged. Ctrl-C stops waiting, not the job; \`rcpt results ${JOB_ID} -o ${output}\``,
    );
    expect(readFileSync(output, 'utf8')).toBe(CLEANED_CSV);
  });

  it('rcpt results downloads a job again, waiting while it runs, and never uploads (no new charge)', async () => {
    const api = scriptedServer([
      jsonAnswer(200, { success: true, job: job({ status: 'processing', progress: 50, completedAt: null }) }),
      jsonAnswer(200, { success: true, job: job() }),
      csvAnswer(),
    ]);
    const run = io({ RCPT_API_KEY: 'k' });
    const output = join(scratch, 'again.csv');
    const argv = ['results', JOB_ID, '-o', output, '--only', 'safe'];
    expect(await main(argv, { ...run.io, client: clientOf(api) })).toBe(EXIT.done);
    expect(readFileSync(output, 'utf8')).toBe(CLEANED_CSV);
    expect(api.requests.map(({ method, path }) => `${method} ${path}`)).toEqual([
      `GET /api/v1/bulk/status/${JOB_ID}`,
      `GET /api/v1/bulk/status/${JOB_ID}`,
      `GET /api/v1/bulk/results/${JOB_ID}?format=csv&advice=send`,
    ]);
    expect(run.out.join('')).toContain(`wrote ${output} (rows kept: safe)`);
  });

  it('rcpt results of a job that failed exits 4, and of an unknown job 1 with the API code', async () => {
    const failed = scriptedServer([
      jsonAnswer(200, {
        success: true,
        job: job({ status: 'failed', failureReason: 'the list could not be read', completedAt: null }),
      }),
    ]);
    expect(
      await main(['results', JOB_ID], { ...io({ RCPT_API_KEY: 'k' }).io, client: clientOf(failed) }),
    ).toBe(EXIT.jobFailed);
    const unknown = scriptedServer([
      jsonAnswer(404, { success: false, code: 'NOT_FOUND', message: 'No such job.', requestId: 'req-1' }),
    ]);
    const run = io({ RCPT_API_KEY: 'k' });
    expect(await main(['results', JOB_ID], { ...run.io, client: clientOf(unknown) })).toBe(EXIT.apiError);
    expect(run.err.join('')).toContain('NOT_FOUND');
  });
});
