import { describe, expect, it } from 'vitest';
import { EXIT, main } from './cli.ts';

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
    ];
    for (const [argv, env, message] of cases) {
      const run = io(env);
      expect(await main(argv, run.io)).toBe(EXIT.usage);
      expect(run.err.join('')).toMatch(message);
    }
  });
});
