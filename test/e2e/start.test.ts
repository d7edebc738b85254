// `npm start` / `npm run demo` on a port that is already taken: a clear message and exit 2,
// before anything is started (no wrangler, no prober, no mail world left behind). And the local
// stack itself when a port is taken between its check and wrangler's bind.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLocalStack } from '../../scripts/stack/local-stack.ts';
import { type ProcessRun, runNodeScript } from '../node-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
let occupier: Server;
let port: number;

beforeAll(async () => {
  // It takes the port and hangs up on anyone who calls (the stack asks it for /healthz).
  occupier = createServer((socket) => socket.destroy());
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
  return (
    readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .flatMap((pid) => {
        try {
          return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')];
        } catch {
          return [];
        }
      })
      // Not a longer port that starts with the same digits (another file's stack, running meanwhile).
      .filter((command) => new RegExp(`(--port |127\\.0\\.0\\.1:)${port}(?!\\d)`).test(command))
  );
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

describe('the local stack on a port taken before wrangler binds it', () => {
  it("reads wrangler's refusal and gives up at once on the caller's port, its processes gone", async () => {
    const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-e2e-taken-'));
    try {
      await expect(
        startLocalStack({ port, persistTo, migratedFrom: inject('migratedDatabase'), startProber: false }),
      ).rejects.toThrow(`gave up starting the edge: port ${port} or its inspector's was in use`);
      expect(processesUsingPort()).toEqual([]);
    } finally {
      rmSync(persistTo, { recursive: true, force: true });
    }
  });
});
