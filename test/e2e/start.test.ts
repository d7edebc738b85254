// `npm start` / `npm run demo` on a port that is already taken: a clear message and exit 2,
// before anything is started (no wrangler, no prober, no mail world left behind).

import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessRun, runNodeScript } from '../node-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
let occupier: Server;
let port: number;

beforeAll(async () => {
  occupier = createServer();
  await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', resolve));
  const address = occupier.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  port = address.port;
});

afterAll(async () => {
  await new Promise((resolve) => occupier?.close(resolve));
});

/** Runs the start script to its end and returns its exit code and output. */
function runStart(args: string[]): Promise<ProcessRun> {
  return runNodeScript(join(ROOT, 'scripts', 'start.ts'), args, {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
  });
}

/** Command lines of running processes that mention the port (a wrangler dev or a prober for it). */
function processesUsingPort(): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')];
      } catch {
        return [];
      }
    })
    .filter((command) => command.includes(`--port ${port}`) || command.includes(`127.0.0.1:${port}`));
}

describe('npm start on a port already in use', () => {
  it.each([[[]], [['--demo']]])('exits 2 with a clear message and starts nothing (args %j)', async (args) => {
    const { code, stdout, stderr } = await runStart(args);
    expect(code).toBe(2);
    expect(stderr).toContain(`rcpt: port ${port} on 127.0.0.1 is already in use`);
    expect(stderr).toContain(`PORT=${port + 1} npm ${args.length ? 'run demo' : 'start'}`);
    expect(stdout).not.toContain('rcpt is running');
    expect(processesUsingPort()).toEqual([]);
  });
});
