// Runs the project's own wrangler with telemetry and network look-ups off.
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
const WRANGLER = join(REPO_ROOT, 'node_modules', '.bin', 'wrangler');

export const QUIET_WRANGLER_ENV = {
  WRANGLER_SEND_METRICS: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_HIDE_BANNER: 'true',
  WRANGLER_SEND_ERROR_REPORTS: 'false',
} as const;

/**
 * A wrangler command (a migration, a few statements) takes seconds, tens on a loaded runner; one
 * still running after this has hung and is killed, so its caller fails saying so instead of
 * waiting without end.
 */
const RUN_LIMIT_MS = 180_000;

const RUN_OPTIONS = {
  cwd: REPO_ROOT,
  env: { ...process.env, ...QUIET_WRANGLER_ENV, CI: 'true' },
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
  timeout: RUN_LIMIT_MS,
  killSignal: 'SIGKILL',
} as const;

function failure(
  args: string[],
  output: { stdout: string; stderr: string; signal?: NodeJS.Signals | null },
): Error {
  const command = `wrangler ${args.slice(0, 3).join(' ')}`;
  if (output.signal === 'SIGKILL')
    return new Error(`${command} was still running after ${RUN_LIMIT_MS / 1000} s and was stopped`);
  return new Error(`${command} failed:\n${output.stderr || output.stdout}`);
}

/** Runs a wrangler command to completion; throws with its output when it fails. */
export function runWrangler(args: string[]): string {
  const result = spawnSync(WRANGLER, args, RUN_OPTIONS);
  if (result.status !== 0) throw failure(args, result);
  return result.stdout;
}

/**
 * runWrangler without blocking the event loop while wrangler works (seconds): for a process
 * that talks to a running edge meanwhile. Blocked, it cannot see the edge close an idle
 * keep-alive connection, and its next request goes out on the closed one and fails.
 */
export async function runWranglerAsync(args: string[]): Promise<string> {
  try {
    return (await promisify(execFile)(WRANGLER, args, RUN_OPTIONS)).stdout;
  } catch (error) {
    throw failure(args, error as { stdout: string; stderr: string; signal: NodeJS.Signals | null });
  }
}

/** Starts a long-running wrangler command (e.g. `dev`) in its own process group. */
export function spawnWrangler(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(WRANGLER, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...QUIET_WRANGLER_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
}
