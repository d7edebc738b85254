import { describe, expect, it } from 'vitest';
import { jsonAnswer, scriptedServer } from '../test/scripted-api.ts';
import { EXIT, main } from './cli.ts';
import { Rcpt, type VerificationResult } from './client.ts';

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
      [['clean', 'list.csv', '--only', 'valid'], { RCPT_API_KEY: 'k' }, /--only takes statuses/],
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
});
