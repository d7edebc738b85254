// `npm run demo` (the `npm start` stack with the fake mail world) when its prober dies: the
// edge keeps serving, the stack says what happened and starts a prober again, and a single call
// gets its real verdict again. The stack runs as a user starts it, in a state folder of its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilValue } from '../test/eventually.ts';
import { DEV_ACCOUNT_ID, freePort, stopProcess } from './stack/local-stack.ts';
import { REPO_ROOT } from './stack/wrangler-cli.ts';

// Hang guards only: starting wrangler and workerd takes minutes on a busy two-core runner.
const START_LIMIT_MS = 240_000;
const RESTART_LIMIT_MS = 120_000;

const stateDir = mkdtempSync(join(tmpdir(), 'rcpt-start-'));
let start: ChildProcess;
let baseUrl: string;
let output = '';

beforeAll(async () => {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  start = spawn(process.execPath, [join(REPO_ROOT, 'scripts', 'start.ts'), '--demo'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      RCPT_STATE_DIR: stateDir,
      RCPT_DEV_CREDITS: '1000',
      // A call made while no prober is linked waits this long for one, not the default 10 s.
      VERIFY_TIMEOUT_MS: '3000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [start.stdout, start.stderr]) {
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
  }
  await untilValue(
    async () => {
      if (start.exitCode !== null) throw new Error(`npm run demo exited with ${start.exitCode}:\n${output}`);
      return output.includes('Ctrl-C stops everything.') ? true : undefined;
    },
    'npm run demo is running',
    START_LIMIT_MS,
    100,
  );
}, START_LIMIT_MS + 10_000);

afterAll(async () => {
  // SIGTERM: the stack stops its edge, prober and mail world, as on Ctrl-C.
  if (start) await stopProcess(start, 'SIGTERM');
  rmSync(stateDir, { recursive: true, force: true });
}, 60_000);

/** The pids of the prober processes the start script runs now. */
function proberPids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        // stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its closing paren.
        const parent = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        return parent === start.pid && command.includes(join('prober', 'src', 'cli.ts')) ? [Number(pid)] : [];
      } catch {
        return []; // gone while listed
      }
    });
}

async function verify(apiKey: string, email: string): Promise<{ status: number; subStatus?: string }> {
  const response = await fetch(`${baseUrl}/api/v1/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ email, fresh: true }),
  });
  const body = (await response.json()) as { data?: { subStatus: string } };
  return { status: response.status, ...(body.data ? { subStatus: body.data.subStatus } : {}) };
}

describe('npm start when its prober exits', () => {
  it(
    'keeps the edge serving, says so, starts a prober again, and answers a single call again',
    async () => {
      const apiKey = /API key\s+(rk_live_\S+)/.exec(output)?.[1] ?? '';
      // The account id, for the operator command that adds credits (README, "Clean a list").
      expect(output).toContain(
        `Account    ${DEV_ACCOUNT_ID}   (more credits: npm run admin -- credits grant`,
      );
      const sample = /"email":"([^"]+)"/.exec(output)?.[1] ?? '';
      expect(apiKey).not.toBe('');
      expect(await verify(apiKey, sample)).toEqual({ status: 200, subStatus: 'accepted_email' });

      const [first, ...others] = proberPids();
      expect(first).toBeDefined();
      expect(others).toEqual([]);
      process.kill(first as number, 'SIGKILL');
      await untilValue(
        async () =>
          output.includes('rcpt: the prober exited (SIGKILL); the edge keeps serving') ? true : undefined,
        'the stack says the prober exited',
        RESTART_LIMIT_MS,
        50,
      );
      // The edge answers while the prober is down (or already back): a complete 200, whatever its verdict.
      expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
      expect((await verify(apiKey, sample)).status).toBe(200);

      // Asked again until a new prober answers it: the real verdict once more.
      await untilValue(
        async () => ((await verify(apiKey, sample)).subStatus === 'accepted_email' ? true : undefined),
        'a single call gets its verdict from the restarted prober',
        RESTART_LIMIT_MS,
        1_000,
      );
      // The hub may hear the new prober's hello just before the stack sees its health turn ready.
      await untilValue(
        async () => (output.includes('rcpt: a prober is linked again.') ? true : undefined),
        'the stack says a prober is linked again',
        RESTART_LIMIT_MS,
        50,
      );
      const restarted = proberPids();
      expect(restarted).toHaveLength(1);
      expect(restarted[0]).not.toBe(first);
      expect(start.exitCode).toBeNull();
    },
    2 * RESTART_LIMIT_MS,
  );
});
